// The node agent (issue 23) as a real child process (`node dist/src/main.js node ...`)
// against a real server with --authorization-mode=Node,RBAC, the agent logging in as
// system:node:<name> (a static token in system:nodes):
//   - `kubectl get nodes` shows it Ready; its Lease in kube-node-lease is renewed; its
//     Node carries the addresses, capacity, nodeInfo and the five conditions of spec 2.10;
//   - a pod bound to it (spec.nodeName) runs, reaching Running then Succeeded for a short
//     command; a long-running pod deleted with a grace period is killed then removed;
//   - the checkpoint endpoint's answers (spec 4.10): 200 with the archive named
//     checkpoint-<pod>_<namespace>-<container>-<time>.tar in <root-dir>/checkpoints, 0600 in
//     a 0700 directory; 401 without credentials; 403 for a user without nodes/checkpoint;
//     404 for an unknown namespace, pod or container and with the gate off; 500 when the
//     runtime fails (the container is not running);
//   - the configuration in effect (/configz) is the main file with the drop-ins merged over
//     it, row by row of spec 2.11;
//   - READY=1 then WATCHDOG=1 pings reach a test NOTIFY_SOCKET.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import https from 'node:https';
import { freePort, request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectlOk, kubectlPath } from './helpers/kubectl.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const dir = mkdtempSync(join(tmpdir(), 'kubeshard-node-agent-'));
const TOKENS = { n1: 'node-n1-token', n2: 'node-n2-token', bob: 'bob-token' };
let s: TestServer;

interface Agent {
  proc: ChildProcess;
  port: number;
  rootDir: string;
  output: () => string;
}
const agents: Agent[] = [];

function nodeKubeconfig(name: string, token: string): string {
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(path, `apiVersion: v1\nkind: Config\nclusters:\n- name: ks\n  cluster:\n    server: ${s.url}\n    certificate-authority: ${join(s.dataDir, 'certs', 'ca.crt')}\nusers:\n- name: ${name}\n  user:\n    token: ${token}\ncontexts:\n- name: ks\n  context: {cluster: ks, user: ${name}}\ncurrent-context: ks\n`);
  return path;
}

async function startAgent(name: string, token: string, extra: string[] = [], env: Record<string, string> = {}): Promise<Agent> {
  const port = await freePort();
  const rootDir = join(dir, `root-${name}`);
  const cfgDir = join(dir, `config-${name}.d`);
  mkdirSync(cfgDir, { recursive: true });
  // the main file names a port the drop-in replaces (the scalar row), a taint list the
  // drop-in replaces (the list row), gates the drop-in adds to (the map row), and half of
  // the authentication structure (the nested-structure row)
  const cfgFile = join(dir, `config-${name}.yaml`);
  writeFileSync(
    cfgFile,
    `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nport: 1\nnodeStatusUpdateFrequency: 1s\nregisterWithTaints:\n- {key: from-main, effect: NoSchedule}\nfeatureGates:\n  KubeletFineGrainedAuthz: true\nauthentication:\n  webhook:\n    enabled: true\n    cacheTTL: 1s\nstaticPodURLHeader:\n  X-A: [a1, a2]\n  X-B: [b1]\n`,
  );
  writeFileSync(
    join(cfgDir, '10-agent.conf'),
    `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nport: ${port}\nregisterWithTaints:\n- {key: from-drop-in, value: x, effect: PreferNoSchedule}\nfeatureGates:\n  SomethingElse: true\nauthentication:\n  anonymous:\n    enabled: true\nauthorization:\n  webhook:\n    cacheAuthorizedTTL: 1s\n    cacheUnauthorizedTTL: 1s\nstaticPodURLHeader:\n  X-A: [a3]\n`,
  );
  const proc = spawn(
    process.execPath,
    [MAIN, 'node', '--kubeconfig', nodeKubeconfig(name, token), '--hostname-override', name, '--node-ip', '127.0.0.1', '--root-dir', rootDir, '--config', cfgFile, '--config-dir', cfgDir, '--healthz-port', '0', '--address', '127.0.0.1', ...extra],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const a = { proc, port, rootDir, output: () => out };
  agents.push(a);
  await until(() => {
    if (proc.exitCode !== null) throw new Error(`agent exited ${proc.exitCode}:\n${out}`);
    return out.includes('is running');
  }, 30_000);
  return a;
}

/** One request to an agent's HTTPS API. */
function agentRequest(a: Agent, method: string, path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = https.request({ host: '127.0.0.1', port: a.port, method, path, rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {} }, (r) => {
      let body = '';
      r.on('data', (d) => (body += d));
      r.on('end', () => res({ status: r.statusCode!, body }));
    });
    req.on('error', rej);
    req.end();
  });
}

/** A python3 datagram receiver on a unix socket (node cannot bind one). */
function notifyReceiver(path: string): { got: string[]; proc: ChildProcess; bound: Promise<void> } {
  const py = `import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\ns.bind(sys.argv[1])\nprint("bound",flush=True)\nwhile True:\n    print(s.recv(4096).decode(),flush=True)\n`;
  const proc = spawn('python3', ['-c', py, path], { stdio: ['ignore', 'pipe', 'inherit'] });
  const got: string[] = [];
  let buf = '';
  const bound = new Promise<void>((res) =>
    proc.stdout!.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const l = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (l === 'bound') res();
        else got.push(l);
      }
    }),
  );
  return { got, proc, bound };
}

let n1: Agent;
let n2: Agent;
let notify: ReturnType<typeof notifyReceiver>;

beforeAll(async () => {
  kubectlPath();
  writeFileSync(join(dir, 'tokens.csv'), `${TOKENS.n1},system:node:n1,uid-n1,"system:nodes"\n${TOKENS.n2},system:node:n2,uid-n2,"system:nodes"\n${TOKENS.bob},bob,uid-bob\n`);
  s = await startServer({ args: ['--authorization-mode', 'Node,RBAC', '--token-auth-file', join(dir, 'tokens.csv'), '--enable-admission-plugins', 'NodeRestriction'] });
  notify = notifyReceiver(join(dir, 'notify.sock'));
  await notify.bound;
  n1 = await startAgent('n1', TOKENS.n1, [], { NOTIFY_SOCKET: join(dir, 'notify.sock'), WATCHDOG_USEC: '400000' });
}, 90_000);

afterAll(async () => {
  if (process.env.KS_AGENT_LOG) writeFileSync(process.env.KS_AGENT_LOG, agents.map((a) => a.output()).join('\n----\n'));
  for (const a of agents) {
    if (a.proc.exitCode === null) {
      a.proc.kill('SIGTERM');
      await new Promise((r) => a.proc.once('exit', r));
    }
  }
  notify?.proc.kill('SIGKILL');
  await s?.stop();
  s?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const podPath = (name: string) => `/api/v1/namespaces/default/pods/${name}`;

describe('node agent', () => {
  it('registers a Ready node: kubectl get nodes, addresses, capacity, nodeInfo, five conditions', async () => {
    const out = await until(async () => {
      const o = await kubectlOk(s, ['get', 'nodes']);
      return /\bn1\s+Ready\s/.test(o) && o;
    }, 20_000);
    expect(out).toMatch(/n1\s+Ready\s+<none>\s+\S+\s+v1\.33\.0-kubeshard/);
    const node = (await request(s, 'GET', '/api/v1/nodes/n1')).json();
    expect(node.status.addresses).toEqual([
      { type: 'InternalIP', address: '127.0.0.1' },
      { type: 'Hostname', address: 'n1' },
    ]);
    expect(Object.keys(node.status.capacity)).toEqual(expect.arrayContaining(['cpu', 'memory', 'pods']));
    expect(node.status.capacity.pods).toBe('110');
    expect(node.status.nodeInfo).toMatchObject({ kubeletVersion: 'v1.33.0-kubeshard', containerRuntimeVersion: 'process://0.1.0', operatingSystem: 'linux' });
    expect(node.status.conditions.map((c: any) => c.type).sort()).toEqual(['DiskPressure', 'MemoryPressure', 'NetworkUnavailable', 'PIDPressure', 'Ready']);
    expect(node.status.conditions.find((c: any) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'KubeletReady' });
    expect(node.metadata.labels).toMatchObject({ 'kubernetes.io/hostname': 'n1', 'kubernetes.io/os': 'linux' });
    // the config-dir merge in effect: the drop-in's port (scalar), its taints (list replaced)
    expect(node.status.daemonEndpoints.kubeletEndpoint.Port).toBe(n1.port);
    expect(node.spec.taints).toEqual([{ key: 'from-drop-in', value: 'x', effect: 'PreferNoSchedule' }]);
  });

  it('the configuration in effect (/configz) is the main file with the drop-in merged, row by row (spec 2.11)', async () => {
    const r = await agentRequest(n1, 'GET', '/configz', s.token);
    expect(r.status).toBe(200);
    const c = JSON.parse(r.body).kubeletconfig;
    // scalar: the drop-in's port over the main file's 1; the main file's other scalars kept
    expect(c.port).toBe(n1.port);
    expect(c.nodeStatusUpdateFrequency).toBe('1s');
    // nested structure: field by field (webhook from the main file, anonymous from the drop-in, x509 a default)
    expect(c.authentication).toEqual({ x509: {}, webhook: { enabled: true, cacheTTL: '1s' }, anonymous: { enabled: true } });
    expect(c.authorization).toEqual({ mode: 'Webhook', webhook: { cacheAuthorizedTTL: '1s', cacheUnauthorizedTTL: '1s' } });
    // list: replaced whole
    expect(c.registerWithTaints).toEqual([{ key: 'from-drop-in', value: 'x', effect: 'PreferNoSchedule' }]);
    // map: keys added or overridden (ContainerCheckpoint: the default gate)
    expect(c.featureGates).toEqual({ ContainerCheckpoint: true, KubeletFineGrainedAuthz: true, SomethingElse: true });
    // map of string to list: an overridden key's list replaced, the other key kept
    expect(c.staticPodURLHeader).toEqual({ 'X-A': ['a3'], 'X-B': ['b1'] });
    // kubelet's attributes for /configz: configz, then proxy
    const bob = await agentRequest(n1, 'GET', '/configz', TOKENS.bob);
    expect(bob.body).toContain('subresource(s)=[configz proxy]');
  });

  it('renews its Lease in kube-node-lease', async () => {
    const first = (await request(s, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1')).json();
    expect(first.spec).toMatchObject({ holderIdentity: 'n1', leaseDurationSeconds: 40 });
    expect(first.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Node', name: 'n1' });
    // renewals every 10 s: the renew time moves on
    await until(async () => (await request(s, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1')).json().spec.renewTime !== first.spec.renewTime, 25_000);
  }, 30_000);

  it('sends READY=1 and then watchdog pings to NOTIFY_SOCKET', async () => {
    await until(() => notify.got.filter((m) => m === 'WATCHDOG=1').length >= 2, 10_000);
    expect(notify.got[0]).toBe('READY=1');
  });

  it('runs a bound pod: Running, then Succeeded for a short command', async () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'short', namespace: 'default' }, spec: { nodeName: 'n1', restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox', command: ['sh', '-c', 'echo started; sleep 2; echo done'] }] } };
    expect((await request(s, 'POST', '/api/v1/namespaces/default/pods', pod)).status).toBe(201);
    await until(async () => /short\s+1\/1\s+Running\s+0/.test(await kubectlOk(s, ['get', 'pod', 'short'])), 15_000);
    await until(async () => /short\s+0\/1\s+Completed\s+0/.test(await kubectlOk(s, ['get', 'pod', 'short'])), 15_000);
    const p = (await request(s, 'GET', podPath('short'))).json();
    expect(p.status.phase).toBe('Succeeded');
    expect(p.status.podIP).toBe('127.0.0.1');
    expect(p.status.containerStatuses[0].state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
    // kubelet's Events for it, from the node
    const events = await until(async () => {
      const list = (await request(s, 'GET', `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent('involvedObject.name=short')}`)).json().items ?? [];
      return list.some((e: any) => e.reason === 'Started') && list;
    }, 10_000);
    expect(events.map((e: any) => e.reason)).toEqual(expect.arrayContaining(['Pulled', 'Created', 'Started']));
    expect(events.find((e: any) => e.reason === 'Created')).toMatchObject({ message: 'Created container: c', source: { component: 'kubelet', host: 'n1' }, involvedObject: { kind: 'Pod', name: 'short', fieldPath: 'spec.containers{c}' } });
  }, 40_000);

  it('the checkpoint endpoint: 200 writes the archive (name, place, mode); 401; 403; 404; 500', async () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'long', namespace: 'default' }, spec: { nodeName: 'n1', terminationGracePeriodSeconds: 5, containers: [{ name: 'app', image: 'nginx', command: ['sh', '-c', 'echo hi > state.txt; exec sleep 1000'] }] } };
    expect((await request(s, 'POST', '/api/v1/namespaces/default/pods', pod)).status).toBe(201);
    await until(async () => (await request(s, 'GET', podPath('long'))).json().status?.phase === 'Running', 15_000);

    // 200: as the cluster admin (RBAC's system:masters may create nodes/checkpoint)
    const ok = await agentRequest(n1, 'POST', '/checkpoint/default/long/app', s.token);
    expect(ok.status, ok.body).toBe(200);
    const location: string = JSON.parse(ok.body).items[0];
    const cpDir = join(n1.rootDir, 'checkpoints');
    expect(location.startsWith(cpDir + '/')).toBe(true);
    const name = location.slice(cpDir.length + 1);
    expect(name).toMatch(/^checkpoint-long_default-app-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.tar$/);
    expect(readdirSync(cpDir)).toContain(name);
    expect(statSync(location).mode & 0o777).toBe(0o600);
    expect(statSync(cpDir).mode & 0o777).toBe(0o700);
    expect(statSync(location).size).toBeGreaterThan(0);
    // ?timeout= in seconds (the name has the second in it: the next one is a second on)
    await new Promise((r) => setTimeout(r, 1100));
    const again = await agentRequest(n1, 'POST', '/checkpoint/default/long/app?timeout=30', s.token);
    expect(again.status, again.body).toBe(200);
    expect(readdirSync(cpDir)).toHaveLength(2);
    expect(await agentRequest(n1, 'POST', '/checkpoint/default/long/app?timeout=x', s.token)).toEqual({ status: 404, body: 'cannot parse value of timeout parameter' });

    // 401: a token the server does not know (anonymous is on here, but a bad token is not anonymous)
    const bad = await agentRequest(n1, 'POST', '/checkpoint/default/long/app', 'not-a-token');
    expect(bad).toEqual({ status: 401, body: 'Unauthorized' });
    // 403: a user RBAC grants nothing; anonymous (enabled by the drop-in) is denied too
    const bob = await agentRequest(n1, 'POST', '/checkpoint/default/long/app', TOKENS.bob);
    expect(bob.status).toBe(403);
    expect(bob.body).toContain('Forbidden (user=bob, verb=create, resource=nodes, subresource(s)=[checkpoint])');
    expect((await agentRequest(n1, 'POST', '/checkpoint/default/long/app')).status).toBe(403);

    // 404: unknown namespace, pod, container
    expect(await agentRequest(n1, 'POST', '/checkpoint/nope/long/app', s.token)).toEqual({ status: 404, body: 'pod does not exist' });
    expect(await agentRequest(n1, 'POST', '/checkpoint/default/nope/app', s.token)).toEqual({ status: 404, body: 'pod does not exist' });
    expect(await agentRequest(n1, 'POST', '/checkpoint/default/long/nope', s.token)).toEqual({ status: 404, body: 'container nope does not exist' });
    // 500: the runtime fails (the short pod's container has ended)
    const failed = await agentRequest(n1, 'POST', '/checkpoint/default/short/c', s.token);
    expect(failed.status).toBe(500);
    expect(failed.body).toMatch(/^checkpointing of default\/short\/c failed \(/);
  }, 40_000);

  it('404 when the ContainerCheckpoint gate is off (--feature-gates), after authentication', async () => {
    n2 = await startAgent('n2', TOKENS.n2, ['--feature-gates', 'ContainerCheckpoint=false', '--max-pods', '1']);
    expect(await agentRequest(n2, 'POST', '/checkpoint/default/x/y', s.token)).toEqual({ status: 404, body: '404: Page Not Found' });
    expect((await agentRequest(n2, 'POST', '/checkpoint/default/x/y', 'not-a-token')).status).toBe(401);
  }, 40_000);

  it("admission as kubelet's: a pod over the node's pod count or memory fails with OutOfpods or OutOfmemory", async () => {
    const mk = (name: string, extra: any = {}) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' }, spec: { nodeName: 'n2', containers: [{ name: 'c', image: 'pause', ...extra }] } });
    expect((await request(s, 'POST', '/api/v1/namespaces/default/pods', mk('fits'))).status).toBe(201);
    await until(async () => (await request(s, 'GET', podPath('fits'))).json().status?.phase === 'Running', 15_000);
    expect((await request(s, 'POST', '/api/v1/namespaces/default/pods', mk('extra'))).status).toBe(201);
    const extra = await until(async () => {
      const p = (await request(s, 'GET', podPath('extra'))).json();
      return p.status?.phase === 'Failed' && p;
    }, 15_000);
    expect(extra.status).toMatchObject({ reason: 'OutOfpods', message: "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1" });
    // the pod count freed, a pod asking more memory than the node has
    expect((await request(s, 'DELETE', podPath('fits'))).status).toBe(200);
    await until(async () => (await request(s, 'GET', podPath('fits'))).status === 404, 20_000);
    expect((await request(s, 'POST', '/api/v1/namespaces/default/pods', mk('huge', { resources: { requests: { memory: '100Ti' } } }))).status).toBe(201);
    const huge = await until(async () => {
      const p = (await request(s, 'GET', podPath('huge'))).json();
      return p.status?.phase === 'Failed' && p;
    }, 15_000);
    expect(huge.status.reason).toBe('OutOfmemory');
    expect(huge.status.message).toMatch(/^Pod was rejected: Node didn't have enough resource: memory, requested: 109951162777600, used: 0, capacity: \d+$/);
  }, 60_000);

  it('/healthz and /pods through authn/authz; kubelet attributes (pods, then proxy)', async () => {
    expect(await agentRequest(n1, 'GET', '/healthz', s.token)).toEqual({ status: 200, body: 'ok' });
    const pods = JSON.parse((await agentRequest(n1, 'GET', '/pods', s.token)).body);
    expect(pods.kind).toBe('PodList');
    expect(pods.items.map((p: any) => p.metadata.name).sort()).toEqual(['long', 'short']);
    const bob = await agentRequest(n1, 'GET', '/pods', TOKENS.bob);
    expect(bob.status).toBe(403);
    expect(bob.body).toContain('subresource(s)=[pods proxy]');
    // a role granting nodes/proxy lets bob through (the fallback attribute set)
    await kubectlOk(s, ['create', 'clusterrole', 'node-proxy', '--verb=get', '--resource=nodes/proxy']);
    await kubectlOk(s, ['create', 'clusterrolebinding', 'bob-node-proxy', '--clusterrole=node-proxy', '--user=bob']);
    await until(async () => (await agentRequest(n1, 'GET', '/pods', TOKENS.bob)).status === 200, 15_000);
  }, 30_000);

  it('activeDeadlineSeconds: the pod is stopped and fails with DeadlineExceeded; preStop runs before a stop', async () => {
    const marker = join(dir, 'prestop-ran');
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'deadline', namespace: 'default' },
      spec: { nodeName: 'n1', activeDeadlineSeconds: 2, terminationGracePeriodSeconds: 5, containers: [{ name: 'c', image: 'busybox', command: ['sleep', '1000'], lifecycle: { preStop: { exec: { command: ['sh', '-c', `echo ran > ${marker}`] } } } }] },
    };
    expect((await request(s, 'POST', '/api/v1/namespaces/default/pods', pod)).status).toBe(201);
    const failed = await until(async () => {
      const p = (await request(s, 'GET', podPath('deadline'))).json();
      return p.status?.phase === 'Failed' && p;
    }, 20_000);
    expect(failed.status).toMatchObject({ reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' });
    expect(failed.status.containerStatuses[0].state.terminated).toMatchObject({ exitCode: 137 });
    expect(statSync(marker).isFile()).toBe(true);
  }, 30_000);

  it('a deleted pod is stopped, then removed by the agent (grace period 0)', async () => {
    expect((await request(s, 'DELETE', podPath('long'))).status).toBe(200);
    await until(async () => (await request(s, 'GET', podPath('long'))).status === 404, 20_000);
    // its process is gone with its directory
    await until(() => !readdirSync(join(n1.rootDir, 'pods')).some((d) => d && statSync(join(n1.rootDir, 'pods', d)).isDirectory() && readdirSync(join(n1.rootDir, 'pods', d, 'containers')).includes('app')), 10_000);
  }, 30_000);
});
