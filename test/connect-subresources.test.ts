// The connect subresources end to end with kubectl 1.33: pods/log (and -f), exec (stdout,
// stderr, exit code, stdin), cp both ways and port-forward, proxied by the server to a test
// kubelet (test/helpers/test-kubelet.ts: src/node/streaming over local processes), on the
// uWS front end and on --front-end=http2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import http from 'node:http';
import { networkInterfaces } from 'node:os';
import { spawn } from 'node:child_process';
import { WebSocket } from 'ws';
import { createHash, randomBytes } from 'node:crypto';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlPath } from './helpers/kubectl.js';
import { portForwardEcho } from './helpers/port-forward.js';
import { kubeletClientCredentials, startTestKubelet, type TestKubelet } from './helpers/test-kubelet.js';

// (KUBESHARD_TEST_FRONT=http2 gives every server a client CA, which the uWS front end refuses)
const FRONTS = process.env.KUBESHARD_TEST_FRONT === 'http2' ? (['http2'] as const) : (['uws', 'http2'] as const);
for (const front of FRONTS) {
  describe(`connect subresources through the ${front} front end`, () => {
    let s: TestServer;
    let k: TestKubelet;
    let work: string;
    const PODS = '/api/v1/namespaces/default/pods';

    beforeAll(async () => {
      s = await startServer({ args: [`--front-end=${front}`] });
      k = await startTestKubelet(s, 'node-a');
      work = mkdtempSync(join(tmpdir(), 'kubeshard-connect-'));
      const pod = await request(s, 'POST', PODS, { metadata: { name: 'p' }, spec: { nodeName: 'node-a', containers: [{ name: 'main', image: 'busybox' }] } });
      expect(pod.status).toBe(201);
      // (kubectl port-forward refuses a pod that is not Running)
      const st = await request(s, 'PATCH', `${PODS}/p/status`, { status: { phase: 'Running' } }, { 'Content-Type': 'application/merge-patch+json' });
      expect(st.status).toBe(200);
      k.runtime.start('default', 'p', 'main', 'for i in 1 2 3 4 5; do echo line $i; done; sleep 0.5; echo late; sleep 0.3');
    }, 60_000);

    afterAll(async () => {
      await k?.close();
      await s?.stop();
      s?.cleanup();
      if (work) rmSync(work, { recursive: true, force: true });
    });

    it('kubectl logs, --tail and --limit-bytes', async () => {
      await until(() => readFileSync(k.runtime.containers.get('default/p/main')!.logPath, 'utf8').includes('line 5'));
      const all = await kubectl(s, ['logs', 'p']);
      expect(all.stderr).toBe('');
      expect(all.stdout.startsWith('line 1\nline 2\nline 3\nline 4\nline 5\n')).toBe(true);
      const tail = await kubectl(s, ['logs', 'p', '--tail=2']);
      expect(tail.stdout.split('\n').filter(Boolean).length).toBe(2);
      const limited = await kubectl(s, ['logs', 'p', '--limit-bytes=9']);
      expect(limited.stdout).toBe('line 1\nli');
    });

    it('kubectl logs -f streams until the container ends', async () => {
      const r = await kubectl(s, ['logs', '-f', 'p']);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('line 1\nline 2\nline 3\nline 4\nline 5\nlate\n');
    });

    it('a follow whose client goes away ends on the agent too', async () => {
      await request(s, 'POST', PODS, { metadata: { name: 'long' }, spec: { nodeName: 'node-a', containers: [{ name: 'main', image: 'busybox' }] } });
      const c = k.runtime.start('default', 'long', 'main', 'echo started; sleep 60');
      const before = k.runtime.follows;
      const f = spawn(kubectlPath(), ['--kubeconfig', s.kubeconfigPath, 'logs', '-f', 'long']);
      let out = '';
      f.stdout.on('data', (d) => (out += d));
      await until(() => out.includes('started'));
      expect(k.runtime.follows).toBe(before + 1);
      f.kill('SIGKILL');
      await until(() => k.runtime.follows === before);
      c.proc.kill('SIGKILL');
    });

    it('an exec whose client goes away ends its command on the agent', async () => {
      const before = k.runtime.execs;
      const e = spawn(kubectlPath(), ['--kubeconfig', s.kubeconfigPath, 'exec', 'p', '--', 'sh', '-c', 'echo running; sleep 60']);
      let out = '';
      e.stdout.on('data', (d) => (out += d));
      await until(() => out.includes('running'));
      expect(k.runtime.execs).toBe(before + 1);
      e.kill('SIGKILL');
      await until(() => k.runtime.execs === before);
    });

    it('a missing container on the agent is the agent\'s 404', async () => {
      await request(s, 'POST', PODS, { metadata: { name: 'ghost' }, spec: { nodeName: 'node-a', containers: [{ name: 'main', image: 'busybox' }] } });
      const r = await request(s, 'GET', `${PODS}/ghost/log`);
      expect(r.status).toBe(404);
      expect(r.json().reason).toBe('NotFound');
    });

    it('kubectl exec: stdout, stderr and the exit code', async () => {
      const ok = await kubectl(s, ['exec', 'p', '--', 'sh', '-c', 'echo out; echo err >&2']);
      expect(ok.code).toBe(0);
      expect(ok.stdout).toBe('out\n');
      expect(ok.stderr).toBe('err\n');
      const fail = await kubectl(s, ['exec', 'p', '--', 'sh', '-c', 'echo before; exit 3']);
      expect(fail.stdout).toBe('before\n');
      expect(fail.code).toBe(3);
      expect(fail.stderr).toContain('command terminated with exit code 3');
    });

    it('kubectl exec -i passes stdin through and ends it', async () => {
      const r = await kubectl(s, ['exec', '-i', 'p', '--', 'sh', '-c', 'tr a-z A-Z; echo done'], { input: 'hello stdin\n' });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('HELLO STDIN\ndone\n');
    });

    it.runIf(front === 'http2')('kubectl exec over a plain SPDY upgrade (the fallback, and older clients)', async () => {
      // (the env is read when kubectl is spawned, synchronously within kubectl())
      const spdy = (args: string[], input?: string) => {
        process.env.KUBECTL_REMOTE_COMMAND_WEBSOCKETS = 'false';
        try {
          return kubectl(s, args, { input });
        } finally {
          delete process.env.KUBECTL_REMOTE_COMMAND_WEBSOCKETS;
        }
      };
      const ok = await spdy(['exec', 'p', '--', 'sh', '-c', 'echo out; echo err >&2']);
      expect(ok.stdout).toBe('out\n');
      expect(ok.stderr).toBe('err\n');
      expect(ok.code).toBe(0);
      const fail = await spdy(['exec', 'p', '--', 'sh', '-c', 'exit 4']);
      expect(fail.code).toBe(4);
      const piped = await spdy(['exec', '-i', 'p', '--', 'sh', '-c', 'tr a-z A-Z'], 'spdy stdin\n');
      expect(piped.stdout).toBe('SPDY STDIN\n');
    });

    it.runIf(front === 'uws')('on uWS a plain SPDY upgrade is refused (uWS cannot give its socket over)', async () => {
      process.env.KUBECTL_REMOTE_COMMAND_WEBSOCKETS = 'false';
      let r;
      try {
        r = kubectl(s, ['exec', 'p', '--', 'true']);
      } finally {
        delete process.env.KUBECTL_REMOTE_COMMAND_WEBSOCKETS;
      }
      const got = await r;
      expect(got.code).not.toBe(0);
      expect(got.stderr).toContain('Upgrade request required');
    });

    it('kubectl attach -i: the container\'s stdin and output until it ends', async () => {
      await request(s, 'POST', PODS, { metadata: { name: 'att' }, spec: { nodeName: 'node-a', containers: [{ name: 'main', image: 'busybox', stdin: true, stdinOnce: true }] } });
      await request(s, 'PATCH', `${PODS}/att/status`, { status: { phase: 'Running' } }, { 'Content-Type': 'application/merge-patch+json' });
      k.runtime.start('default', 'att', 'main', 'while read line; do echo "got $line"; done; echo bye', { stdin: true });
      const r = await kubectl(s, ['attach', '-i', 'att'], { input: 'one\ntwo\n' });
      expect(r.stdout).toBe('got one\ngot two\nbye\n');
      expect(r.code).toBe(0);
    });

    // (the server translates a v5 WebSocket to SPDY towards the node, as kube's
    // StreamTranslatorHandler: resize events reach the node with a TTY only)
    const v5 = async (query: string, send: Buffer[]) => {
      const ws = new WebSocket(`wss://127.0.0.1:${s.port}${PODS}/p/exec?${query}`, ['v5.channel.k8s.io', 'v4.channel.k8s.io'], { ca: s.ca, headers: { Authorization: `Bearer ${s.token}` } });
      const got: Array<[number, string]> = [];
      ws.on('message', (m: Buffer) => got.push([m[0], m.subarray(1).toString()]));
      await new Promise((res, rej) => {
        ws.once('open', res);
        ws.once('error', rej);
      });
      expect(ws.protocol).toBe('v5.channel.k8s.io');
      for (const m of send) ws.send(m);
      const code = await new Promise<number>((res) => ws.once('close', res));
      const joined = (ch: number) => got.filter(([c]) => c === ch).map(([, t]) => t).join('');
      return { code, got, joined };
    };
    const frame = (ch: number, text: string) => Buffer.concat([Buffer.from([ch]), Buffer.from(text)]);

    it('the v5 channel protocol by hand: stdin close, stdout and stderr, Status last', async () => {
      const r = await v5(`command=sh&command=-c&command=${encodeURIComponent('cat; echo e >&2')}&stdin=true&stdout=true&stderr=true`, [frame(0, 'typed'), Buffer.from([255, 0])]);
      expect(r.code).toBe(1000);
      expect(r.joined(1)).toBe('typed');
      expect(r.joined(2)).toBe('e\n');
      expect(r.got[r.got.length - 1]).toEqual([3, '{"metadata":{},"status":"Success"}']);
    });

    it('v5 resize events reach the node with a TTY', async () => {
      const r = await v5(`command=cat&stdin=true&stdout=true&tty=true`, [frame(4, '{"Width":120,"Height":40}'), frame(0, 'x'), Buffer.from([255, 0])]);
      expect(r.code).toBe(1000);
      expect(r.got[r.got.length - 1]).toEqual([3, '{"metadata":{},"status":"Success"}']);
      expect(k.runtime.resizes).toContainEqual([120, 40]);
    });

    it('large streams both ways arrive whole (backpressure, no drops)', async () => {
      const counted = (args: string[], input?: Buffer) =>
        new Promise<{ bytes: number; sum: string; code: number | null }>((res) => {
          const p = spawn(kubectlPath(), ['--kubeconfig', s.kubeconfigPath, ...args]);
          let bytes = 0;
          const h = createHash('sha256');
          p.stdout.on('data', (d: Buffer) => {
            bytes += d.length;
            h.update(d);
          });
          p.on('close', (code) => res({ bytes, sum: h.digest('hex'), code }));
          if (input) p.stdin.end(input);
        });
      const out = await counted(['exec', 'p', '--', 'sh', '-c', 'head -c 16000000 /dev/zero | tr "\\0" a']);
      expect(out).toEqual({ bytes: 16_000_000, sum: createHash('sha256').update(Buffer.alloc(16_000_000, 'a')).digest('hex'), code: 0 });
      const input = randomBytes(6_000_000);
      const back = await counted(['exec', '-i', 'p', '--', 'sh', '-c', 'cat'], input);
      expect(back).toEqual({ bytes: input.length, sum: createHash('sha256').update(input).digest('hex'), code: 0 });
    });

    it('kubectl cp into the pod and back out', async () => {
      const dir = k.runtime.containers.get('default/p/main')!.dir;
      const local = join(work, 'in.txt');
      writeFileSync(local, 'some content\n'.repeat(5000));
      const up = await kubectl(s, ['cp', local, `p:${dir}/copied.txt`]);
      expect(up.stderr).toBe('');
      expect(up.code).toBe(0);
      expect(readFileSync(join(dir, 'copied.txt'), 'utf8')).toBe(readFileSync(local, 'utf8'));
      const back = join(work, 'out.txt');
      const down = await kubectl(s, ['cp', `p:${dir}/copied.txt`, back]);
      expect(down.code).toBe(0);
      expect(existsSync(back) && readFileSync(back, 'utf8')).toBe(readFileSync(local, 'utf8'));
    });

    const portForward = (env: Record<string, string>) => portForwardEcho(s, 'p', env);

    it('kubectl port-forward (SPDY tunneled in a WebSocket) to a local TCP echo server', async () => {
      const out = await portForward({});
      expect(out).not.toContain('error');
    });

    it('port-forward to a port nothing listens on: the error stream says why', async () => {
      const closed = await new Promise<number>((res) => {
        const t = net.createServer();
        t.listen(0, '127.0.0.1', () => {
          const p = (t.address() as net.AddressInfo).port;
          t.close(() => res(p));
        });
      });
      const pf = spawn(kubectlPath(), ['--kubeconfig', s.kubeconfigPath, 'port-forward', 'pod/p', `:${closed}`]);
      let out = '';
      pf.stdout.on('data', (d) => (out += d));
      pf.stderr.on('data', (d) => (out += d));
      try {
        const local = Number((await until(() => /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out), 20_000))[1]);
        await new Promise<void>((res) => {
          const c = net.connect(local, '127.0.0.1');
          c.on('close', () => res());
          c.on('error', () => res());
          c.resume();
        });
        await until(() => out.includes(`error forwarding port ${closed} to pod p`));
      } finally {
        pf.kill('SIGKILL');
      }
    });

    it.runIf(front === 'http2')('kubectl port-forward over a plain SPDY upgrade (the fallback, and older clients)', async () => {
      const out = await portForward({ KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' });
      expect(out).not.toContain('error');
    });

    it('nodes/proxy reaches the agent with the kubelet client credentials', async () => {
      const r = await kubectl(s, ['get', '--raw', '/api/v1/nodes/node-a/proxy/healthz']);
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('ok');
    });

    // kube refuses loopback addresses for pod and service proxying: the host's own address stands in
    const hostIp = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    it.skipIf(!hostIp)('pods/proxy and services/proxy carry method, path, query and body', async () => {
      const web = http.createServer((req, res) => {
        let body = '';
        req.on('data', (d) => (body += d));
        req.on('end', () => {
          if (req.url === '/redirect') {
            res.writeHead(302, { Location: '/elsewhere' }).end();
            return;
          }
          res.writeHead(200, { 'Content-Type': 'text/plain', 'X-Backend': 'web' }).end(`${req.method} ${req.url} ${body}`);
        });
      });
      await new Promise<void>((r) => web.listen(0, '0.0.0.0', r));
      const port = (web.address() as net.AddressInfo).port;
      try {
        await request(s, 'POST', PODS, { metadata: { name: 'web' }, spec: { nodeName: 'node-a', containers: [{ name: 'main', image: 'nginx', ports: [{ containerPort: port }] }] } });
        const st = await request(s, 'PATCH', `${PODS}/web/status`, { status: { phase: 'Running', podIP: hostIp, podIPs: [{ ip: hostIp }] } }, { 'Content-Type': 'application/merge-patch+json' });
        expect(st.status).toBe(200);
        const got = await request(s, 'GET', `${PODS}/web/proxy/some/path?x=1`);
        expect(got.status).toBe(200);
        expect(got.body).toBe('GET /some/path?x=1 ');
        expect(got.headers['x-backend']).toBe('web');
        const posted = await request(s, 'POST', `${PODS}/web:${port}/proxy/submit`, { a: 1 });
        expect(posted.body).toBe('POST /submit {"a":1}');
        const moved = await request(s, 'GET', `${PODS}/web/proxy/redirect`);
        expect(moved.status).toBe(302);
        expect(moved.headers.location).toBe(`${PODS}/web/proxy/elsewhere`);
        const raw = await kubectl(s, ['get', '--raw', `${PODS}/web/proxy/via-kubectl`]);
        expect(raw.stdout).toBe('GET /via-kubectl ');

        await request(s, 'POST', '/api/v1/namespaces/default/services', { metadata: { name: 'web' }, spec: { ports: [{ name: 'http', port: 80, targetPort: port }] } });
        await request(s, 'POST', '/api/v1/namespaces/default/endpoints', { metadata: { name: 'web' }, subsets: [{ addresses: [{ ip: hostIp }], ports: [{ name: 'http', port }] }] });
        const svc = await request(s, 'GET', '/api/v1/namespaces/default/services/web:http/proxy/svc-path');
        expect(svc.body).toBe('GET /svc-path ');
        // (a services write on any front thread: proxied there, not handed to the main thread)
        const svcPost = await request(s, 'POST', '/api/v1/namespaces/default/services/web:http/proxy/p', { b: 2 });
        expect(svcPost.body).toBe('POST /p {"b":2}');
        const none = await request(s, 'GET', '/api/v1/namespaces/default/services/web:nope/proxy/');
        expect(none.status).toBe(503);
      } finally {
        web.close();
      }
    });

    it('an upgrade request to any other path is answered as a plain one', async () => {
      const r = await request(s, 'GET', '/api/v1/namespaces/default/pods/p', undefined, { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13' }, new (await import('node:https')).Agent({ ca: s.ca }));
      expect(r.status).toBe(200);
      expect(r.json().metadata.name).toBe('p');
    });

    it('an agent that cannot be reached: kube\'s translator says so on the error channel', async () => {
      await request(s, 'POST', '/api/v1/nodes', { metadata: { name: 'node-dead' }, status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: 1 } } } });
      await request(s, 'POST', PODS, { metadata: { name: 'dead' }, spec: { nodeName: 'node-dead', containers: [{ name: 'main', image: 'busybox' }] } });
      const r = await kubectl(s, ['exec', 'dead', '--', 'true']);
      expect(r.code).not.toBe(0);
      // (kube 1.33's StreamTranslatorHandler: the WebSocket is accepted, then the SPDY dial fails)
      expect(r.stderr).toContain('Internal error occurred: error sending request: Post "https://127.0.0.1:1/exec/default/dead/main?command=true&error=1&output=1": dial tcp 127.0.0.1:1: connect: connection refused');
      // port-forward's tunnel dials first (the UpgradeAwareHandler): kube's "error dialing backend" as the answer
      const pf = await request(s, 'GET', `${PODS}/dead/portforward?ports=80`, undefined, { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Protocol': 'SPDY/3.1+portforward.k8s.io' }, new (await import('node:https')).Agent({ ca: s.ca }));
      expect(pf.status).toBe(500);
      expect(pf.json().message).toBe('error dialing backend: dial tcp 127.0.0.1:1: connect: connection refused');
    });

    it('exec without an upgrade is 400, and a pod without a node is refused', async () => {
      const plain = await request(s, 'POST', `${PODS}/p/exec?command=ls&stdout=true`);
      expect(plain.status).toBe(400);
      expect(plain.json().message).toBe('Upgrade request required');
      await request(s, 'POST', PODS, { metadata: { name: 'nowhere' }, spec: { containers: [{ name: 'main', image: 'busybox' }] } });
      const r = await kubectl(s, ['exec', 'nowhere', '--', 'true']);
      expect(r.code).not.toBe(0);
    });
  });
}

describe('--kubelet-client-certificate, --kubelet-client-key, --kubelet-certificate-authority', () => {
  let s: TestServer;
  let k: TestKubelet;
  let dir: string;
  const PODS = '/api/v1/namespaces/default/pods';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kubeshard-kubelet-client-'));
    const creds = kubeletClientCredentials(dir);
    // the test kubelet's serving certificate is self-signed: it is its own authority
    const { servingCertFor } = await import('./helpers/test-kubelet.js');
    writeFileSync(join(dir, 'kubelet-ca.crt'), servingCertFor());
    writeFileSync(join(dir, 'tokens.csv'), 'getter-token,getter,uid-getter\n');
    s = await startServer({
      args: ['--kubelet-client-certificate', creds.certFile, '--kubelet-client-key', creds.keyFile, '--kubelet-certificate-authority', join(dir, 'kubelet-ca.crt'), '--authorization-mode', 'RBAC', '--token-auth-file', join(dir, 'tokens.csv')],
    });
    k = await startTestKubelet(s, 'node-c', { clientCa: creds.ca });
    await request(s, 'POST', PODS, { metadata: { name: 'c' }, spec: { nodeName: 'node-c', containers: [{ name: 'main', image: 'busybox' }] } });
    k.runtime.start('default', 'c', 'main', 'echo authenticated');
  }, 60_000);

  afterAll(async () => {
    await k?.close();
    await s?.stop();
    s?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('presents the client certificate to the agent and verifies the agent\'s', async () => {
    await until(() => readFileSync(k.runtime.containers.get('default/c/main')!.logPath, 'utf8').includes('authenticated'));
    const logs = await kubectl(s, ['logs', 'c']);
    expect(logs.stdout).toBe('authenticated\n');
    const exec = await kubectl(s, ['exec', 'c', '--', 'echo', 'hi']);
    expect(exec.stdout).toBe('hi\n');
    expect(k.clientNames.length).toBeGreaterThanOrEqual(2);
    expect(new Set(k.clientNames)).toEqual(new Set(['kube-apiserver-kubelet-client']));
  });

  it('a WebSocket exec (a GET) also needs create on pods/exec', async () => {
    const rbac = '/apis/rbac.authorization.k8s.io/v1/namespaces/default';
    await request(s, 'POST', `${rbac}/roles`, { metadata: { name: 'exec-get' }, rules: [{ apiGroups: [''], resources: ['pods', 'pods/exec'], verbs: ['get'] }] });
    await request(s, 'POST', `${rbac}/rolebindings`, { metadata: { name: 'exec-get' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'exec-get' }, subjects: [{ kind: 'User', name: 'getter' }] });
    const denied = await until(async () => {
      const r = await kubectl(s, ['--token', 'getter-token', 'exec', 'c', '--', 'true']);
      return r.stderr.includes('cannot create') ? r : undefined;
    });
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain('pods "c" is forbidden: User "getter" cannot create resource "pods/exec" in API group "" in the namespace "default"');
    // (kubectl falls back to a SPDY POST after the refused WebSocket: the GET itself, by hand)
    const status = await new Promise<number>((res, rej) => {
      const ws = new WebSocket(`wss://127.0.0.1:${s.port}${PODS}/c/exec?command=true&stdout=true`, ['v5.channel.k8s.io'], { ca: s.ca, headers: { Authorization: 'Bearer getter-token' } });
      ws.once('unexpected-response', (_req, r) => res(r.statusCode ?? 0));
      ws.once('open', () => rej(new Error('the WebSocket was accepted')));
      ws.once('error', () => {});
    });
    expect(status).toBe(403);
  });
});
