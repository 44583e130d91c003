// Test support: real etcd members (Debian's /usr/bin/etcd) on free loopback ports in a
// private temp dir, for the client's and the backend's tests. Not used by the server.
//
// Thread ownership: the test's thread; it owns the child processes it spawns and kills them
// (by their own pids) in stop().
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ETCD_BIN = process.env.ETCD_BIN ?? '/usr/bin/etcd';
export const etcdAvailable = (): boolean => existsSync(ETCD_BIN);

function portFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = createServer();
    s.once('error', () => res(false));
    s.listen(port, '127.0.0.1', () => s.close(() => res(true)));
  });
}

/** n distinct free loopback ports below the ephemeral range (tests that start etcd or the reference beside it). */
export async function freePorts(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < 400 && out.length < n; i++) {
    const p = 20000 + Math.floor(Math.random() * 12000);
    if (!out.includes(p) && (await portFree(p))) out.push(p);
  }
  if (out.length < n) throw new Error('no free ports');
  return out;
}

export interface Member {
  name: string;
  clientUrl: string;
  peerUrl: string;
  proc: ChildProcess | undefined;
  log: string;
}

export interface TestCluster {
  dir: string;
  members: Member[];
  /** the client URLs, in member order */
  endpoints: string[];
  /** SIGKILL one member */
  kill(i: number): Promise<void>;
  /** starts a killed member again on its data dir and waits until it answers /health */
  restart(i: number): Promise<void>;
  stop(): Promise<void>;
}

/** TLS for the members' client URLs: their serving pair, and the CA that client certificates must chain to. */
export interface ClusterTls {
  certFile: string;
  keyFile: string;
  caFile: string;
  /** a client pair for the health check */
  clientCertFile: string;
  clientKeyFile: string;
}

function tlsHealth(url: string, tls: ClusterTls): Promise<boolean> {
  return new Promise((res) => {
    const req = httpsGet(`${url}/health`, { ca: readFileSync(tls.caFile), cert: readFileSync(tls.clientCertFile), key: readFileSync(tls.clientKeyFile) }, (r) => {
      let body = '';
      r.on('data', (d) => (body += d));
      r.on('end', () => res(r.statusCode === 200 && body.includes('true')));
    });
    req.on('error', () => res(false));
  });
}

async function healthy(url: string, timeoutMs: number, tls?: ClusterTls): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    try {
      if (tls) {
        if (await tlsHealth(url, tls)) return true;
      } else {
        const r = await fetch(`${url}/health`);
        if (r.ok && (await r.text()).includes('true')) return true;
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/** Starts an n-member cluster (its data under baseDir) and waits until every member answers /health. */
export async function startCluster(n = 1, extraArgs: string[] = [], tls?: ClusterTls, baseDir = tmpdir()): Promise<TestCluster> {
  const dir = mkdtempSync(join(baseDir, 'kubeshard-etcd-'));
  const ports = await freePorts(2 * n);
  const members: Member[] = [];
  for (let i = 0; i < n; i++) {
    members.push({ name: `m${i}`, clientUrl: `${tls ? 'https' : 'http'}://127.0.0.1:${ports[2 * i]}`, peerUrl: `http://127.0.0.1:${ports[2 * i + 1]}`, proc: undefined, log: '' });
  }
  const initial = members.map((m) => `${m.name}=${m.peerUrl}`).join(',');
  const launch = (m: Member): void => {
    const p = spawn(
      ETCD_BIN,
      [
        '--name', m.name,
        '--data-dir', join(dir, m.name),
        '--listen-client-urls', m.clientUrl,
        '--advertise-client-urls', m.clientUrl,
        '--listen-peer-urls', m.peerUrl,
        '--initial-advertise-peer-urls', m.peerUrl,
        '--initial-cluster', initial,
        '--initial-cluster-state', 'new',
        '--initial-cluster-token', `kubeshard-test-${ports[0]}`,
        ...(tls ? ['--cert-file', tls.certFile, '--key-file', tls.keyFile, '--trusted-ca-file', tls.caFile, '--client-cert-auth'] : []),
        ...extraArgs,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const keep = (b: Buffer) => {
      m.log = (m.log + b.toString()).slice(-20000);
    };
    p.stdout!.on('data', keep);
    p.stderr!.on('data', keep);
    m.proc = p;
  };
  // (a member started again on its data dir ignores the --initial-* flags)
  for (const m of members) launch(m);
  const ok = await Promise.all(members.map((m) => healthy(m.clientUrl, 30_000, tls)));
  const cluster: TestCluster = {
    dir,
    members,
    endpoints: members.map((m) => m.clientUrl),
    async kill(i) {
      const p = members[i].proc;
      members[i].proc = undefined;
      if (!p || p.exitCode !== null) return;
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGKILL');
      await exited;
    },
    async restart(i) {
      if (members[i].proc) return;
      launch(members[i]);
      if (!(await healthy(members[i].clientUrl, 30_000, tls))) throw new Error(`etcd member ${members[i].name} did not come back:\n${members[i].log.slice(-2000)}`);
    },
    async stop() {
      await Promise.all(members.map((_, i) => cluster.kill(i)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (!ok.every(Boolean)) {
    const logs = members.map((m) => `${m.name}: ${m.log.slice(-2000)}`).join('\n');
    await cluster.stop();
    throw new Error(`etcd cluster did not become healthy:\n${logs}`);
  }
  return cluster;
}
