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
  it('a named GET stays get whatever ?watch says; only false/0 (any case) turn a watch off', () => {
    expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps/x', q('watch=1'))).toMatchObject({ verb: 'get', name: 'x' });
    expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps/x', q('watch=true')).verb).toBe('get');
    for (const v of ['abc', '', 'yes', 'TRUE']) expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps', q(`watch=${v}`)).verb).toBe('watch');
    for (const v of ['false', 'FALSE', 'False', '0']) expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps', q(`watch=${v}`)).verb).toBe('list');
    expect(parseRequestInfo('GET', '/api/v1/watch/namespaces/a/configmaps/x', q())).toMatchObject({ verb: 'watch', name: 'x', legacyWatch: true });
  });
  it('a metadata.name field selector names the object for list and watch, when the options parse', () => {
    expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps', q('fieldSelector=metadata.name%3Dx'))).toMatchObject({ verb: 'list', name: 'x' });
    expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps', q('watch=1&fieldSelector=status.phase%3DRunning,metadata.name%3D%3Dx')).name).toBe('x');
    expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps', q('watch=1&fieldSelector=metadata.name!%3Dx')).name).toBe('');
    expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps', q('watch=1&limit=abc&fieldSelector=metadata.name%3Dx'))).toMatchObject({ verb: 'watch', name: '' });
    expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps', q('watch=1&labelSelector=-bad&fieldSelector=metadata.name%3Dx')).name).toBe('');
    expect(parseRequestInfo('GET', '/api/v1/namespaces/a/configmaps', q('fieldSelector=metadata.name%3D..')).name).toBe('');
    // the /watch/ path form does not read the query for a name
    expect(parseRequestInfo('GET', '/api/v1/watch/namespaces/a/configmaps', q('fieldSelector=metadata.name%3Dx')).name).toBe('');
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
