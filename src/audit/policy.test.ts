import { describe, it, expect } from 'vitest';
import { evaluate, policyOf } from './policy.js';
import { parseRequestInfo } from '../request/request-info.js';
import { parseArgs } from '../options.js';

const alice = { name: 'alice', uid: '', groups: ['devs', 'system:authenticated'] };
const info = (method: string, path: string) => parseRequestInfo(method, path, new URLSearchParams());

describe('audit policy', () => {
  const policy = policyOf({
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived'],
    omitManagedFields: true,
    rules: [
      { level: 'None', nonResourceURLs: ['/healthz*', '/version'] },
      { level: 'Request', resources: [{ group: '', resources: ['pods/log', '*/scale'] }] },
      { level: 'Metadata', resources: [{ group: 'apps', resources: ['deployments/*'] }] },
      { level: 'RequestResponse', resources: [{ group: '', resources: ['configmaps'], resourceNames: ['special'] }], omitStages: ['ResponseStarted'], omitManagedFields: false },
      { level: 'Metadata', namespaces: ['kube-system'] },
      { level: 'Request', userGroups: ['devs'], verbs: ['create'] },
      { level: 'Metadata', nonResourceURLs: ['*'] },
    ],
  });
  const level = (method: string, path: string) => evaluate(policy, alice, info(method, path)).level;

  it('matches non-resource URLs exactly or by a trailing *', () => {
    expect(level('GET', '/healthz/etcd')).toBe('None');
    expect(level('GET', '/version')).toBe('None');
    expect(level('GET', '/versions')).toBe('Metadata');
  });
  it('matches subresources: resource/sub, */sub, resource/*', () => {
    expect(level('GET', '/api/v1/namespaces/a/pods/p/log')).toBe('Request');
    expect(level('GET', '/api/v1/namespaces/a/replicationcontrollers/r/scale')).toBe('Request');
    // */scale of the core group: not apps' scale, which deployments/* takes
    expect(level('GET', '/apis/apps/v1/namespaces/a/deployments/d/scale')).toBe('Metadata');
    expect(level('GET', '/apis/apps/v1/namespaces/a/deployments/d/status')).toBe('Metadata');
    // kube's matcher takes resource/* for the resource itself too
    expect(level('GET', '/apis/apps/v1/namespaces/a/deployments/d')).toBe('Metadata');
    expect(level('GET', '/apis/apps/v1/namespaces/a/replicasets/r')).toBe('None');
  });
  it('resourceNames, namespaces, groups and verbs; stages and managed fields merge', () => {
    const d = evaluate(policy, alice, info('GET', '/api/v1/namespaces/a/configmaps/special'));
    expect(d).toEqual({ level: 'RequestResponse', omitStages: ['RequestReceived', 'ResponseStarted'], omitManagedFields: false });
    expect(level('GET', '/api/v1/namespaces/a/configmaps/other')).toBe('None');
    expect(level('GET', '/api/v1/namespaces/kube-system/secrets/x')).toBe('Metadata');
    const c = evaluate(policy, alice, info('POST', '/api/v1/namespaces/a/secrets'));
    expect(c).toEqual({ level: 'Request', omitStages: ['RequestReceived'], omitManagedFields: true });
    expect(evaluate(policy, { ...alice, groups: [] }, info('POST', '/api/v1/namespaces/a/secrets')).level).toBe('None');
  });
  it('refuses what kube refuses', () => {
    expect(() => policyOf({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules: [{ level: 'Metadata', nonResourceURLs: ['/x'], namespaces: ['a'] }] })).toThrow(/both regular resources and non-resource URLs/);
    expect(() => policyOf({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules: [{ level: 'Metadata', omitStages: ['Later'] }] })).toThrow(/omitStages\[0\]: Unsupported value: "Later"/);
    expect(() => policyOf({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules: [{ level: 'Metadata', nonResourceURLs: ['/a*b'] }] })).toThrow(/final character/);
    expect(() => policyOf({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules: [{}] })).toThrow(/rules\[0\]\.level: Required value/);
  });
});

describe('--audit-* flags', () => {
  it('defaults as kube-apiserver: log blocking in batches of 1, webhook batch 400/30s throttled 10 qps burst 15', () => {
    const o = parseArgs([]) as any;
    expect(o.audit.log.mode).toBe('blocking');
    expect(o.audit.log.format).toBe('json');
    expect(o.audit.log.batch.bufferSize).toBe(10000);
    expect(o.audit.log.batch.maxBatchSize).toBe(1);
    expect(o.audit.webhook.mode).toBe('batch');
    expect(o.audit.webhook.batch).toEqual({ bufferSize: 10000, maxBatchSize: 400, maxBatchWait: 30, throttleEnable: true, throttleQPS: 10, throttleBurst: 15 });
    expect(o.audit.webhook.truncate).toEqual({ enabled: false, maxBatchSize: 10485760, maxEventSize: 102400 });
    expect(o.audit.webhook.initialBackoff).toBe(10);
  });
  it('checks the values of an enabled backend', () => {
    expect(() => parseArgs(['--audit-log-path=/tmp/a.log', '--audit-log-maxage=-1'])).toThrow(/--audit-log-maxage -1 can't be a negative number/);
    expect(() => parseArgs(['--audit-log-path=/tmp/a.log', '--audit-log-version=audit.k8s.io/v1beta1'])).toThrow(/invalid audit log version/);
    expect(() => parseArgs(['--audit-webhook-config-file=/tmp/k', '--audit-webhook-batch-throttle-qps=0'])).toThrow(/throttle QPS 0, must be a positive number/);
    expect(() => parseArgs(['--audit-webhook-batch-throttle-qps=x'])).toThrow(/ParseFloat/);
    expect(() => parseArgs(['--audit-log-path=/tmp/a.log', '--audit-log-truncate-enabled', '--audit-log-truncate-max-batch-size=10'])).toThrow(/must be at least max event size/);
    // a backend that is off is not checked
    expect(() => parseArgs(['--audit-log-mode=whatever'])).not.toThrow();
  });
});
