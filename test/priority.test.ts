// Priority admission and the system PriorityClasses through kubectl, and DELETE admission
// (NamespaceLifecycle refusing an immortal namespace) through the handler's DELETE attributes.
import { describe, it, expect } from 'vitest';
import { request, type TestServer, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;
useServer((started) => (s = started));

const podYaml = (name: string, spec = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
  - name: c
    image: busybox
${spec}`;

const getPod = async (name: string) => JSON.parse((await kubectl(s, ['get', 'pod', name, '-o', 'json'])).stdout);

describe('Priority', () => {
  it('the system classes exist at start and are listed by kubectl get priorityclasses', async () => {
    const r = await kubectl(s, ['get', 'priorityclasses']);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+VALUE\s+GLOBAL-DEFAULT\s+AGE/);
    expect(lines.some((l) => /^system-cluster-critical\s+2000000000\s+false\s/.test(l))).toBe(true);
    expect(lines.some((l) => /^system-node-critical\s+2000001000\s+false\s/.test(l))).toBe(true);
    const pc = JSON.parse((await kubectl(s, ['get', 'priorityclass', 'system-node-critical', '-o', 'json'])).stdout);
    expect(pc.description).toBe('Used for system critical pods that must not be moved from their current node.');
    expect(pc.preemptionPolicy).toBe('PreemptLowerPriority');
  });

  it("an unknown class is refused with kube's message; a known one resolves priority and preemptionPolicy", async () => {
    const bad = await kubectl(s, ['create', '-f', '-'], { input: podYaml('prio-unknown', '  priorityClassName: no-such-class\n') });
    expect(bad.stderr.trim()).toBe('Error from server (Forbidden): error when creating "STDIN": pods "prio-unknown" is forbidden: no PriorityClass with name no-such-class was found');
    expect((await kubectl(s, ['create', '-f', '-'], { input: podYaml('prio-node', '  priorityClassName: system-node-critical\n') })).stderr).toBe('');
    const p = await getPod('prio-node');
    expect([p.spec.priority, p.spec.preemptionPolicy]).toEqual([2000001000, 'PreemptLowerPriority']);
    const pc = `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: batch-low
value: 100
preemptionPolicy: Never
`;
    expect((await kubectl(s, ['create', '-f', '-'], { input: pc })).stderr).toBe('');
    expect((await kubectl(s, ['create', '-f', '-'], { input: podYaml('prio-batch', '  priorityClassName: batch-low\n') })).stderr).toBe('');
    const b = await getPod('prio-batch');
    expect([b.spec.priority, b.spec.preemptionPolicy]).toEqual([100, 'Never']);
  });

  it('a pod without a class gets 0, or the globalDefault class; a priority that differs is refused', async () => {
    expect((await kubectl(s, ['create', '-f', '-'], { input: podYaml('prio-none') })).stderr).toBe('');
    const p = await getPod('prio-none');
    expect([p.spec.priority, p.spec.preemptionPolicy, p.spec.priorityClassName]).toEqual([0, 'PreemptLowerPriority', undefined]);
    const mismatch = await kubectl(s, ['create', '-f', '-'], { input: podYaml('prio-set', '  priority: 7\n') });
    expect(mismatch.stderr.trim()).toBe(
      'Error from server (Forbidden): error when creating "STDIN": pods "prio-set" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name',
    );
    const policy = await kubectl(s, ['create', '-f', '-'], { input: podYaml('prio-policy', '  priorityClassName: batch-low\n  preemptionPolicy: PreemptLowerPriority\n') });
    expect(policy.stderr.trim()).toBe(
      'Error from server (Forbidden): error when creating "STDIN": pods "prio-policy" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name',
    );
    const def = (name: string, value: number) => `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: ${name}
value: ${value}
globalDefault: true
`;
    expect((await kubectl(s, ['create', '-f', '-'], { input: def('cluster-default', 50) })).stderr).toBe('');
    const second = await kubectl(s, ['create', '-f', '-'], { input: def('another-default', 60) });
    expect(second.stderr.trim()).toBe(
      'Error from server (Forbidden): error when creating "STDIN": priorityclasses.scheduling.k8s.io "another-default" is forbidden: PriorityClass cluster-default is already marked as default. Only one default can exist',
    );
    expect((await kubectl(s, ['create', '-f', '-'], { input: podYaml('prio-default') })).stderr).toBe('');
    const d = await getPod('prio-default');
    expect([d.spec.priority, d.spec.priorityClassName, d.spec.preemptionPolicy]).toEqual([50, 'cluster-default', 'PreemptLowerPriority']);
    // an update keeps what admission set
    expect((await kubectl(s, ['label', 'pod', 'prio-default', 'x=y'])).stderr).toBe('');
    expect((await getPod('prio-default')).spec.priority).toBe(50);
    expect((await kubectl(s, ['delete', 'priorityclass', 'cluster-default'])).stderr).toBe('');
  });

  it('the system classes cannot be deleted', async () => {
    const r = await kubectl(s, ['delete', 'priorityclass', 'system-node-critical']);
    expect(r.stderr.trim()).toBe('Error from server (Forbidden): priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted');
  });
});

describe('DELETE admission', () => {
  it('NamespaceLifecycle refuses the deletion of an immortal namespace, in DELETE admission', async () => {
    const r = await kubectl(s, ['delete', 'namespace', 'kube-system']);
    expect(r.stderr.trim()).toBe('Error from server (Forbidden): namespaces "kube-system" is forbidden: this namespace may not be deleted');
    // a dry run is admitted the same way
    const dry = await request(s, 'DELETE', '/api/v1/namespaces/default?dryRun=All');
    expect(dry.status).toBe(403);
    expect(dry.json().message).toBe('namespaces "default" is forbidden: this namespace may not be deleted');
  });

  it('a create in a namespace that does not exist is a 404 for the namespace', async () => {
    const r = await kubectl(s, ['create', 'configmap', 'cm', '-n', 'no-such-ns']);
    expect(r.stderr.trim()).toBe('error: failed to create configmap: namespaces "no-such-ns" not found');
  });
});

describe('DefaultTolerationSeconds', () => {
  it('gives a pod written back without its default tolerations them again (updates too, as kube)', async () => {
    expect((await kubectl(s, ['create', '-f', '-'], { input: podYaml('tol-pod') })).stderr).toBe('');
    const before = (await getPod('tol-pod')).spec.tolerations;
    expect(before).toEqual([
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ]);
    const r = await kubectl(s, ['patch', 'pod', 'tol-pod', '--type', 'merge', '-p', '{"spec":{"tolerations":null}}']);
    expect(r.stderr).toBe('');
    expect((await getPod('tol-pod')).spec.tolerations).toEqual(before);
  });
});
