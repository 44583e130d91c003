import { describe, it, expect } from 'vitest';
import { AdmissionChain, AdmissionPlugin, type Attributes } from '../admission/plugin.js';
import { connectAdmission, deleteAdmission, writeAdmission } from './admission.js';

class Probe extends AdmissionPlugin {
  readonly name = 'Probe';
  seen: Array<[string, Attributes]> = [];
  handles(): boolean {
    return true;
  }
  override admit(a: Attributes): void {
    this.seen.push(['admit', { ...a }]);
    (a.auditAnnotations ??= {})['probe.example.com/admitted'] = a.operation;
    a.warnings?.push(`probe saw ${a.operation}`);
  }
  override validate(a: Attributes): void {
    this.seen.push(['validate', { ...a }]);
  }
}

const podsInfo: any = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, subresources: [] };
const alice = { name: 'alice', uid: 'u1', groups: ['dev', 'system:authenticated'] };

function context(query = '', subresource = '') {
  const probe = new Probe({ get: () => undefined, list: () => [] });
  const annotations: Record<string, string> = {};
  const req: any = { query: new URLSearchParams(query), user: alice, warnings: undefined, audit: { annotate: (k: string, v: string) => (annotations[k] = v) } };
  const c: any = {
    req,
    info: { namespace: 'ns1', name: 'p1', subresource, verb: 'delete' },
    target: { info: podsInfo, groupResource: { group: '', resource: 'pods' }, gr: 'pods' },
    store: { admission: new AdmissionChain([probe]) },
  };
  return { c, probe, annotations, req };
}

describe('the attributes a handler builds', () => {
  it('DELETE: the stored object as old, no object, DeleteOptions, the user after impersonation, kind and resource', () => {
    const { c, probe, annotations, req } = context();
    const old = { metadata: { name: 'p1', namespace: 'ns1' } };
    const a = deleteAdmission(c, { dryRun: true, gracePeriodSeconds: 5, propagationPolicy: 'Foreground' })!;
    expect(a.admit(null, old)).toBeUndefined(); // synchronous: no promise without a waiting step
    expect(a.validate(null, old)).toBeUndefined();
    expect(probe.seen.map(([phase]) => phase)).toEqual(['admit', 'validate']);
    const got = probe.seen[0][1];
    expect(got).toMatchObject({
      operation: 'DELETE',
      namespace: 'ns1',
      name: 'p1',
      subresource: '',
      obj: null,
      old,
      dryRun: true,
      user: alice,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      options: { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/v1', gracePeriodSeconds: 5, propagationPolicy: 'Foreground', dryRun: ['All'] },
    });
    // what a step adds reaches the client's Warning headers and the audit event
    expect(req.warnings).toEqual(['probe saw DELETE']);
    expect(annotations).toEqual({ 'probe.example.com/admitted': 'DELETE' });
  });

  it('a collection delete admits each item without a name, as kube', () => {
    const { c, probe } = context();
    const a = deleteAdmission(c, { dryRun: false }, '')!;
    a.admit(null, { metadata: { name: 'x' } });
    expect(probe.seen[0][1].name).toBe('');
    expect(probe.seen[0][1].old.metadata.name).toBe('x');
  });

  it('CREATE: the name comes from the object once generated; options from the query; an update that creates is a CREATE', () => {
    const { c, probe } = context('dryRun=All&fieldManager=me&fieldValidation=Strict');
    const a = writeAdmission(c, 'CREATE', 'CreateOptions')!;
    a.admit({ metadata: { name: 'gen-abcde' } }, null);
    expect(probe.seen[0][1]).toMatchObject({ operation: 'CREATE', name: 'gen-abcde', dryRun: true, options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1', dryRun: ['All'], fieldManager: 'me', fieldValidation: 'Strict' } });
    const u = writeAdmission(c, 'UPDATE', 'PatchOptions')!;
    u.asCreate!().admit({ metadata: { name: 'p1' } }, null);
    expect(probe.seen[1][1]).toMatchObject({ operation: 'CREATE', name: 'p1', options: { kind: 'CreateOptions', fieldManager: 'me' } });
  });

  it('CONNECT: the connect options object, no object', async () => {
    const { c, probe } = context('', 'exec');
    await connectAdmission(c, 'PodExecOptions', { container: 'c', command: ['sh'], stdin: true });
    expect(probe.seen.map(([p]) => p)).toEqual(['admit', 'validate']);
    expect(probe.seen[1][1]).toMatchObject({ operation: 'CONNECT', subresource: 'exec', obj: null, old: null, options: { kind: 'PodExecOptions', apiVersion: 'v1', container: 'c', command: ['sh'], stdin: true } });
  });
});
