import { describe, it, expect } from 'vitest';
import { PodSecurity, isSignificantPodUpdate } from './pod-security.js';
import { StatusError } from '../../errors.js';
import type { Attributes, ObjectSource } from '../plugin.js';

class Objects implements ObjectSource {
  namespaces = new Map<string, any>();
  pods = new Map<string, any[]>();
  gets = 0;
  get(gr: string, _ns: string, name: string) {
    this.gets++;
    return gr === 'namespaces' ? this.namespaces.get(name) : undefined;
  }
  list(gr: string, ns: string) {
    return gr === 'pods' ? (this.pods.get(ns) ?? []) : [];
  }
  ns(name: string, labels: Record<string, string> = {}, rv = '1') {
    this.namespaces.set(name, { metadata: { name, labels, resourceVersion: rv } });
  }
}

const info: any = { namespaced: true };
const podAttrs = (ns: string, pod: any, extra: Partial<Attributes> = {}): Attributes => ({
  operation: 'CREATE',
  info,
  groupResource: { group: '', resource: 'pods' },
  subresource: '',
  namespace: ns,
  name: pod.metadata.name,
  obj: pod,
  old: null,
  dryRun: false,
  ...extra,
});
const nsAttrs = (obj: any, old: any = null): Attributes => ({
  operation: old ? 'UPDATE' : 'CREATE',
  info: { namespaced: false } as any,
  groupResource: { group: '', resource: 'namespaces' },
  subresource: '',
  namespace: '',
  name: obj.metadata.name,
  obj,
  old,
  dryRun: false,
});
const pod = (name: string, spec: any = {}, metadata: any = {}) => ({ metadata: { name, ...metadata }, spec: { containers: [{ name: 'c', image: 'nginx' }], ...spec } });
const privileged = (name: string) => pod(name, { containers: [{ name: 'c', image: 'nginx', securityContext: { privileged: true } }] });

function refusal(fn: () => void): StatusError {
  try {
    fn();
  } catch (e) {
    if (e instanceof StatusError) return e;
    throw e;
  }
  throw new Error('not refused');
}

describe('PodSecurity pods', () => {
  it('admits everything in an unlabelled namespace under the default configuration, noting privileged:latest', () => {
    const o = new Objects();
    o.ns('default');
    const p = new PodSecurity(o);
    const a = podAttrs('default', privileged('x'));
    expect(p.handles(a)).toBe(true);
    p.validate(a);
    expect(a.warnings).toBeUndefined();
    expect(a.auditAnnotations).toEqual({ 'pod-security.kubernetes.io/enforce-policy': 'privileged:latest' });
  });

  it('refuses with kube\'s Forbidden status and records enforce-policy and audit-violations', () => {
    const o = new Objects();
    o.ns('r', { 'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/audit': 'baseline' });
    const p = new PodSecurity(o);
    const a = podAttrs('r', privileged('x'));
    const e = refusal(() => p.validate(a));
    expect(e.code).toBe(403);
    expect(e.toStatus()).toMatchObject({
      reason: 'Forbidden',
      message: 'pods "x" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)',
      details: { name: 'x', kind: 'pods' },
    });
    expect(a.auditAnnotations).toEqual({
      'pod-security.kubernetes.io/enforce-policy': 'baseline:latest',
      'pod-security.kubernetes.io/audit-violations': 'would violate PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)',
    });
    // no warning on a request already refused
    expect(a.warnings).toBeUndefined();
  });

  it('warn mode warns and admits', () => {
    const o = new Objects();
    o.ns('w', { 'pod-security.kubernetes.io/warn': 'restricted', 'pod-security.kubernetes.io/warn-version': 'v1.24' });
    const p = new PodSecurity(o);
    const a = podAttrs('w', privileged('x'));
    p.validate(a);
    expect(a.warnings).toEqual([
      'would violate PodSecurity "restricted:v1.24": privileged (container "c" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    ]);
    expect(a.auditAnnotations).toEqual({ 'pod-security.kubernetes.io/enforce-policy': 'privileged:latest' });
  });

  it('a namespace with bad labels enforces restricted (fail closed), warns and audits at privileged (fail open), and notes the error', () => {
    const o = new Objects();
    o.ns('bad', { 'pod-security.kubernetes.io/enforce': 'nope', 'pod-security.kubernetes.io/warn': 'nope' });
    const p = new PodSecurity(o);
    const a = podAttrs('bad', pod('x'));
    expect(refusal(() => p.validate(a)).message).toMatch(/^pods "x" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation/);
    expect(a.auditAnnotations!['pod-security.kubernetes.io/error']).toBe(
      'Failed to parse policy: [metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "nope": must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "nope": must be one of privileged, baseline, restricted]',
    );
  });

  it('checks only significant pod updates (an image or the containers changed)', () => {
    const o = new Objects();
    o.ns('r', { 'pod-security.kubernetes.io/enforce': 'baseline' });
    const p = new PodSecurity(o);
    const old = privileged('x');
    const relabelled = { ...old, metadata: { ...old.metadata, labels: { a: 'b' } } };
    p.validate(podAttrs('r', relabelled, { operation: 'UPDATE', old }));
    const newImage = privileged('x');
    newImage.spec.containers[0].image = 'nginx:2';
    expect(refusal(() => p.validate(podAttrs('r', newImage, { operation: 'UPDATE', old }))).code).toBe(403);
    expect(isSignificantPodUpdate({ spec: { containers: [{ name: 'c', image: 'a' }], ephemeralContainers: [{ name: 'e', image: 'x' }] } }, { spec: { containers: [{ name: 'c', image: 'a' }] } })).toBe(true);
    // status and the other non-spec subresources are never checked; ephemeralcontainers is
    expect(p.handles(podAttrs('r', old, { operation: 'UPDATE', subresource: 'status', old }))).toBe(false);
    expect(p.handles(podAttrs('r', old, { operation: 'UPDATE', subresource: 'ephemeralcontainers', old }))).toBe(true);
  });

  it('workloads get warnings and audit annotations, never a refusal, and no enforce-policy', () => {
    const o = new Objects();
    o.ns('r', { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/warn': 'baseline', 'pod-security.kubernetes.io/audit': 'baseline' });
    const p = new PodSecurity(o);
    const cj = { metadata: { name: 'cj' }, spec: { jobTemplate: { spec: { template: { spec: { hostNetwork: true, containers: [{ name: 'c', image: 'x' }] } } } } } };
    const a: Attributes = { ...podAttrs('r', cj), groupResource: { group: 'batch', resource: 'cronjobs' } };
    expect(p.handles(a)).toBe(true);
    p.validate(a);
    expect(a.warnings).toEqual(['would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)']);
    expect(a.auditAnnotations).toEqual({ 'pod-security.kubernetes.io/audit-violations': 'would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)' });
    expect(p.handles({ ...a, groupResource: { group: 'apps', resource: 'deployments' }, subresource: 'scale' })).toBe(false);
    expect(p.handles({ ...a, groupResource: { group: '', resource: 'services' } })).toBe(false);
  });

  it('parses a namespace\'s labels once per resourceVersion', () => {
    const o = new Objects();
    o.ns('r', { 'pod-security.kubernetes.io/enforce': 'baseline' }, '5');
    const p = new PodSecurity(o);
    p.validate(podAttrs('r', pod('a')));
    const cached = (p as any).policies.get('r');
    p.validate(podAttrs('r', pod('b')));
    expect((p as any).policies.get('r')).toBe(cached);
    o.ns('r', { 'pod-security.kubernetes.io/enforce': 'restricted' }, '6');
    expect(() => p.validate(podAttrs('r', pod('c')))).toThrow(/restricted:latest/);
  });
});

describe('PodSecurity configuration and exemptions', () => {
  const config = {
    apiVersion: 'pod-security.admission.config.k8s.io/v1',
    kind: 'PodSecurityConfiguration',
    defaults: { enforce: 'baseline', 'enforce-version': 'latest', warn: 'restricted' },
    exemptions: { usernames: ['system:serviceaccount:kube-system:replicaset-controller'], runtimeClasses: ['kata'], namespaces: ['kube-system'] },
  };

  it('defaults apply to unlabelled namespaces; kube-system is exempt only when configured', () => {
    const o = new Objects();
    o.ns('default');
    o.ns('kube-system');
    const p = new PodSecurity(o, config);
    expect(refusal(() => p.validate(podAttrs('default', privileged('x')))).message).toContain('violates PodSecurity "baseline:latest"');
    const sys = podAttrs('kube-system', privileged('x'));
    p.validate(sys);
    expect(sys.auditAnnotations).toEqual({ 'pod-security.kubernetes.io/exempt': 'namespace' });
    // without configuration kube-system is checked like any other namespace
    o.ns('kube-system', { 'pod-security.kubernetes.io/enforce': 'baseline' });
    expect(() => new PodSecurity(o).validate(podAttrs('kube-system', privileged('x')))).toThrow(/violates PodSecurity/);
  });

  it('exempt users and runtime classes', () => {
    const o = new Objects();
    o.ns('default');
    const p = new PodSecurity(o, config);
    const byUser = podAttrs('default', privileged('x'), { user: { name: 'system:serviceaccount:kube-system:replicaset-controller', uid: '', groups: [] } });
    p.validate(byUser);
    expect(byUser.auditAnnotations).toEqual({ 'pod-security.kubernetes.io/exempt': 'user' });
    const kata = privileged('y');
    (kata.spec as any).runtimeClassName = 'kata';
    const byRc = podAttrs('default', kata);
    p.validate(byRc);
    expect(byRc.auditAnnotations).toEqual({ 'pod-security.kubernetes.io/exempt': 'runtimeClass' });
  });

  it('refuses an invalid configuration at start', () => {
    const o = new Objects();
    expect(() => new PodSecurity(o, { ...config, defaults: { enforce: 'strict' } })).toThrow(
      'PodSecurity invalid: defaults.enforce: Invalid value: "strict": must be one of privileged, baseline, restricted',
    );
    expect(() => new PodSecurity(o, { ...config, kind: 'Other' })).toThrow(/expected PodSecurityConfiguration/);
    expect(() => new PodSecurity(o, { ...config, exemptions: { namespaces: ['Bad_NS'] } })).toThrow(/exemptions\.namespaces\[0\]/);
  });

  it('an exempt namespace that sets a policy is warned that it is ignored', () => {
    const o = new Objects();
    const p = new PodSecurity(o, config);
    const a = nsAttrs({ metadata: { name: 'kube-system', labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/audit': 'baseline' } } });
    p.validate(a);
    expect(a.warnings).toEqual(['namespace "kube-system" is exempt from Pod Security, and the policy (enforce=restricted:latest, audit=baseline:latest) will be ignored']);
  });
});

describe('PodSecurity namespaces', () => {
  it('refuses invalid labels on create, and on update unless unchanged', () => {
    const p = new PodSecurity(new Objects());
    const bad = { metadata: { name: 'n', labels: { 'pod-security.kubernetes.io/enforce': 'x', 'pod-security.kubernetes.io/enforce-version': '1.2' } } };
    const e = refusal(() => p.validate(nsAttrs(bad)));
    expect(e.code).toBe(422);
    expect(e.toStatus()).toMatchObject({
      reason: 'Invalid',
      message:
        'Namespace "n" is invalid: [metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "x": must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "1.2": must be "latest" or "v1.x"]',
      details: {
        name: 'n',
        kind: 'Namespace',
        causes: [
          { reason: 'FieldValueInvalid', message: 'Invalid value: "x": must be one of privileged, baseline, restricted', field: 'metadata.labels[pod-security.kubernetes.io/enforce]' },
          { reason: 'FieldValueInvalid', message: 'Invalid value: "1.2": must be "latest" or "v1.x"', field: 'metadata.labels[pod-security.kubernetes.io/enforce-version]' },
        ],
      },
    });
    // the same bad labels, kept by an unrelated update, pass
    const relabelled = { metadata: { ...bad.metadata, labels: { ...bad.metadata.labels, team: 'a' } } };
    p.validate(nsAttrs(relabelled, bad));
    expect(refusal(() => p.validate(nsAttrs(bad, { metadata: { name: 'n' } }))).code).toBe(422);
  });

  it('tightening enforce warns about existing pods, grouped, one per controller first, sorted', () => {
    const o = new Objects();
    const ctl = (uid: string) => [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: uid, uid, controller: true }];
    o.pods.set('n', [
      pod('web-2', {}, { ownerReferences: ctl('rs1') }),
      pod('web-1', {}, { ownerReferences: ctl('rs1') }),
      pod('lone'),
      privileged('priv'),
      pod('z-ok', { securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } }, containers: [{ name: 'c', image: 'x', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }] }),
    ]);
    const p = new PodSecurity(o);
    const old = { metadata: { name: 'n', labels: {} } };
    const next = { metadata: { name: 'n', labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } };
    const a = nsAttrs(next, old);
    p.validate(a);
    expect(a.warnings).toEqual([
      'existing pods in namespace "n" violate the new PodSecurity enforce level "restricted:latest"',
      'lone (and 2 other pods): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile',
      'priv: privileged, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile',
    ]);
    // relaxing, or the same level at the same version, checks nothing
    const relax = nsAttrs({ metadata: { name: 'n', labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } } }, next);
    p.validate(relax);
    expect(relax.warnings).toBeUndefined();
    // a limit on pods checked is reported
    p.maxPodsToCheck = 2;
    const limited = nsAttrs(next, old);
    p.validate(limited);
    expect(limited.warnings![0]).toBe('new PodSecurity enforce level only checked against the first 2 of 5 existing pods');
  });
});

describe('PodSecurity metrics', () => {
  it('counts evaluations, exemptions and errors with kube\'s names and labels', async () => {
    const { PodSecurityMetrics } = await import('./metrics.js');
    const m = new PodSecurityMetrics();
    const o = new Objects();
    o.ns('default');
    o.ns('r', { 'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/warn': 'restricted', 'pod-security.kubernetes.io/warn-version': 'v1.40' });
    o.ns('bad', { 'pod-security.kubernetes.io/audit': 'x' });
    const p = new PodSecurity(o, { exemptions: { runtimeClasses: ['kata'] } }, m);
    p.validate(podAttrs('default', pod('a')));
    expect(() => p.validate(podAttrs('r', privileged('b')))).toThrow();
    p.validate(podAttrs('r', pod('c')));
    p.validate(podAttrs('r', pod('k', { runtimeClassName: 'kata' })));
    p.validate(podAttrs('bad', pod('e')));
    expect(m.render()).toBe(
      [
        '# HELP pod_security_errors_total [ALPHA] Number of errors preventing normal evaluation. Non-fatal errors may result in the latest restricted profile being used for evaluation.',
        '# TYPE pod_security_errors_total counter',
        'pod_security_errors_total{fatal="false",request_operation="create",resource="pod",subresource=""} 1',
        '# HELP pod_security_evaluations_total [ALPHA] Number of policy evaluations that occurred, not counting ignored or exempt requests.',
        '# TYPE pod_security_evaluations_total counter',
        'pod_security_evaluations_total{decision="allow",mode="enforce",policy_level="baseline",policy_version="latest",request_operation="create",resource="pod",subresource=""} 1',
        'pod_security_evaluations_total{decision="allow",mode="enforce",policy_level="privileged",policy_version="latest",request_operation="create",resource="pod",subresource=""} 2',
        'pod_security_evaluations_total{decision="deny",mode="enforce",policy_level="baseline",policy_version="latest",request_operation="create",resource="pod",subresource=""} 1',
        'pod_security_evaluations_total{decision="deny",mode="warn",policy_level="restricted",policy_version="future",request_operation="create",resource="pod",subresource=""} 1',
        '# HELP pod_security_exemptions_total [ALPHA] Number of exempt requests, not counting ignored or out of scope requests.',
        '# TYPE pod_security_exemptions_total counter',
        'pod_security_exemptions_total{request_operation="create",resource="pod",subresource=""} 1',
        '',
      ].join('\n'),
    );
  });
});
