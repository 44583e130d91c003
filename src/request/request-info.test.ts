import { describe, it, expect } from 'vitest';
import { parseRequestInfo } from './request-info.js';

const q = (s = '') => new URLSearchParams(s);

describe('parseRequestInfo', () => {
  it('core namespaced get and list', () => {
    const g = parseRequestInfo('GET', '/api/v1/namespaces/ns1/pods/p1', q());
    expect(g).toMatchObject({ isResourceRequest: true, verb: 'get', apiGroup: '', apiVersion: 'v1', namespace: 'ns1', resource: 'pods', name: 'p1' });
    const l = parseRequestInfo('GET', '/api/v1/namespaces/ns1/pods', q());
    expect(l).toMatchObject({ verb: 'list', namespace: 'ns1', resource: 'pods', name: '' });
  });
  it('all-namespaces list and cluster-scoped', () => {
    expect(parseRequestInfo('GET', '/apis/apps/v1/deployments', q())).toMatchObject({ verb: 'list', apiGroup: 'apps', resource: 'deployments', namespace: '' });
    expect(parseRequestInfo('GET', '/api/v1/nodes/n1', q())).toMatchObject({ verb: 'get', resource: 'nodes', name: 'n1' });
  });
  it('namespace itself and its subresources', () => {
    expect(parseRequestInfo('GET', '/api/v1/namespaces/ns1', q())).toMatchObject({ resource: 'namespaces', name: 'ns1', namespace: 'ns1' });
    expect(parseRequestInfo('PUT', '/api/v1/namespaces/ns1/finalize', q())).toMatchObject({ verb: 'update', resource: 'namespaces', name: 'ns1', subresource: 'finalize' });
    expect(parseRequestInfo('GET', '/api/v1/namespaces', q())).toMatchObject({ verb: 'list', resource: 'namespaces' });
  });
  it('subresources', () => {
    expect(parseRequestInfo('PUT', '/apis/apps/v1/namespaces/a/deployments/d/scale', q())).toMatchObject({ verb: 'update', resource: 'deployments', name: 'd', subresource: 'scale' });
  });
  it('watch forms', () => {
    expect(parseRequestInfo('GET', '/api/v1/watch/namespaces/a/configmaps', q())).toMatchObject({ verb: 'watch', legacyWatch: true, resource: 'configmaps', namespace: 'a' });
    expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps', q('watch=1'))).toMatchObject({ verb: 'watch' });
    expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps', q('watch=true&fieldSelector=metadata.name%3Dx'))).toMatchObject({ verb: 'watch', name: 'x' });
  });
  it('write verbs', () => {
    expect(parseRequestInfo('POST', '/api/v1/namespaces/a/configmaps', q()).verb).toBe('create');
    expect(parseRequestInfo('DELETE', '/api/v1/namespaces/a/configmaps', q()).verb).toBe('deletecollection');
    expect(parseRequestInfo('DELETE', '/api/v1/namespaces/a/configmaps/x', q()).verb).toBe('delete');
    expect(parseRequestInfo('PATCH', '/api/v1/namespaces/a/configmaps/x', q()).verb).toBe('patch');
  });
  it('discovery paths are not resource requests', () => {
    for (const p of ['/api', '/api/v1', '/apis', '/apis/apps', '/apis/apps/v1', '/healthz', '/version']) {
      expect(parseRequestInfo('GET', p, q()).isResourceRequest).toBe(false);
    }
  });
});
