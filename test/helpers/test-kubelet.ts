// A small stand-in for the node agent in tests of the connect subresources: an HTTPS server
// on a free port that hands its streaming paths to src/node/streaming (as the agent's server
// does after authentication), over a runtime whose "containers" are local processes started
// by the test (sh -c ...), whose exec spawns the command given, and whose port-forward
// connects to the local host's port. It also registers its Node (InternalIP 127.0.0.1 and
// the port in status.daemonEndpoints) with the test server. With spdyOnly it answers every
// WebSocket upgrade as a real kubelet (1.33) answers kubectl's v5.channel.k8s.io or
// SPDY/3.1+portforward.k8s.io: 403 from its WebSocket handshake (x/net/websocket refuses a
// subprotocol it does not serve), so only SPDY/3.1 upgrades reach src/node/streaming.
import { fileURLToPath } from 'node:url';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import https from 'node:https';
import net from 'node:net';
import { PassThrough, type Duplex, type Readable } from 'node:stream';
import { freePort, request, type TestServer } from './server.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const streaming = (await import(join(ROOT, 'dist', 'src', 'node', 'streaming', 'index.js'))) as typeof import('../../src/node/streaming/index.js');
const { RuntimeNotFoundError } = (await import(join(ROOT, 'dist', 'src', 'node', 'runtime.js'))) as typeof import('../../src/node/runtime.js');
type Runtime = import('../../src/node/runtime.js').ContainerRuntime;
type ExecSession = import('../../src/node/runtime.js').ExecSession;

interface Container {
  dir: string;
  logPath: string;
  proc: ChildProcess;
  exited: Promise<number>;
  done: boolean;
}

/** A runtime of local processes, for tests (containers are started by the test itself). */
export class LocalRuntime implements Runtime {
  readonly version = 'test://0.1.0';
  readonly containers = new Map<string, Container>();
  private root = mkdtempSync(join(tmpdir(), 'kubeshard-kubelet-'));
  /** exec processes running now */
  execs = 0;
  /** log follows running now (each ends when the container does or its client goes) */
  follows = 0;
  /** resize events seen by exec sessions */
  resizes: Array<[number, number]> = [];

  /** Starts a container: sh -c script, its output appended to its log (stdin: a pipe that attach may write to). */
  start(namespace: string, pod: string, container: string, script: string, opts: { stdin?: boolean } = {}): Container {
    const dir = mkdtempSync(join(this.root, `${pod}-${container}-`));
    const logPath = join(dir, 'log');
    writeFileSync(logPath, '');
    const fd = openSync(logPath, 'a');
    const proc = spawn('sh', ['-c', script], { cwd: dir, stdio: [opts.stdin ? 'pipe' : 'ignore', fd, fd] });
    const c: Container = { dir, logPath, proc, done: false, exited: new Promise((res) => proc.on('exit', (code) => res(code ?? 1))) };
    void c.exited.then(() => (c.done = true));
    this.containers.set(`${namespace}/${pod}/${container}`, c);
    return c;
  }

  private find(ref: { namespace: string; pod: string; container: string }): Container {
    const c = this.containers.get(`${ref.namespace}/${ref.pod}/${ref.container}`);
    if (!c) throw new RuntimeNotFoundError(`container ${ref.container} of pod ${ref.namespace}/${ref.pod} not found`);
    return c;
  }

  async syncPod(): Promise<void> {}
  async killPod(): Promise<void> {}
  podStatus(): undefined {
    return undefined;
  }

  async logs(ref: Parameters<Runtime['logs']>[0], opts: Parameters<Runtime['logs']>[1] & { fromEnd?: boolean }, signal: AbortSignal): Promise<Readable> {
    const c = this.find(ref);
    const text = readFileSync(c.logPath);
    let start = opts.fromEnd ? text.length : 0;
    if (opts.tailLines !== undefined) {
      const lines = text.toString().split('\n');
      if (lines[lines.length - 1] === '') lines.pop();
      const kept = lines.slice(Math.max(0, lines.length - opts.tailLines));
      start = text.length - Buffer.byteLength(kept.length ? `${kept.join('\n')}\n` : '');
    }
    if (!opts.follow) return createReadStream(c.logPath, { start, end: text.length - 1 < start ? start - 1 : text.length - 1 });
    // follow: what is there, then what the process appends, until it exits (or the client goes)
    const out = new PassThrough();
    let pos = start;
    this.follows++;
    const pump = async (): Promise<void> => {
      for (;;) {
        if (signal.aborted) return void out.destroy();
        const size = statSync(c.logPath).size;
        if (size > pos) {
          const b = readFileSync(c.logPath).subarray(pos, size);
          pos = size;
          out.write(b);
        } else if (c.done) {
          out.end();
          return;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    void pump().finally(() => this.follows--);
    return out;
  }

  async exec(ref: Parameters<Runtime['exec']>[0], command: string[], opts: Parameters<Runtime['exec']>[2]): Promise<ExecSession> {
    const c = this.find(ref);
    const p = spawn(command[0], command.slice(1), { cwd: c.dir, stdio: ['pipe', 'pipe', 'pipe'] });
    this.execs++;
    p.once('exit', () => this.execs--);
    const exit = new Promise<{ code: number } | { error: string }>((res) => {
      p.once('error', (e) => res({ error: `exec: ${JSON.stringify(command[0])}: ${e.message}` }));
      p.once('exit', (code, sig) => res({ code: code ?? (sig ? 128 + 9 : 1) }));
    });
    if (!opts.stdin) p.stdin.end();
    let stderr: Readable | undefined = p.stderr;
    if (opts.tty) {
      p.stderr.pipe(p.stdout as unknown as NodeJS.WritableStream, { end: false });
      stderr = undefined;
    }
    return {
      stdin: opts.stdin ? p.stdin : undefined,
      stdout: opts.stdout ? p.stdout : undefined,
      stderr: opts.stderr ? stderr : undefined,
      resize: (w, h) => this.resizes.push([w, h]),
      exit,
      close: () => p.kill('SIGKILL'),
    };
  }

  /** The container's output from now on, and its stdin when it has one, until it exits. */
  async attach(ref: Parameters<Runtime['attach']>[0], opts: Parameters<Runtime['attach']>[1]): Promise<ExecSession> {
    const c = this.find(ref);
    const abort = new AbortController();
    const stdout = opts.stdout ? await this.logs(ref, { follow: true, fromEnd: true }, abort.signal) : undefined;
    return {
      stdin: opts.stdin && c.proc.stdin ? c.proc.stdin : undefined,
      stdout,
      resize: (w, h) => this.resizes.push([w, h]),
      exit: c.exited.then((code) => ({ code })),
      close: () => abort.abort(),
    };
  }

  portForward(_ref: unknown, port: number): Promise<Duplex> {
    return new Promise((res, rej) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => res(s));
      s.once('error', rej);
    });
  }

  async checkpoint(): Promise<void> {}

  async close(): Promise<void> {
    for (const c of this.containers.values()) c.proc.kill('SIGKILL');
    rmSync(this.root, { recursive: true, force: true });
  }
}

export interface TestKubelet {
  port: number;
  /** the PEM certificate the kubelet serves with (self-signed: its own authority) */
  servingCert: string;
  /** the common names of the client certificates its requests came with ('' without one) */
  clientNames: string[];
  /** the Upgrade header of each upgrade request it got, lower-cased, and whether it was refused */
  upgrades: Array<{ upgrade: string; path: string; refused: boolean }>;
  runtime: LocalRuntime;
  nodeName: string;
  close(): Promise<void>;
}

let cert: { cert: string; key: string } | undefined;
function servingCert(): { cert: string; key: string } {
  if (cert) return cert;
  const d = mkdtempSync(join(tmpdir(), 'kubeshard-kubelet-cert-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'k.pem', '-out', 'c.pem', '-days', '2', '-subj', '/CN=test-kubelet', '-addext', 'subjectAltName=IP:127.0.0.1'], { cwd: d, stdio: 'ignore' });
  cert = { cert: readFileSync(join(d, 'c.pem'), 'utf8'), key: readFileSync(join(d, 'k.pem'), 'utf8') };
  rmSync(d, { recursive: true, force: true });
  return cert;
}

/** The test kubelets' serving certificate (PEM). */
export function servingCertFor(): string {
  return servingCert().cert;
}

/** A CA and a client certificate it signed (the API server's kubelet client credentials), in dir. */
export function kubeletClientCredentials(dir: string): { ca: string; certFile: string; keyFile: string } {
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=kubelet-client-ca']);
  run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'client.key', '-out', 'client.csr', '-subj', '/O=kubeadm:cluster-admins/CN=kube-apiserver-kubelet-client']);
  writeFileSync(join(dir, 'ext'), 'extendedKeyUsage=clientAuth\n');
  run(['x509', '-req', '-in', 'client.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'client.crt', '-days', '2', '-extfile', 'ext']);
  return { ca: readFileSync(join(dir, 'ca.crt'), 'utf8'), certFile: join(dir, 'client.crt'), keyFile: join(dir, 'client.key') };
}

/** Starts a test kubelet and registers its Node with the server (clientCa: client certificates it requires). */
export async function startTestKubelet(s: TestServer, nodeName: string, opts: { clientCa?: string; spdyOnly?: boolean } = {}): Promise<TestKubelet> {
  const runtime = new LocalRuntime();
  const clientNames: string[] = [];
  const upgrades: TestKubelet['upgrades'] = [];
  const server = https.createServer({ ...servingCert(), ...(opts.clientCa ? { requestCert: true, rejectUnauthorized: true, ca: opts.clientCa } : {}) });
  const seen = (req: import('node:http').IncomingMessage) => clientNames.push(String((req.socket as import('node:tls').TLSSocket).getPeerCertificate?.()?.subject?.CN ?? ''));
  server.on('request', (req, res) => {
    seen(req);
    if (streaming.isStreamingPath(req.url ?? '/')) streaming.serveStreaming(req, res, runtime);
    else if (req.url === '/healthz') res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
    else res.writeHead(404).end('404 page not found\n');
  });
  server.on('upgrade', (req, socket: Duplex, head: Buffer) => {
    seen(req);
    const upgrade = String(req.headers.upgrade ?? '').toLowerCase();
    const refused = !!opts.spdyOnly && upgrade === 'websocket';
    upgrades.push({ upgrade, path: (req.url ?? '/').split('?')[0], refused });
    if (refused) {
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    if (streaming.isStreamingPath(req.url ?? '/')) streaming.serveStreamingUpgrade(req, socket, head, runtime);
    else socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
  });
  const port = await freePort();
  await new Promise<void>((res) => server.listen(port, '127.0.0.1', res));
  const node = await request(s, 'POST', '/api/v1/nodes', {
    metadata: { name: nodeName },
    status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: port } } },
  });
  if (node.status !== 201) throw new Error(`node ${nodeName}: ${node.status} ${node.body}`);
  return {
    port,
    servingCert: servingCert().cert,
    clientNames,
    upgrades,
    runtime,
    nodeName,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await runtime.close();
    },
  };
}
