// Issue 23's must-show, end to end with real processes: a server with a short node monitor
// grace period (Node,RBAC and NodeRestriction, as the agent tests), two real node agents
// (`node dist/src/main.js node ...` child processes) with heartbeats shortened to match:
//   - `kubectl get nodes` shows both Ready;
//   - pods created without spec.nodeName are bound by the scheduler to agent-a (the other
//     node, agent-keep, carries a NoSchedule taint the pods do not tolerate) and reach
//     Running as `sleep` processes of the process runtime;
//   - agent-a SIGKILLed (a node dying; its containers, in their own sessions, live on as on
//     a partitioned node): after the grace period Ready=Unknown with "Kubelet stopped
//     posting node status.", the unreachable NoSchedule and NoExecute taints; the pod
//     tolerating unreachable for 3 s is evicted 3 s after the taint and not before, the pod
//     with the 300 s default tolerations (DefaultTolerationSeconds) is kept; agent-keep,
//     Ready all along, keeps the zone healthy so that evictions go on (kube stops evicting
//     when every node is down);
//   - agent-a started again: Ready=True at once, the taints removed, the evicted pod's
//     deletion completed by the agent, the other pod Running again in a new process (the
//     leftover processes of the killed agent cleaned up);
//   - agent-a paused (SIGSTOP) past the grace period, then resumed: the agent sees that the
//     server's Ready condition differs from its own and posts Ready=True within its status
//     period, without a restart (and records kubelet's NodeReady event); the pod the
//     controller marked not Ready is Ready again;
//   - `kubectl cordon` makes the node unschedulable (the scheduler leaves it alone),
//     `kubectl describe node` shows the agent's node, `kubectl drain` evicts its pods.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk, kubectlPath } from './helpers/kubectl.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const dir = mkdtempSync(join(tmpdir(), 'kubeshard-node-lifecycle-e2e-'));
const TOKENS: Record<string, string> = { 'agent-a': 'agent-a-token', 'agent-keep': 'agent-keep-token' };
const GRACE_SECONDS = 4;
const UNREACHABLE = 'node.kubernetes.io/unreachable';
const NOT_READY = 'node.kubernetes.io/not-ready';
const KEEP_TAINT = 'kubeshard.test/keep';
const PODS = '/api/v1/namespaces/default/pods';
let s: TestServer;

interface Agent {
  name: string;
  proc: ChildProcess;
  port: number;
  rootDir: string;
  output: () => string;
}
const agents = new Map<string, Agent>();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function kubeconfigFor(name: string): string {
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(path, `apiVersion: v1\nkind: Config\nclusters:\n- name: ks\n  cluster:\n    server: ${s.url}\n    certificate-authority: ${join(s.dataDir, 'certs', 'ca.crt')}\nusers:\n- name: ${name}\n  user:\n    token: ${TOKENS[name]}\ncontexts:\n- name: ks\n  context: {cluster: ks, user: ${name}}\ncurrent-context: ks\n`);
  return path;
}

/** Starts (or starts again, on the same root dir and port) a node agent as a child process. */
async function startAgent(name: string, extra: string[] = []): Promise<Agent> {
  const had = agents.get(name);
  const port = had?.port ?? (await freePort());
  const rootDir = join(dir, `root-${name}`);
  const proc = spawn(
    process.execPath,
    [
      MAIN,
      'node',
      '--kubeconfig',
      kubeconfigFor(name),
      '--hostname-override',
      name,
      '--node-ip',
      '127.0.0.1',
      '--root-dir',
      rootDir,
      '--address',
      '127.0.0.1',
      '--port',
      String(port),
      '--healthz-port',
      '0',
      // heartbeats matched to the shortened grace period: the Lease renewed every second
      // (a quarter of its duration), the status computed every second
      '--node-lease-duration-seconds',
      String(GRACE_SECONDS),
      '--node-status-update-frequency',
      '1s',
      ...extra,
    ],
    // its own process group: the test can end the agent and whatever it runs in its group
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const a: Agent = { name, proc, port, rootDir, output: () => out };
  agents.set(name, a);
  await until(() => {
    if (proc.exitCode !== null) throw new Error(`agent ${name} exited ${proc.exitCode}:\n${out}`);
    return out.includes(`Node ${name} is running`);
  }, 30_000);
  return a;
}

function alive(p: ChildProcess): boolean {
  return p.exitCode === null && p.signalCode === null;
}

/** Ends an agent's process group with the signal, and waits for the agent to exit. */
async function killAgent(a: Agent, signal: NodeJS.Signals): Promise<void> {
  if (!alive(a.proc)) return;
  const exited = new Promise((r) => a.proc.once('exit', r));
  try {
    process.kill(-a.proc.pid!, signal);
  } catch {
    /* gone */
  }
  await exited;
}

/** The PIDs of the processes running in an agent's pod directories (its containers). */
function containerPids(a: Agent): number[] {
  const podsDir = join(a.rootDir, 'pods') + '/';
  const out: number[] = [];
  for (const n of readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue;
    try {
      if ((readlinkSync(`/proc/${n}/cwd`) + '/').startsWith(podsDir)) out.push(Number(n));
    } catch {
      /* gone, or not ours */
    }
  }
  return out;
}

async function getNode(name: string): Promise<any> {
  return (await request(s, 'GET', `/api/v1/nodes/${name}`)).json();
}
async function getPod(name: string): Promise<{ status: number; pod: any }> {
  const r = await request(s, 'GET', `${PODS}/${name}`);
  return { status: r.status, pod: r.json() };
}
const readyOf = (n: any) => (n.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
const hasTaint = (n: any, key: string, effect: string) => (n.spec?.taints ?? []).some((t: any) => t.key === key && t.effect === effect);

/** `kubectl get node <name> -o json`, as a client sees it. */
async function kubectlNode(name: string): Promise<any> {
  return JSON.parse(await kubectlOk(s, ['get', 'node', name, '-o', 'json']));
}

/** A pod of the process runtime: a `sleep` with no spec.nodeName (the scheduler places it). */
function sleepPod(name: string, extra: any = {}): any {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: 'e2e' } },
    spec: { terminationGracePeriodSeconds: 5, containers: [{ name: 'c', image: 'busybox', command: ['sleep', '3600'] }], ...extra },
  };
}

async function createRunning(name: string, extra: any = {}): Promise<any> {
  const r = await request(s, 'POST', PODS, sleepPod(name, extra));
  expect(r.status, r.body).toBe(201);
  expect(r.json().spec.nodeName).toBeUndefined();
  return until(async () => {
    const { pod } = await getPod(name);
    return pod.status?.phase === 'Running' && pod;
  }, 30_000);
}

beforeAll(async () => {
  kubectlPath();
  writeFileSync(join(dir, 'tokens.csv'), Object.entries(TOKENS).map(([n, t]) => `${t},system:node:${n},uid-${n},"system:nodes"\n`).join(''));
  s = await startServer({
    args: [
      '--authorization-mode',
      'Node,RBAC',
      '--token-auth-file',
      join(dir, 'tokens.csv'),
      '--enable-admission-plugins',
      'NodeRestriction',
      '--node-monitor-period=500ms',
      `--node-monitor-grace-period=${GRACE_SECONDS}s`,
    ],
  });
  // the node kept Ready; the test's pods do not tolerate its taint
  await startAgent('agent-keep', ['--register-with-taints', `${KEEP_TAINT}=x:NoSchedule`]);
  await startAgent('agent-a');
}, 90_000);

afterAll(async () => {
  if (process.env.KS_AGENT_LOG) writeFileSync(process.env.KS_AGENT_LOG, [...agents.values()].map((a) => `== ${a.name}\n${a.output()}`).join('\n'));
  for (const a of agents.values()) {
    if (a.proc.signalCode === null && a.proc.exitCode === null) {
      try {
        process.kill(-a.proc.pid!, 'SIGCONT');
      } catch {
        /* gone */
      }
    }
    await killAgent(a, 'SIGTERM');
  }
  // no container process outlives the test (a SIGKILLed agent's ones are in their own sessions)
  for (const a of agents.values())
    for (const pid of containerPids(a)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  await s?.stop();
  s?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('a real node agent through the node lifecycle', () => {
  it('kubectl get nodes: both agents Ready', async () => {
    const out = await until(async () => {
      const o = await kubectlOk(s, ['get', 'nodes']);
      return /\bagent-a\s+Ready\s/.test(o) && /\bagent-keep\s+Ready\s/.test(o) && o;
    }, 20_000);
    expect(out).toMatch(/agent-a\s+Ready\s+<none>\s+\S+\s+v1\.33\.0-kubeshard/);
    const a = await kubectlNode('agent-a');
    expect(readyOf(a)).toMatchObject({ status: 'True', reason: 'KubeletReady' });
    expect(a.spec.taints ?? []).toEqual([]);
  }, 30_000);

  it('pods without nodeName are bound by the scheduler to agent-a and run as processes', async () => {
    // one tolerating unreachable for 3 s; one with the admission's defaults (300 s)
    const patient = await createRunning('patient', { tolerations: [{ key: UNREACHABLE, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 3 }] });
    const steady = await createRunning('steady');
    for (const p of [patient, steady]) {
      expect(p.spec.nodeName).toBe('agent-a');
      expect(p.status.conditions.find((c: any) => c.type === 'PodScheduled').status).toBe('True');
      expect(p.status.containerStatuses[0].state.running).toBeTruthy();
    }
    expect(steady.spec.tolerations).toEqual(
      expect.arrayContaining([
        { key: NOT_READY, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: UNREACHABLE, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ]),
    );
    const ev = await until(async () => {
      const items = (await request(s, 'GET', `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent('involvedObject.name=patient,reason=Scheduled')}`)).json().items;
      return items?.[0];
    }, 10_000);
    expect(ev.message).toBe('Successfully assigned default/patient to agent-a');
    const wide = await kubectlOk(s, ['get', 'pods', '-o', 'wide']);
    expect(wide).toMatch(/patient\s+1\/1\s+Running\s+0\s+\S+\s+127\.0\.0\.1\s+agent-a/);
    expect(wide).toMatch(/steady\s+1\/1\s+Running\s+0\s+\S+\s+127\.0\.0\.1\s+agent-a/);
    // two sleep processes in agent-a's pod directories
    expect(containerPids(agents.get('agent-a')!)).toHaveLength(2);
  }, 60_000);

  it('agent-a killed: Unknown after the grace period, the unreachable taints, the 3 s pod evicted after 3 s, the 300 s pod kept', async () => {
    const a = agents.get('agent-a')!;
    await killAgent(a, 'SIGKILL');
    const lease = (await request(s, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/agent-a')).json();
    expect(lease.spec).toMatchObject({ holderIdentity: 'agent-a', leaseDurationSeconds: GRACE_SECONDS });

    // Ready=Unknown, as kubectl shows it
    await until(async () => readyOf(await getNode('agent-a'))?.status === 'Unknown', 30_000);
    const node = await kubectlNode('agent-a');
    // not before the grace period counted from the last renewal (transition times are in whole seconds)
    expect(Date.parse(readyOf(node).lastTransitionTime)).toBeGreaterThan(Date.parse(lease.spec.renewTime) + (GRACE_SECONDS - 1) * 1000);
    expect(readyOf(node)).toMatchObject({ status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.' });
    for (const type of ['MemoryPressure', 'DiskPressure', 'PIDPressure']) {
      expect(node.status.conditions.find((c: any) => c.type === type)).toMatchObject({ status: 'Unknown', message: 'Kubelet stopped posting node status.' });
    }
    expect(await kubectlOk(s, ['get', 'nodes'])).toMatch(/agent-a\s+NotReady\s/);

    // the unreachable taints (the NoExecute one through the eviction rate limiter)
    const tainted = await until(async () => {
      const n = await getNode('agent-a');
      return hasTaint(n, UNREACHABLE, 'NoSchedule') && hasTaint(n, UNREACHABLE, 'NoExecute') && n;
    }, 30_000);
    const patientThen = await getPod('patient');
    const noExecute = tainted.spec.taints.find((t: any) => t.key === UNREACHABLE && t.effect === 'NoExecute');
    expect(noExecute.timeAdded).toBeTruthy();
    // read while the 3 s toleration runs (unless this test was held up): not evicted yet
    if (Date.now() - Date.parse(noExecute.timeAdded) < 2000) expect(patientThen.pod.metadata.deletionTimestamp).toBeUndefined();
    const viaKubectl = await kubectlNode('agent-a');
    expect(viaKubectl.spec.taints).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: UNREACHABLE, effect: 'NoSchedule' }),
        expect.objectContaining({ key: UNREACHABLE, effect: 'NoExecute' }),
      ]),
    );
    // agent-keep is left alone
    const keep = await getNode('agent-keep');
    expect(readyOf(keep).status).toBe('True');
    expect(keep.spec.taints).toEqual([{ key: KEEP_TAINT, value: 'x', effect: 'NoSchedule' }]);

    // the 3 s pod: marked for deletion once its toleration ran out (no agent to finish it:
    // it stays Terminating, as on a dead kubelet's node)
    const patient = await until(async () => {
      const { pod } = await getPod('patient');
      return pod.metadata?.deletionTimestamp && pod;
    }, 30_000);
    const evictedAt = Date.parse(patient.metadata.deletionTimestamp) - patient.metadata.deletionGracePeriodSeconds * 1000;
    // (timestamps in whole seconds)
    expect(evictedAt - Date.parse(noExecute.timeAdded)).toBeGreaterThanOrEqual(2000);
    expect(patient.status.conditions.find((c: any) => c.type === 'DisruptionTarget')).toMatchObject({ status: 'True', reason: 'DeletionByTaintManager' });
    expect(await kubectlOk(s, ['get', 'pod', 'patient'])).toMatch(/patient\s+\S+\s+Terminating\s/);
    // the pod tolerating 300 s is kept
    await sleep(1000);
    expect((await getPod('steady')).pod.metadata.deletionTimestamp).toBeUndefined();
    const evs = (await request(s, 'GET', '/api/v1/namespaces/default/events')).json().items;
    expect(evs.some((e: any) => e.reason === 'NodeNotReady' && e.involvedObject.name === 'agent-a' && e.source?.component === 'node-controller')).toBe(true);
    expect(evs.some((e: any) => e.reason === 'TaintManagerEviction' && e.message === 'Marking for deletion Pod default/patient')).toBe(true);
  }, 90_000);

  it('agent-a started again: Ready=True, the taints gone, the evicted pod removed, the other Running again', async () => {
    const before = containerPids(agents.get('agent-a')!);
    expect(before).toHaveLength(2); // the killed agent's sleeps, still there
    await startAgent('agent-a');
    const n = await until(async () => {
      const x = await getNode('agent-a');
      return readyOf(x)?.status === 'True' && !(x.spec?.taints ?? []).some((t: any) => t.key === UNREACHABLE) && x;
    }, 30_000);
    expect(n.spec.taints).toBeUndefined();
    const k = await kubectlNode('agent-a');
    expect(readyOf(k)).toMatchObject({ status: 'True', reason: 'KubeletReady' });
    expect(k.spec.taints).toBeUndefined();
    expect(await kubectlOk(s, ['get', 'nodes'])).toMatch(/agent-a\s+Ready\s/);
    // the agent completes the eviction
    await until(async () => (await getPod('patient')).status === 404, 30_000);
    // the 300 s pod: Running in a new process; the old ones gone
    const steady = await until(async () => {
      const { pod } = await getPod('steady');
      return pod.status?.phase === 'Running' && pod.status.containerStatuses?.[0]?.state?.running && pod;
    }, 30_000);
    expect(steady.metadata.deletionTimestamp).toBeUndefined();
    const after = await until(() => {
      const p = containerPids(agents.get('agent-a')!);
      return p.length === 1 && !before.includes(p[0]) && p;
    }, 15_000);
    expect(after).toHaveLength(1);
  }, 90_000);

  it('agent-a paused past the grace period, then resumed: it posts Ready=True again by itself', async () => {
    const a = agents.get('agent-a')!;
    const podReady = async () => ((await getPod('steady')).pod.status?.conditions ?? []).find((c: any) => c.type === 'Ready')?.status;
    expect(await podReady()).toBe('True');
    const nodeReadyEvents = async () =>
      ((await request(s, 'GET', `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent('involvedObject.name=agent-a,reason=NodeReady')}`)).json().items ?? [])
        .filter((e: any) => e.source?.component === 'kubelet')
        .reduce((n: number, e: any) => n + (e.count ?? 1), 0);
    const readyEventsBefore = await nodeReadyEvents();
    process.kill(-a.proc.pid!, 'SIGSTOP');
    try {
      await until(async () => readyOf(await getNode('agent-a'))?.status === 'Unknown', 30_000);
      // kube's MarkPodsNotReady: the node's pods are not Ready either
      await until(async () => (await podReady()) === 'False', 15_000);
    } finally {
      process.kill(-a.proc.pid!, 'SIGCONT');
    }
    // the agent's status loop sees the server's Ready=Unknown differ from its own Ready=True
    // and writes at its next 1 s status period, not at its 5 min report period
    const n = await until(async () => {
      const x = await getNode('agent-a');
      return readyOf(x)?.status === 'True' && !(x.spec?.taints ?? []).some((t: any) => t.key === UNREACHABLE) && x;
    }, 30_000);
    expect(readyOf(n)).toMatchObject({ reason: 'KubeletReady', message: 'kubelet is posting ready status' });
    // with kubelet's NodeReady event for the transition back
    await until(async () => (await nodeReadyEvents()) > readyEventsBefore, 15_000);
    expect(alive(a.proc)).toBe(true);
    expect((await getPod('steady')).pod.metadata.deletionTimestamp).toBeUndefined();
    // and its pod's status, which the controller changed, is written back as the agent sees it
    await until(async () => (await podReady()) === 'True', 15_000);
  }, 60_000);

  it('kubectl cordon: unschedulable, the scheduler leaves the node alone; describe node; uncordon; drain evicts its pods', async () => {
    expect(await kubectlOk(s, ['cordon', 'agent-a'])).toContain('node/agent-a cordoned');
    const cordoned = await until(async () => {
      const n = await getNode('agent-a');
      return n.spec?.unschedulable && hasTaint(n, 'node.kubernetes.io/unschedulable', 'NoSchedule') && n;
    }, 15_000);
    expect(cordoned.spec.unschedulable).toBe(true);
    expect(await kubectlOk(s, ['get', 'nodes'])).toMatch(/agent-a\s+Ready,SchedulingDisabled\s/);

    // a new pod: no node takes it (agent-a cordoned, agent-keep tainted)
    const r = await request(s, 'POST', PODS, sleepPod('waiting'));
    expect(r.status, r.body).toBe(201);
    const cond = await until(async () => {
      const { pod } = await getPod('waiting');
      return (pod.status?.conditions ?? []).find((c: any) => c.type === 'PodScheduled' && c.status === 'False');
    }, 20_000);
    expect(cond.reason).toBe('Unschedulable');
    expect(cond.message).toMatch(/^0\/2 nodes are available: /);
    expect(cond.message).toContain('1 node(s) were unschedulable');
    expect(cond.message).toContain(`1 node(s) had untolerated taint {${KEEP_TAINT}: x}`);
    expect((await getPod('waiting')).pod.spec.nodeName).toBeUndefined();

    // describe node: the agent's facts
    const d = await kubectlOk(s, ['describe', 'node', 'agent-a']);
    expect(d).toMatch(/^Name:\s+agent-a$/m);
    expect(d).toMatch(/kubernetes\.io\/hostname=agent-a/);
    expect(d).toMatch(/^Taints:\s+node\.kubernetes\.io\/unschedulable:NoSchedule$/m);
    expect(d).toMatch(/^Unschedulable:\s+true$/m);
    expect(d).toMatch(/^Lease:\n\s+HolderIdentity:\s+agent-a$/m);
    expect(d).toMatch(/^\s+Ready\s+True\s.*KubeletReady\s+kubelet is posting ready status$/m);
    expect(d).toMatch(/^\s+InternalIP:\s+127\.0\.0\.1$/m);
    expect(d).toMatch(/^\s+Kubelet Version:\s+v1\.33\.0-kubeshard$/m);
    expect(d).toMatch(/^\s+Container Runtime Version:\s+process:\/\/0\.1\.0$/m);
    expect(d).toMatch(/^\s+default\s+steady\s+/m); // Non-terminated Pods
    expect(d).toMatch(/^Allocated resources:/m);

    // uncordon: the waiting pod goes there
    expect(await kubectlOk(s, ['uncordon', 'agent-a'])).toContain('node/agent-a uncordoned');
    await until(async () => (await getPod('waiting')).pod.status?.phase === 'Running', 30_000);
    expect((await getPod('waiting')).pod.spec.nodeName).toBe('agent-a');

    // drain: cordoned again, its pods evicted (the Eviction API) and stopped by the agent
    const drain = await kubectl(s, ['drain', 'agent-a', '--force', '--grace-period=1', '--timeout=60s'], { timeoutMs: 90_000 });
    expect(drain.code, drain.stderr).toBe(0);
    const said = drain.stdout + drain.stderr;
    expect(said).toContain('node/agent-a cordoned');
    expect(said).toMatch(/evicting pod default\/steady/);
    expect(said).toMatch(/evicting pod default\/waiting/);
    expect(said).toContain('node/agent-a drained');
    for (const name of ['steady', 'waiting']) expect((await getPod(name)).status).toBe(404);
    expect((await getNode('agent-a')).spec.unschedulable).toBe(true);
    await until(() => containerPids(agents.get('agent-a')!).length === 0, 15_000);
  }, 120_000);
});
