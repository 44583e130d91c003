// The connect subresources end to end with a real node agent (issue 23's must-show): kubectl
// 1.33 runs `logs`, `logs -f`, `exec`, `cp` both ways and `port-forward` against pods of the
// agent's process runtime. The server reaches the agent as kube-apiserver reaches a kubelet:
// the Node's InternalIP, the agent's port from daemonEndpoints, a client certificate
// (--kubelet-client-certificate) that the agent verifies (--client-ca-file) and authorizes
// through a SubjectAccessReview (the user is bound to system:kubelet-api-admin, as kubeadm
// binds it). The agent logs in as system:node:n1 under Node,RBAC and NodeRestriction.
// Both front ends: uWS relays the WebSockets, node:http2 joins the upgraded connections.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk, kubectlPath } from './helpers/kubectl.js';
import { kubeletClientCredentials } from './helpers/test-kubelet.js';
import { portForwardEcho } from './helpers/port-forward.js';
import { WebSocket } from 'ws';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const PODS = '/api/v1/namespaces/default/pods';

for (const front of ['uws', 'http2'] as const) {
  describe(`kubectl against a real node agent's pods (${front} front end)`, () => {
    const dir = mkdtempSync(join(tmpdir(), `kubeshard-agent-streaming-${front}-`));
    const work = join(dir, 'work');
    let s: TestServer;
    let agent: ChildProcess;
    let agentOut = '';

    beforeAll(async () => {
      kubectlPath();
      mkdirSync(work, { recursive: true });
      const creds = kubeletClientCredentials(dir);
      writeFileSync(join(dir, 'kubelet-client-ca.crt'), creds.ca);
      writeFileSync(join(dir, 'tokens.csv'), 'node-n1-token,system:node:n1,uid-n1,"system:nodes"\n');
      s = await startServer({
        args: [
          `--front-end=${front}`,
          '--authorization-mode', 'Node,RBAC',
          '--token-auth-file', join(dir, 'tokens.csv'),
          '--enable-admission-plugins', 'NodeRestriction',
          '--kubelet-client-certificate', creds.certFile,
          '--kubelet-client-key', creds.keyFile,
          // the agent registers the Hostname "n1", which nothing resolves: its InternalIP first
          '--kubelet-preferred-address-types', 'InternalIP,Hostname',
          // pods are placed by nodeName here
          '--controllers', '*,-scheduler',
        ],
      });
      // kubeadm's binding: the API server's kubelet client may use every kubelet API
      const bind = await request(s, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
        metadata: { name: 'kube-apiserver-kubelet-client' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:kubelet-api-admin' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'kube-apiserver-kubelet-client' }],
      });
      expect(bind.status).toBe(201);
      const kubeconfig = join(dir, 'n1.kubeconfig');
      writeFileSync(kubeconfig, `apiVersion: v1\nkind: Config\nclusters:\n- name: ks\n  cluster:\n    server: ${s.url}\n    certificate-authority: ${join(s.dataDir, 'certs', 'ca.crt')}\nusers:\n- name: n1\n  user:\n    token: node-n1-token\ncontexts:\n- name: ks\n  context: {cluster: ks, user: n1}\ncurrent-context: ks\n`);
      const port = await freePort();
      agent = spawn(
        process.execPath,
        [MAIN, 'node', '--kubeconfig', kubeconfig, '--hostname-override', 'n1', '--node-ip', '127.0.0.1', '--root-dir', join(dir, 'root'), '--port', String(port), '--address', '127.0.0.1', '--healthz-port', '0', '--client-ca-file', join(dir, 'kubelet-client-ca.crt'), '--container-log-max-size', '64Ki', '--container-log-max-files', '5'],
        { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
      );
      agent.stdout!.on('data', (d) => (agentOut += d));
      agent.stderr!.on('data', (d) => (agentOut += d));
      await until(() => {
        if (agent.exitCode !== null) throw new Error(`agent exited ${agent.exitCode}:\n${agentOut}`);
        return agentOut.includes('is running');
      }, 30_000);
      await until(async () => /\bn1\s+Ready\b/.test(await kubectlOk(s, ['get', 'nodes'])), 30_000);
      // a pod that keeps writing, and one that writes three lines and ends
      const made = await request(s, 'POST', PODS, {
        metadata: { name: 'ticker' },
        spec: { nodeName: 'n1', containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'echo started; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done'] }] },
      });
      expect(made.status).toBe(201);
      await request(s, 'POST', PODS, {
        metadata: { name: 'short' },
        spec: { nodeName: 'n1', restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'sleep 1.5; for i in 1 2 3; do echo line $i; sleep 0.3; done'] }] },
      });
      await until(async () => (await request(s, 'GET', `${PODS}/ticker`)).json().status?.phase === 'Running', 30_000);
    }, 120_000);

    afterAll(async () => {
      if (agent && agent.exitCode === null) {
        agent.kill('SIGTERM');
        await Promise.race([new Promise((r) => agent.once('exit', r)), new Promise((r) => setTimeout(r, 10_000))]);
        // (nothing the runtime started outlives the test)
        try {
          process.kill(-agent.pid!, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
      await s?.stop();
      s?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    it('kubectl logs, and logs -f that ends with the container', async () => {
      await until(async () => (await kubectlOk(s, ['logs', 'ticker'])).includes('tick 2'), 15_000);
      const logs = await kubectlOk(s, ['logs', 'ticker', '--tail', '1']);
      expect(logs).toMatch(/^tick \d+\n$/);
      // -f from before the container writes, to its end
      await until(async () => (await request(s, 'GET', `${PODS}/short`)).json().status?.phase === 'Running', 20_000);
      const follow = await kubectl(s, ['logs', '-f', 'short'], { timeoutMs: 30_000 });
      expect(follow.stdout).toBe('line 1\nline 2\nline 3\n');
      expect(follow.code).toBe(0);
    });

    it('logs rotated at --container-log-max-size: files kept and private; --tail, --limit-bytes; -f loses nothing across rotations', async () => {
      // ~500 KiB, 100 lines at a time: several rotations of 64Ki while kubectl follows
      const line = (i: number) => `loud ${String(i).padStart(5, '0')} ${'x'.repeat(80)}`;
      const made = await request(s, 'POST', PODS, {
        metadata: { name: 'loud' },
        spec: {
          nodeName: 'n1',
          restartPolicy: 'Never',
          containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', `sleep 1.5; i=0; while [ $i -lt 5000 ]; do printf 'loud %05d %s\\n' $i ${'x'.repeat(80)}; i=$((i+1)); [ $((i % 100)) -eq 0 ] && sleep 0.1; done; true`] }],
        },
      });
      expect(made.status).toBe(201);
      const uid = made.json().metadata.uid;
      await until(async () => (await request(s, 'GET', `${PODS}/loud`)).json().status?.phase === 'Running', 20_000);
      const follow = await kubectl(s, ['logs', '-f', 'loud'], { timeoutMs: 60_000 });
      expect(follow.code).toBe(0);
      const lines = follow.stdout.split('\n').filter(Boolean);
      expect(lines.length).toBe(5000);
      expect(lines.every((l, i) => l === line(i))).toBe(true);
      const logDir = join(dir, 'root', 'pods', uid, 'logs', 'main');
      const files = readdirSync(logDir);
      expect(files.length).toBe(5);
      expect(files).toContain('0.log');
      for (const f of files) {
        expect(f).toMatch(/^0\.log(\.\d{8}-\d{6}(-\d+)?)?$/);
        const st = statSync(join(logDir, f));
        expect(st.mode & 0o777).toBe(0o600);
        expect(st.size).toBeLessThanOrEqual(64 * 1024);
      }
      expect(await kubectlOk(s, ['logs', 'loud', '--tail=2'])).toBe(`${line(4998)}\n${line(4999)}\n`);
      // the live file only, as kubelet: its first line is some way into the log
      const head = await kubectlOk(s, ['logs', 'loud', '--limit-bytes=50']);
      expect(head).toHaveLength(50);
      expect(head).toMatch(/^loud \d{5} x+$/);
      expect(Number(head.slice(5, 10))).toBeGreaterThan(4000);
    });

    it('kubectl exec: stdout, stderr and the exit code', async () => {
      const r = await kubectl(s, ['exec', 'ticker', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
      expect(r.stdout).toBe('out\n');
      expect(r.stderr).toContain('err\n');
      expect(r.code).toBe(3);
      const input = await kubectl(s, ['exec', '-i', 'ticker', '--', 'sh', '-c', 'tr a-z A-Z'], { input: 'shout\n' });
      expect(input.stdout).toBe('SHOUT\n');
    });

    it('exec with a tty over v5.channel.k8s.io: a resize on channel 4 reaches the command as its terminal size', async () => {
      const script = "n=0; trap 'stty size; n=1' WINCH; echo ready; while [ $n -eq 0 ]; do sleep 0.05; done";
      const path = `${PODS}/ticker/exec?command=sh&command=-c&command=${encodeURIComponent(script)}&stdin=true&stdout=true&tty=true`;
      const ws = new WebSocket(`wss://127.0.0.1:${s.port}${path}`, ['v5.channel.k8s.io'], { ca: s.ca, headers: { Authorization: `Bearer ${s.token}` } });
      let out = '';
      let status = '';
      ws.on('message', (m: Buffer) => {
        if (m[0] === 1) out += m.subarray(1).toString();
        if (m[0] === 3) status += m.subarray(1).toString();
      });
      const closed = new Promise((res) => ws.once('close', res));
      await new Promise((res, rej) => {
        ws.once('open', res);
        ws.once('error', rej);
      });
      await until(() => out.includes('ready'), 10_000);
      ws.send(Buffer.concat([Buffer.from([4]), Buffer.from('{"Width":132,"Height":43}')]));
      await closed;
      expect(out).toContain('43 132');
      expect(status).toBe('{"metadata":{},"status":"Success"}');
    });

    it('kubectl cp into the pod and back out', async () => {
      const local = join(work, 'in.txt');
      writeFileSync(local, 'some content\n'.repeat(2000));
      const target = join(work, 'copied.txt');
      const up = await kubectl(s, ['cp', local, `ticker:${target}`]);
      expect(up.code).toBe(0);
      expect(readFileSync(target, 'utf8')).toBe(readFileSync(local, 'utf8'));
      const back = join(work, 'out.txt');
      const down = await kubectl(s, ['cp', `ticker:${target}`, back]);
      expect(down.code).toBe(0);
      expect(existsSync(back) && readFileSync(back, 'utf8')).toBe(readFileSync(local, 'utf8'));
    });

    it('kubectl port-forward to a port in the pod', async () => {
      await portForwardEcho(s, 'ticker');
    });
  });
}
