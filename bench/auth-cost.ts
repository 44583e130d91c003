// What each authenticator costs a GET (issue 21's bench figure), and what the node:http2 front
// end costs a client certificate against uWS. Two kubeshard servers start with the same
// authenticators: a static token file, an OIDC issuer (a local HTTPS provider started here,
// discovery document and JWKS), a webhook token authenticator (a local HTTPS TokenReview
// server; its answers cached by the API server) and RBAC; one also with --client-ca-file (so
// the node:http2 front end, as `auto` chooses), the other with --front-end=uws. Each
// credential's user is bound to a ClusterRole that may read ConfigMaps, and every run GETs
// one ConfigMap over a fixed number of keep-alive connections, one request in flight on each.
// Rounds alternate every (server, credential, protocol) in turn, so each round's figures are
// taken seconds apart: on a shared machine only ratios within a round mean anything.
//
//   npm run build && node dist/bench/auth-cost.js [--seconds 5] [--rounds 3] [--connections 16]
//     [--only uws-static,h2-cert,...] [--h2-sessions N --h2-streams 1] [--server-node-args "--cpu-prof --cpu-prof-dir=/tmp/prof"]
//     [--json FILE]   (every figure, the users the credentials were, the providers' calls during the rounds)
//
// HTTP/1.1 load comes from the native client (native/loadgen, with the client certificate
// when one is used; the JS lean client where it cannot be built), HTTP/2 load from node's
// http2 client (here: N sessions, --h2-streams in flight on each). The server's CPU per
// request (from /proc) is printed beside the rate: it depends less on how busy the machine is.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import http2 from 'node:http2';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { api, fromKubeconfig, freePort, sampleProc, GO_TLS13_CIPHERS, type LoadResult, type Target } from './lib.js';
import { nativeLoad } from './native-load.js';
import { rawLoad } from './raw-load.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const seconds = Number(opt('seconds', '5'));
const rounds = Number(opt('rounds', '3'));
const connections = Number(opt('connections', '16'));
const h2Streams = Number(opt('h2-streams', '1'));
/** HTTP/2 connections: as many as the HTTP/1.1 runs' by default (one stream each); client-go multiplexes on one */
const h2Sessions = Number(opt('h2-sessions', String(connections)));
const only = opt('only', '');
const serverNodeArgs = opt('server-node-args', '').split(' ').filter(Boolean);
const jsonOut = opt('json', '');
const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const NS = 'bench-auth';
const PATH = `/api/v1/namespaces/${NS}/configmaps/one`;
const GROUP = 'bench-readers';

// ---- credentials and the providers behind them -------------------------------------------

const dir = mkdtempSync(join(tmpdir(), 'kubeshard-authbench-'));
const ssl = (a: string[]) => execFileSync('openssl', a, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });

/** a CA; a serving certificate for 127.0.0.1 (issuer and webhook); a client certificate of a reader */
function makeCerts(): void {
  ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key']);
  ssl(['req', '-x509', '-new', '-key', 'ca.key', '-sha256', '-days', '2', '-subj', '/CN=bench-auth-ca', '-out', 'ca.crt']);
  for (const [name, subj, ext] of [
    ['tls', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n'],
    ['client', `/O=${GROUP}/CN=cert-user`, 'extendedKeyUsage=clientAuth\n'],
  ]) {
    ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`]);
    ssl(['req', '-new', '-key', `${name}.key`, '-subj', subj, '-out', `${name}.csr`]);
    writeFileSync(join(dir, `${name}.ext`), ext);
    ssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
  }
}

/** An OpenID provider: discovery document and JWKS over HTTPS, and one RS256 ID token (valid for a day). */
async function startIssuer(): Promise<{ url: string; token: string; hits: () => number; close: () => void }> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  let url = '';
  let hits = 0;
  const server = https.createServer({ key: readFileSync(join(dir, 'tls.key')), cert: readFileSync(join(dir, 'tls.crt')) }, (req, res) => {
    hits++;
    res.setHeader('content-type', 'application/json');
    if (req.url === '/.well-known/openid-configuration')
      res.end(JSON.stringify({ issuer: url, jwks_uri: `${url}/keys`, id_token_signing_alg_values_supported: ['RS256'], response_types_supported: ['id_token'], subject_types_supported: ['public'] }));
    else if (req.url === '/keys') res.end(JSON.stringify({ keys: [jwk] }));
    else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({ iss: url, sub: 'oidc-user', aud: 'kubeshard', groups: [GROUP], iat: now, exp: now + 86400 }).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(privateKey);
  return { url, token, hits: () => hits, close: () => (server.closeAllConnections(), server.close()) };
}

/** A TokenReview webhook (v1) that knows one token; counts its calls (the API server caches its answers). */
async function startWebhook(): Promise<{ kubeconfig: string; calls: () => number; close: () => void }> {
  let calls = 0;
  const server = https.createServer({ key: readFileSync(join(dir, 'tls.key')), cert: readFileSync(join(dir, 'tls.crt')) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      calls++;
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const ok = review.spec?.token === 'webhook-token';
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'TokenReview', status: ok ? { authenticated: true, user: { username: 'webhook-user', uid: 'w1', groups: [GROUP] } } : { authenticated: false } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const kubeconfig = join(dir, 'webhook.kubeconfig');
  writeFileSync(
    kubeconfig,
    ['apiVersion: v1', 'kind: Config', 'clusters:', '- name: hook', '  cluster:', `    server: https://127.0.0.1:${port}/authenticate`, '    certificate-authority: ca.crt', 'users:', '- name: apiserver', '  user: {}', 'contexts:', '- name: hook', '  context: {cluster: hook, user: apiserver}', 'current-context: hook', ''].join('\n'),
  );
  return { kubeconfig, calls: () => calls, close: () => (server.closeAllConnections(), server.close()) };
}

// ---- the servers ------------------------------------------------------------------------

interface Server {
  name: string;
  url: string;
  pid: number;
  frontEndLine: string;
  admin: Target;
  stop(): Promise<void>;
}

async function startServer(name: string, serverArgs: string[]): Promise<Server> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kubeshard-authbench-data-'));
  const port = await freePort();
  const proc: ChildProcess = spawn(process.execPath, [...serverNodeArgs, join(ROOT, 'dist', 'src', 'main.js'), '--secure-port', String(port), '--bind-address', '127.0.0.1', '--data-dir', dataDir, ...serverArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  while (!out.includes('Serving securely')) {
    if (proc.exitCode !== null) throw new Error(`${name} exited: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const frontEndLine = out.split('\n').find((l) => l.includes('front end:')) ?? '(no front end line)';
  const admin = fromKubeconfig(join(dataDir, 'admin.kubeconfig'));
  return {
    name,
    url: admin.url,
    pid: proc.pid!,
    frontEndLine,
    admin: { ...admin, stop: async () => {} },
    stop: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// ---- load -------------------------------------------------------------------------------

/** HTTP/2 GETs from node's client: `sessions` connections, `streams` requests in flight on each. */
async function h2Load(t: Target, sessions: number, streams: number, secs: number): Promise<LoadResult> {
  let requests = 0;
  let non2xx = 0;
  let errors = 0;
  const end = Date.now() + secs * 1000;
  const headers: http2.OutgoingHttpHeaders = { ':path': PATH, accept: 'application/json', ...(t.token ? { authorization: `Bearer ${t.token}` } : {}) };
  const conns = await Promise.all(
    Array.from(
      { length: sessions },
      () =>
        new Promise<http2.ClientHttp2Session>((res, rej) => {
          const s = http2.connect(t.url, { rejectUnauthorized: false, ciphers: GO_TLS13_CIPHERS, ...t.tls });
          s.once('connect', () => res(s));
          s.once('error', rej);
        }),
    ),
  );
  const t0 = performance.now();
  await Promise.all(
    conns.flatMap((s) =>
      Array.from(
        { length: streams },
        () =>
          new Promise<void>((done) => {
            const next = () => {
              if (Date.now() >= end) return done();
              const st = s.request(headers, { endStream: true });
              st.on('response', (h) => {
                if (Number(h[':status']) >= 300) non2xx++;
              });
              st.on('data', () => {});
              st.on('end', () => {
                requests++;
                next();
              });
              st.on('error', () => {
                errors++;
                done();
              });
            };
            next();
          }),
      ),
    ),
  );
  const wall = (performance.now() - t0) / 1000;
  for (const s of conns) s.close();
  return { requests, rps: requests / wall, p50: NaN, p90: NaN, p99: NaN, p999: NaN, perSecond: [], non2xx, errors };
}

async function h1Load(t: Target, secs: number): Promise<LoadResult & { client: string }> {
  const o = { path: PATH, connections, seconds: secs };
  const n = await nativeLoad(t, o);
  if (n) return { ...n, client: 'native' };
  return { ...(await rawLoad(t, o)), client: 'lean' };
}

// ---- the run ----------------------------------------------------------------------------

interface Case {
  id: string;
  server: Server;
  cred: 'static' | 'static-long' | 'oidc' | 'webhook' | 'cert';
  proto: 'h1' | 'h2';
  target: Target;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function main(): Promise<void> {
  makeCerts();
  const issuer = await startIssuer();
  const webhook = await startWebhook();
  // a second static token as long as the ID token: the control that tells the cost of a
  // longer Authorization header (bytes to decrypt, parse and hash) from the authenticator's
  const longToken = 'L'.repeat(issuer.token.length);
  writeFileSync(join(dir, 'tokens.csv'), `static-token,static-user,s1,"${GROUP}"\n${longToken},static-long-user,s2,"${GROUP}"\n`);
  const common = [
    '--authorization-mode=Node,RBAC',
    '--token-auth-file', join(dir, 'tokens.csv'),
    `--oidc-issuer-url=${issuer.url}`, '--oidc-client-id=kubeshard', '--oidc-username-prefix=-', '--oidc-groups-claim=groups', `--oidc-ca-file=${join(dir, 'ca.crt')}`,
    // (answers cached for 10 minutes, not the default 2: none expires during a run, so the
    // webhook case measures the cached path only)
    '--authentication-token-webhook-config-file', webhook.kubeconfig, '--authentication-token-webhook-version', 'v1', '--authentication-token-webhook-cache-ttl=10m',
  ];
  const servers: Server[] = [];
  try {
    const uws = await startServer('uws', [...common, '--front-end=uws']);
    servers.push(uws);
    const h2 = await startServer('node:http2', [...common, `--client-ca-file=${join(dir, 'ca.crt')}`]);
    servers.push(h2);
    for (const s of servers) console.log(`${s.name}: ${s.frontEndLine.trim()}`);
    for (const s of servers) {
      const a = s.admin;
      await api(a, 'POST', '/api/v1/namespaces', { metadata: { name: NS } });
      await api(a, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { metadata: { name: 'one' }, data: { payload: 'x'.repeat(1000) } });
      await api(a, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'bench-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] });
      await api(a, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
        metadata: { name: 'bench-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'bench-reader' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: GROUP }],
      });
    }
    const cert = { cert: readFileSync(join(dir, 'client.crt')), key: readFileSync(join(dir, 'client.key')) };
    const tgt = (s: Server, cred: Case['cred']): Target => {
      const token = cred === 'static' ? 'static-token' : cred === 'static-long' ? longToken : cred === 'oidc' ? issuer.token : cred === 'webhook' ? 'webhook-token' : '';
      return { url: s.url, token, tls: cred === 'cert' ? cert : undefined, pid: s.pid, stop: async () => {} };
    };
    let cases: Case[] = [];
    for (const cred of ['static', 'static-long', 'oidc', 'webhook'] as const) cases.push({ id: `uws-${cred}`, server: uws, cred, proto: 'h1', target: tgt(uws, cred) });
    for (const cred of ['static', 'static-long', 'oidc', 'webhook', 'cert'] as const) cases.push({ id: `h2-${cred}`, server: h2, cred, proto: 'h1', target: tgt(h2, cred) });
    for (const cred of ['static', 'cert'] as const) cases.push({ id: `h2-${cred}-http2`, server: h2, cred, proto: 'h2', target: tgt(h2, cred) });
    if (only) cases = cases.filter((c) => only.split(',').includes(c.id));
    // every credential authenticates and is authorized (and who it is)
    const users = new Map<string, string>();
    for (const c of cases) {
      const r = await api(c.target, 'GET', PATH);
      const who = await api(c.target, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
      if (r.status !== 200) throw new Error(`${c.id}: GET answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
      users.set(c.id, who.body?.status?.userInfo?.username ?? '?');
      console.log(`${c.id}: authenticated as ${who.body?.status?.userInfo?.username ?? '?'} (${(who.body?.status?.userInfo?.groups ?? []).join(', ')})`);
    }
    // warm-up: JIT, caches, each credential's first verification
    for (const c of cases) await (c.proto === 'h1' ? h1Load(c.target, 1) : h2Load(c.target, h2Sessions, h2Streams, 1));
    const hooks0 = webhook.calls();
    const issuer0 = issuer.hits();
    console.log(`load average before: ${loadavg().map((x) => x.toFixed(2)).join(' ')}; ${connections} connections, ${seconds} s per run, ${rounds} rounds`);
    const rps = new Map<string, number[]>();
    const cpu = new Map<string, number[]>();
    const failed = new Map<string, number>();
    for (let round = 1; round <= rounds; round++) {
      for (const c of cases) {
        const p0 = sampleProc(c.server.pid);
        const r = c.proto === 'h1' ? await h1Load(c.target, seconds) : await h2Load(c.target, h2Sessions, h2Streams, seconds);
        const p1 = sampleProc(c.server.pid);
        const cpuUs = p0 && p1 ? ((p1.cpuSeconds - p0.cpuSeconds) * 1e6) / Math.max(1, r.requests) : NaN;
        (rps.get(c.id) ?? rps.set(c.id, []).get(c.id)!).push(r.rps);
        (cpu.get(c.id) ?? cpu.set(c.id, []).get(c.id)!).push(cpuUs);
        const client = 'client' in r ? (r as { client: string }).client : `node http2, ${h2Sessions} sessions × ${h2Streams} streams`;
        console.log(`round ${round} ${c.id.padEnd(18)} ${r.rps.toFixed(0).padStart(7)} GET/s  server ${cpuUs.toFixed(1)} µs/GET  (${client}; non2xx ${r.non2xx}, errors ${r.errors})`);
        if (r.non2xx || r.errors) console.log(`  !! ${c.id}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        failed.set(c.id, (failed.get(c.id) ?? 0) + r.non2xx + r.errors);
      }
    }
    const load1 = loadavg();
    console.log(`load average after: ${load1.map((x) => x.toFixed(2)).join(' ')}; webhook calls during the rounds: ${webhook.calls() - hooks0}, issuer requests: ${issuer.hits() - issuer0}`);
    if (jsonOut)
      writeFileSync(
        jsonOut,
        JSON.stringify(
          {
            connections,
            seconds,
            rounds,
            frontEnds: Object.fromEntries(servers.map((s) => [s.name, s.frontEndLine.trim()])),
            loadAverageAfter: load1,
            webhookCalls: webhook.calls() - hooks0,
            issuerRequests: issuer.hits() - issuer0,
            cases: cases.map((c) => ({ id: c.id, user: users.get(c.id), rps: rps.get(c.id), serverCpuUs: cpu.get(c.id), failed: failed.get(c.id) ?? 0 })),
          },
          null,
          1,
        ),
      );
    // each figure against the static token of the same front end and protocol, round by round
    const baseOf = (c: Case) => (c.proto === 'h2' ? 'h2-static-http2' : c.server.name === 'uws' ? 'uws-static' : 'h2-static');
    console.log('\n| case | GET/s per round | median | ÷ same front end\'s static token, per round | ÷ uWS static token, per round | server µs/GET (median) |');
    console.log('|---|---|---|---|---|---|');
    for (const c of cases) {
      const mine = rps.get(c.id)!;
      const ratio = (other: string) => (rps.has(other) ? rps.get(other)!.map((b, i) => `${((100 * mine[i]) / b).toFixed(0)} %`).join(' / ') : '');
      console.log(`| ${c.id} | ${mine.map((x) => x.toFixed(0)).join(' / ')} | ${median(mine).toFixed(0)} | ${baseOf(c) === c.id ? '' : ratio(baseOf(c))} | ${c.id === 'uws-static' ? '' : ratio('uws-static')} | ${median(cpu.get(c.id)!).toFixed(1)} |`);
    }
  } finally {
    for (const s of servers) await s.stop();
    issuer.close();
    webhook.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
