import { describe, it, expect } from 'vitest';
import { Classifier } from './classifier.js';
import { LevelState, flowHash, nominalLimits } from './priority-levels.js';
import { levelFromObject } from './classifier.js';
import { mandatoryFlowSchemas, mandatoryPriorityLevels, suggestedFlowSchemas, suggestedPriorityLevels } from './bootstrap-objects.js';
import type { RequestInfo } from '../request/request-info.js';
import type { UserInfo } from '../auth/user.js';

let uid = 0;
const withUid = (o: any) => ({ ...o, metadata: { ...o.metadata, uid: `uid-${o.kind}-${o.metadata.name}-${++uid}` } });
const bootstrap = () => ({
  schemas: [...mandatoryFlowSchemas(), ...suggestedFlowSchemas()].map(withUid),
  levels: [...mandatoryPriorityLevels(), ...suggestedPriorityLevels()].map(withUid),
});

const res = (verb: string, apiGroup: string, resource: string, namespace = '', subresource = ''): RequestInfo =>
  ({ isResourceRequest: true, path: '', verb, apiPrefix: 'api', apiGroup, apiVersion: 'v1', namespace, resource, subresource, name: '', parts: [], legacyWatch: false }) as RequestInfo;
const nonRes = (verb: string, path: string): RequestInfo =>
  ({ isResourceRequest: false, path, verb, apiPrefix: '', apiGroup: '', apiVersion: '', namespace: '', resource: '', subresource: '', name: '', parts: [], legacyWatch: false }) as RequestInfo;
const user = (name: string, ...groups: string[]): UserInfo => ({ name, uid: '', groups: [...groups, 'system:authenticated'] });

describe('classification with the bootstrap configuration', () => {
  const c = new Classifier(bootstrap);
  const fs = (u: UserInfo, info: RequestInfo) => c.classify(u, info)?.schema.name;

  it('picks the first matching schema by precedence', () => {
    expect(fs(user('admin', 'system:masters'), res('get', '', 'pods', 'default'))).toBe('exempt');
    expect(fs(user('bob'), res('get', '', 'pods', 'default'))).toBe('global-default');
    expect(fs(user('bob'), nonRes('get', '/healthz'))).toBe('probes');
    expect(fs(user('bob'), nonRes('post', '/healthz'))).toBe('global-default');
    expect(fs({ name: 'system:anonymous', uid: '', groups: ['system:unauthenticated'] }, nonRes('get', '/livez'))).toBe('probes');
    expect(fs(user('system:kube-controller-manager'), res('update', 'coordination.k8s.io', 'leases', 'kube-system'))).toBe('system-leader-election');
    expect(fs(user('system:kube-controller-manager'), res('update', '', 'endpoints', 'default'))).toBe('endpoint-controller');
    expect(fs(user('system:kube-controller-manager'), res('list', 'apps', 'deployments'))).toBe('kube-controller-manager');
    expect(fs(user('system:node:n1', 'system:nodes'), res('patch', '', 'nodes', '', 'status'))).toBe('system-node-high');
    expect(fs(user('system:node:n1', 'system:nodes'), res('get', '', 'secrets', 'default'))).toBe('system-nodes');
  });

  it('matches service accounts by namespace and name or "*"', () => {
    const sa = (ns: string, name: string) => user(`system:serviceaccount:${ns}:${name}`, 'system:serviceaccounts', `system:serviceaccounts:${ns}`);
    expect(fs(sa('kube-system', 'endpoint-controller'), res('create', '', 'endpoints', 'x'))).toBe('endpoint-controller');
    expect(fs(sa('kube-system', 'generic'), res('get', '', 'configmaps', 'x'))).toBe('workload-leader-election');
    expect(fs(sa('kube-system', 'generic'), res('list', '', 'pods', 'x'))).toBe('kube-system-service-accounts');
    expect(fs(sa('default', 'app'), res('list', '', 'pods', 'x'))).toBe('service-accounts');
    // a name that only looks like a kube-system account (an extra colon) is not one
    expect(fs(user('system:serviceaccount:kube-system:a:b'), res('list', '', 'pods', 'x'))).toBe('global-default');
  });

  it('uids go into the two headers; the answer is cached per user and request shape', () => {
    const a = c.classify(user('bob'), res('get', '', 'pods', 'default'))!;
    expect(a.headers.map((h) => h[0])).toEqual(['X-Kubernetes-Pf-Flowschema-Uid', 'X-Kubernetes-Pf-Prioritylevel-Uid']);
    expect(a.headers[0][1]).toMatch(/^uid-FlowSchema-global-default-/);
    expect(c.classify(user('bob'), res('get', '', 'pods', 'default'))).toBe(a);
    expect(c.classify(user('bob'), res('get', '', 'pods', 'other'))).not.toBe(a);
  });
});

describe('rules', () => {
  const levels = [withUid({ kind: 'PriorityLevelConfiguration', metadata: { name: 'l' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject' } } } })];
  const schema = (name: string, precedence: number, rule: any) =>
    withUid({ kind: 'FlowSchema', metadata: { name }, spec: { priorityLevelConfiguration: { name: 'l' }, matchingPrecedence: precedence, rules: [{ subjects: [{ kind: 'Group', group: { name: '*' } }], ...rule }] } });

  it('resource rules: verbs, groups, resource/subresource, namespaces and clusterScope', () => {
    const c = new Classifier(() => ({
      levels,
      schemas: [
        schema('ns-only', 10, { resourceRules: [{ verbs: ['get'], apiGroups: ['apps'], resources: ['deployments/scale'], namespaces: ['prod'] }] }),
        schema('cluster', 20, { resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['nodes'], clusterScope: true }] }),
        schema('urls', 30, { nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/metrics', '/apis/*'] }] }),
      ],
    }));
    const fs = (info: RequestInfo) => c.classify(user('u'), info)?.schema.name;
    expect(fs(res('get', 'apps', 'deployments', 'prod', 'scale'))).toBe('ns-only');
    // nothing matches and there is no catch-all level: unclassified
    expect(fs(res('get', 'apps', 'deployments', 'prod'))).toBe('catch-all');
    expect(fs(res('list', 'apps', 'deployments', 'prod', 'scale'))).toBe('catch-all');
    expect(fs(res('get', 'apps', 'deployments', 'dev', 'scale'))).toBe('catch-all');
    expect(fs(res('delete', '', 'nodes'))).toBe('cluster');
    // a namespaced request needs the namespace listed, even for a rule with clusterScope
    expect(fs(res('get', '', 'nodes', 'prod'))).toBe('catch-all');
    expect(fs(nonRes('get', '/metrics'))).toBe('urls');
    expect(fs(nonRes('get', '/apis/apps/v1'))).toBe('urls');
    expect(fs(nonRes('get', '/apis'))).toBe('catch-all');
    expect(fs(nonRes('get', '/metrics/x'))).toBe('catch-all');
  });

  it('schemas naming a missing level are skipped (the mandatory catch-all, imagined as kube does, takes the request); a change is seen after invalidate()', () => {
    let schemas = [schema('a', 10, { nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] })];
    schemas[0].spec.priorityLevelConfiguration.name = 'missing';
    const c = new Classifier(() => ({ levels, schemas }));
    expect(c.classify(user('u'), nonRes('get', '/x'))?.schema.name).toBe('catch-all');
    schemas = [schema('b', 10, { nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] })];
    expect(c.classify(user('u'), nonRes('get', '/x'))?.schema.name).toBe('catch-all'); // still the cached answer
    c.invalidate();
    expect(c.classify(user('u'), nonRes('get', '/x'))?.schema.name).toBe('b');
  });
});

describe('seats', () => {
  it("nominal limits: ceil(serverCL × shares / sum of shares), kube's bootstrap levels at 600", () => {
    const limits = nominalLimits([...mandatoryPriorityLevels(), ...suggestedPriorityLevels()].map(levelFromObject), 600);
    expect(Object.fromEntries(limits)).toEqual({ exempt: 0, 'catch-all': 13, system: 74, 'node-high': 98, 'leader-election': 25, 'workload-high': 98, 'workload-low': 245, 'global-default': 49 });
  });

  it('shuffle sharding deals handSize distinct queues and takes the shortest', () => {
    const cfg = levelFromObject({ metadata: { name: 'q' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Queue', queuing: { queues: 8, handSize: 3, queueLengthLimit: 2 } } } } });
    const st = new LevelState(cfg);
    expect(st.queues.length).toBe(8);
    const h = flowHash('flow-a');
    const picks = new Set<number>();
    const waiters: any[] = [];
    for (let i = 0; i < 6; i++) {
      const w: any = { queue: st.pickQueue(h), since: i, state: 'queued', settle: () => {} };
      expect(st.enqueue(w)).toBeNull();
      picks.add(w.queue);
      waiters.push(w);
    }
    // one flow spreads over its hand only: 3 queues of 2
    expect(picks.size).toBe(3);
    const full: any = { queue: st.pickQueue(h), since: 9, state: 'queued', settle: () => {} };
    expect(st.enqueue(full)).toBe('queue-full');
    // dispatch round-robin as seats appear
    const granted: number[] = [];
    for (const w of waiters) w.settle = () => granted.push(w.since);
    st.limit = 6;
    st.dispatch();
    expect(granted.length).toBe(6);
    expect(st.waiting).toBe(0);
    expect(st.executing).toBe(6);
  });
});

describe('mandatory configuration', () => {
  it('without any objects the exempt and catch-all levels and schemas are imagined, as kube does: system:masters exempt, the rest catch-all, no uid headers', () => {
    const c = new Classifier(() => ({ levels: [], schemas: [] }));
    const admin = c.classify({ name: 'admin', uid: '', groups: ['system:masters', 'system:authenticated'] }, { isResourceRequest: true, verb: 'get', apiGroup: '', resource: 'pods', subresource: '', namespace: 'x', name: 'p', path: '', apiPrefix: 'api', apiVersion: 'v1', parts: [], legacyWatch: false } as RequestInfo);
    expect([admin?.schema.name, admin?.level.name, admin?.level.exempt, admin?.headers.length]).toEqual(['exempt', 'exempt', true, 0]);
    const other = c.classify({ name: 'bob', uid: '', groups: ['system:authenticated'] }, { isResourceRequest: false, verb: 'get', path: '/version' } as RequestInfo);
    expect([other?.schema.name, other?.level.name, other?.level.limitResponse, other?.level.shares]).toEqual(['catch-all', 'catch-all', 'Reject', 5]);
    expect([...c.levels().keys()].sort()).toEqual(['catch-all', 'exempt']);
  });
});
