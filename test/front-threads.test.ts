// Several front threads (issue 18): each thread has its own listener on the port, caches
// and watchers; the kernel deals the connections out over the listeners (SO_REUSEPORT, by a
// hash of each connection's addresses). A client must not tell: what one connection wrote,
// every other connection reads, updates and watches at once; Service addresses stay unique
// (their allocator is the main thread's); /metrics counts the requests of every thread;
// shutdown is clean with connections still open; and another process cannot take the port.
// Each test spreads its requests over 16 connections: the chance that all land on one of two
// threads is 1 in 2^15.
import { describe, it, expect, afterAll, beforeAll } from 'vitest';
import https from 'node:https';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request, startServer, type Reply, type TestServer } from './helpers/server.js';

const MAIN = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', 'dist', 'src', 'main.js');
const CONNECTIONS = 16;
let s: TestServer;
let conns: https.Agent[] = [];

beforeAll(async () => {
  s = await startServer({ args: ['--front-threads', '2'] });
  conns = Array.from({ length: CONNECTIONS }, () => new https.Agent({ keepAlive: true, ca: s.ca, maxSockets: 1 }));
}, 60_000);
afterAll(async () => {
  for (const c of conns) c.destroy();
  await s?.stop();
  s?.cleanup();
});

function send(conn: https.Agent, method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<Reply> {
  return request(s, method, path, body, body === undefined ? {} : { 'content-type': contentType }, conn);
}

const CM = '/api/v1/namespaces/default/configmaps';

describe('several front threads', () => {
  it('what one connection writes, every other reads, updates and deletes at once', async () => {
    for (let i = 0; i < CONNECTIONS; i++) {
      const name = `rw-${i}`;
      const created = await send(conns[i], 'POST', CM, { metadata: { name }, data: { n: '0' } });
      expect(created.status).toBe(201);
      let rv = created.json().metadata.resourceVersion;
      // read back on every other connection, and updated from the next one with the version just returned
      for (let j = 0; j < CONNECTIONS; j++) {
        const got = await send(conns[j], 'GET', `${CM}/${name}`);
        expect(got.status, `GET on connection ${j}`).toBe(200);
        expect(got.json().metadata.resourceVersion).toBe(rv);
      }
      const next = conns[(i + 1) % CONNECTIONS];
      const updated = await send(next, 'PUT', `${CM}/${name}`, { metadata: { name, resourceVersion: rv }, data: { n: '1' } });
      expect(updated.status, updated.body.slice(0, 200)).toBe(200);
      rv = updated.json().metadata.resourceVersion;
      const patched = await send(conns[(i + 2) % CONNECTIONS], 'PATCH', `${CM}/${name}`, { metadata: { resourceVersion: rv }, data: { n: '2' } }, 'application/merge-patch+json');
      expect(patched.status, patched.body.slice(0, 200)).toBe(200);
      expect((await send(conns[(i + 3) % CONNECTIONS], 'DELETE', `${CM}/${name}`)).status).toBe(200);
      expect((await send(conns[(i + 4) % CONNECTIONS], 'GET', `${CM}/${name}`)).status).toBe(404);
    }
  });

  it('a namespace created on one connection takes objects from any other at once', async () => {
    for (let i = 0; i < CONNECTIONS; i++) {
      const ns = `ft-ns-${i}`;
      expect((await send(conns[i], 'POST', '/api/v1/namespaces', { metadata: { name: ns } })).status).toBe(201);
      const r = await send(conns[(i + 1) % CONNECTIONS], 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'c' } });
      expect(r.status, r.body.slice(0, 200)).toBe(201);
    }
  });

  it('every watcher hears a write, whichever thread holds it and whichever took the write', async () => {
    const from = (await send(conns[0], 'GET', CM)).json().metadata.resourceVersion;
    const watches = conns.map(
      (conn) =>
        new Promise<string[]>((resolve, reject) => {
          const names: string[] = [];
          const req = https.get({ host: '127.0.0.1', port: s.port, path: `${CM}?watch=true&resourceVersion=${from}&timeoutSeconds=10`, ca: s.ca, headers: { authorization: `Bearer ${s.token}` } }, (res) => {
            let buf = '';
            res.on('data', (d) => {
              buf += d;
              let nl: number;
              while ((nl = buf.indexOf('\n')) >= 0) {
                const line = buf.slice(0, nl).trim();
                buf = buf.slice(nl + 1);
                if (!line) continue;
                const ev = JSON.parse(line);
                names.push(`${ev.type} ${ev.object.metadata.name}`);
                if (names.length === 4) {
                  req.destroy();
                  resolve(names);
                }
              }
            });
            res.on('end', () => resolve(names));
          });
          req.on('error', (e) => (names.length === 4 ? undefined : reject(e)));
        }),
    );
    await new Promise((r) => setTimeout(r, 300));
    for (let k = 0; k < 2; k++) {
      expect((await send(conns[k * 5], 'POST', CM, { metadata: { name: `w-${k}` } })).status).toBe(201);
      expect((await send(conns[k * 5 + 1], 'DELETE', `${CM}/w-${k}`)).status).toBe(200);
    }
    for (const names of await Promise.all(watches)) expect(names).toEqual(['ADDED w-0', 'DELETED w-0', 'ADDED w-1', 'DELETED w-1']);
  });

  it('Services created at once over every connection get distinct addresses (the main thread allocates them)', async () => {
    const created = await Promise.all(
      conns.map((conn, i) => send(conn, 'POST', '/api/v1/namespaces/default/services', { metadata: { name: `svc-${i}` }, spec: { ports: [{ port: 80 }], type: 'NodePort' } })),
    );
    for (const r of created) expect(r.status, r.body.slice(0, 200)).toBe(201);
    const ips = created.map((r) => r.json().spec.clusterIP);
    const nodePorts = created.map((r) => r.json().spec.ports[0].nodePort);
    expect(new Set(ips).size).toBe(CONNECTIONS);
    expect(new Set(nodePorts).size).toBe(CONNECTIONS);
  });

  it('/metrics counts the requests of every thread, on any connection', async () => {
    const path = `${CM}/metrics-probe`;
    for (const conn of conns) expect((await send(conn, 'GET', path)).status).toBe(404);
    const line = /apiserver_request_total\{[^}]*code="404"[^}]*resource="configmaps"[^}]*verb="GET"[^}]*\} (\d+)/;
    for (const conn of conns.slice(0, 4)) {
      const text = (await send(conn, 'GET', '/metrics')).body;
      const m = text.match(line);
      expect(m, 'the 404 GETs of configmaps').not.toBeNull();
      expect(Number(m![1])).toBeGreaterThanOrEqual(CONNECTIONS);
      // the process metrics once, not once per thread
      expect(text.match(/^process_start_time_seconds /gm)).toHaveLength(1);
    }
  });

  it('another process cannot take the port', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kubeshard-port-'));
    try {
      const other = spawnSync(process.execPath, [MAIN, '--secure-port', String(s.port), '--bind-address', '127.0.0.1', '--data-dir', dir, '--front-threads', '2'], { encoding: 'utf8', timeout: 60_000 });
      expect(other.status).not.toBe(0);
      expect(other.stdout + other.stderr).toContain('address already in use');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops cleanly with connections still open', async () => {
    // warm every connection, so that both threads hold open keep-alive sockets
    for (const conn of conns) await send(conn, 'GET', '/healthz');
    const code = await s.stop();
    expect(code).toBe(0);
    expect(s.output()).not.toMatch(/Aborted|core dumped|FATAL/);
  });
});
