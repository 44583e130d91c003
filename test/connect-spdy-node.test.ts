// The connect subresources against a node that speaks SPDY only, as a real kubelet does
// (test/helpers/test-kubelet.ts with spdyOnly: every WebSocket upgrade gets the 403 a 1.33
// kubelet gives kubectl's v5.channel.k8s.io and SPDY/3.1+portforward.k8s.io). kubectl 1.33
// speaks WebSockets to the server; the server translates exec and attach to SPDY
// (src/kubelet/stream-translator.ts) and tunnels port-forward's SPDY to a plain SPDY upgrade
// (src/kubelet/stream-tunnel.ts), as kube-apiserver 1.33 does, on both front ends: exec's
// exit code, exec -i, cp both ways (stdin's end through v5's CLOSE), attach -i and
// port-forward all work, and the node only ever sees SPDY/3.1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request, startServer, type TestServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';
import { portForwardEcho } from './helpers/port-forward.js';
import { startTestKubelet, type TestKubelet } from './helpers/test-kubelet.js';

const FRONTS = process.env.KUBESHARD_TEST_FRONT === 'http2' ? (['http2'] as const) : (['uws', 'http2'] as const);
for (const front of FRONTS) {
  describe(`a SPDY-only node through the ${front} front end`, () => {
    let s: TestServer;
    let k: TestKubelet;
    let work: string;
    const PODS = '/api/v1/namespaces/default/pods';
    const running = async (name: string, container: Record<string, unknown> = {}) => {
      const pod = await request(s, 'POST', PODS, { metadata: { name }, spec: { nodeName: 'node-s', containers: [{ name: 'main', image: 'busybox', ...container }] } });
      expect(pod.status).toBe(201);
      const st = await request(s, 'PATCH', `${PODS}/${name}/status`, { status: { phase: 'Running' } }, { 'Content-Type': 'application/merge-patch+json' });
      expect(st.status).toBe(200);
    };

    beforeAll(async () => {
      s = await startServer({ args: [`--front-end=${front}`] });
      k = await startTestKubelet(s, 'node-s', { spdyOnly: true });
      work = mkdtempSync(join(tmpdir(), 'kubeshard-spdy-node-'));
      await running('p');
      k.runtime.start('default', 'p', 'main', 'sleep 120');
    }, 60_000);

    afterAll(async () => {
      await k?.close();
      await s?.stop();
      s?.cleanup();
      if (work) rmSync(work, { recursive: true, force: true });
    });

    it('the node refuses WebSocket upgrades (as a 1.33 kubelet answers v5)', async () => {
      const r = await new Promise<number>((res, rej) => {
        import('node:https').then(({ request: req }) => {
          const q = req({ host: '127.0.0.1', port: k.port, path: '/exec/default/p/main?command=true&output=1', rejectUnauthorized: false, headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Protocol': 'v5.channel.k8s.io' } });
          q.on('response', (a) => res(a.statusCode ?? 0));
          q.on('upgrade', () => rej(new Error('upgraded')));
          q.on('error', rej);
          q.end();
        }, rej);
      });
      expect(r).toBe(403);
      k.upgrades.length = 0;
    });

    it('kubectl exec: stdout, stderr and the exit code', async () => {
      const ok = await kubectl(s, ['exec', 'p', '--', 'sh', '-c', 'echo out; echo err >&2']);
      expect(ok.stdout).toBe('out\n');
      expect(ok.stderr).toBe('err\n');
      expect(ok.code).toBe(0);
      const fail = await kubectl(s, ['exec', 'p', '--', 'sh', '-c', 'echo before; exit 7']);
      expect(fail.stdout).toBe('before\n');
      expect(fail.code).toBe(7);
      expect(fail.stderr).toContain('command terminated with exit code 7');
    });

    it('kubectl exec -i: stdin passed through and ended', async () => {
      const r = await kubectl(s, ['exec', '-i', 'p', '--', 'sh', '-c', 'tr a-z A-Z; echo done'], { input: 'spdy only\n' });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe('SPDY ONLY\ndone\n');
      expect(r.code).toBe(0);
    });

    it('kubectl cp into the pod and back out', async () => {
      const dir = k.runtime.containers.get('default/p/main')!.dir;
      const local = join(work, 'in.txt');
      writeFileSync(local, 'spdy content\n'.repeat(4000));
      const up = await kubectl(s, ['cp', local, `p:${dir}/copied.txt`]);
      expect(up.stderr).toBe('');
      expect(up.code).toBe(0);
      expect(readFileSync(join(dir, 'copied.txt'), 'utf8')).toBe(readFileSync(local, 'utf8'));
      const back = join(work, 'out.txt');
      const down = await kubectl(s, ['cp', `p:${dir}/copied.txt`, back]);
      expect(down.code).toBe(0);
      expect(existsSync(back) && readFileSync(back, 'utf8')).toBe(readFileSync(local, 'utf8'));
    });

    it('kubectl attach -i', async () => {
      await running('att', { stdin: true, stdinOnce: true });
      k.runtime.start('default', 'att', 'main', 'while read line; do echo "got $line"; done; echo bye', { stdin: true });
      const r = await kubectl(s, ['attach', '-i', 'att'], { input: 'one\ntwo\n' });
      expect(r.stdout).toBe('got one\ngot two\nbye\n');
      expect(r.code).toBe(0);
    });

    it('kubectl port-forward', async () => {
      const out = await portForwardEcho(s, 'p');
      expect(out).not.toContain('error');
    });

    it('a container the node does not have: its answer on the error channel', async () => {
      await running('ghost');
      const r = await kubectl(s, ['exec', 'ghost', '--', 'true']);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('Internal error occurred: container main of pod default/ghost not found');
    });

    it('the node saw SPDY/3.1 upgrades only', () => {
      expect(k.upgrades.length).toBeGreaterThanOrEqual(8);
      expect(k.upgrades.filter((u) => u.upgrade !== 'spdy/3.1')).toEqual([]);
      expect(new Set(k.upgrades.map((u) => u.path.split('/')[1]))).toEqual(new Set(['exec', 'attach', 'portForward']));
    });
  });
}

describe('the gates off: WebSockets go to the node as they came (kube 1.33 with TranslateStreamCloseWebsocketRequests and PortForwardWebsockets off)', () => {
  let s: TestServer;
  let k: TestKubelet;
  const PODS = '/api/v1/namespaces/default/pods';

  beforeAll(async () => {
    s = await startServer({ args: ['--front-end=http2', '--feature-gates=TranslateStreamCloseWebsocketRequests=false,PortForwardWebsockets=false'] });
    k = await startTestKubelet(s, 'node-s', { spdyOnly: true });
    await request(s, 'POST', PODS, { metadata: { name: 'p' }, spec: { nodeName: 'node-s', containers: [{ name: 'main', image: 'busybox' }] } });
    k.runtime.start('default', 'p', 'main', 'sleep 60');
  }, 60_000);

  afterAll(async () => {
    await k?.close();
    await s?.stop();
    s?.cleanup();
  });

  it('the node refuses kubectl\'s WebSocket, and kubectl\'s SPDY fallback is joined to it byte for byte', async () => {
    const r = await kubectl(s, ['exec', 'p', '--', 'sh', '-c', 'exit 5']);
    expect(r.code).toBe(5);
    expect(k.upgrades.map((u) => [u.upgrade, u.refused])).toEqual([
      ['websocket', true],
      ['spdy/3.1', false],
    ]);
  });
});
