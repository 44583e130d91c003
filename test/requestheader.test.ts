// The authenticating front proxy (--requestheader-client-ca-file): identity headers count
// only from a client certificate the front-proxy CA verifies (and, with
// --requestheader-allowed-names, whose common name is listed); any other request has them
// ignored and goes on to x509, tokens or anonymous. A front-proxy certificate never
// authenticates as an x509 user through --client-ca-file, and a client-CA certificate never
// vouches for headers. Checked through SelfSubjectReview, which echoes the user as the
// server saw it (name, uid, groups, extra).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import https from 'node:https';
import http2 from 'node:http2';
import { startServer, type TestServer } from './helpers/server.js';
import { kubectl, kubectlPath } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kubeshard-reqhdr-'));
const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });

/** Two authorities (the front proxy's and the users'), and client certificates from each. */
let made = false;
function makeCerts(): void {
  if (made) return;
  made = true;
  for (const ca of ['front-proxy-ca', 'client-ca']) {
    ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${ca}.key`]);
    ssl(['req', '-x509', '-new', '-key', `${ca}.key`, '-sha256', '-days', '2', '-subj', `/CN=${ca}`, '-out', `${ca}.crt`]);
  }
  const client = (name: string, subj: string, ca: string) => {
    ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`]);
    ssl(['req', '-new', '-key', `${name}.key`, '-subj', subj, '-out', `${name}.csr`]);
    writeFileSync(join(dir, `${name}.ext`), 'extendedKeyUsage=clientAuth\n');
    ssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '2', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
  };
  client('front-proxy-client', '/CN=front-proxy-client', 'front-proxy-ca');
  client('rogue-proxy', '/CN=rogue-proxy', 'front-proxy-ca');
  client('jane', '/O=team-a/CN=jane', 'client-ca');
}

interface Answer {
  status: number;
  text: string;
  userInfo?: { username: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
}

/** POST a SelfSubjectReview with the given client certificate (by name) and headers, over HTTP/1.1. */
function whoami(s: TestServer, cert: string | null, headers: Record<string, string | string[]> = {}): Promise<Answer> {
  const body = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port: s.port,
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        ca: s.ca,
        agent: false,
        ...(cert ? { cert: readFileSync(join(dir, `${cert}.crt`)), key: readFileSync(join(dir, `${cert}.key`)) } : {}),
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, userInfo: res.statusCode === 201 ? JSON.parse(text).status.userInfo : undefined }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A GET with the admin token the test server hands out. */
function whoamiGet(s: TestServer, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: s.port, method: 'GET', path, ca: s.ca, agent: false, headers: { authorization: `Bearer ${s.token}` } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

const ALICE = {
  'X-Remote-User': 'alice',
  'X-Remote-Uid': 'alice-uid',
  'X-Remote-Group': ['g1', 'g2'],
  'X-Remote-Extra-Scopes': 'a%2Fb',
  'X-Remote-Extra-Acme.com%2FProject': 'p1',
};

describe('front proxy (--requestheader-client-ca-file) beside --client-ca-file and tokens', () => {
  let s: TestServer;

  beforeAll(async () => {
    kubectlPath();
    makeCerts();
    writeFileSync(join(dir, 'tokens.csv'), 'bob-token,bob,bob-uid\n');
    s = await startServer({
      args: [
        '--client-ca-file', join(dir, 'client-ca.crt'),
        '--requestheader-client-ca-file', join(dir, 'front-proxy-ca.crt'),
        '--requestheader-uid-headers', 'X-Remote-Uid',
        '--token-auth-file', join(dir, 'tokens.csv'),
        '--anonymous-auth=false',
      ],
    });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
  });

  it('publishes both authorities and the header names in kube-system/extension-apiserver-authentication, for aggregated servers', async () => {
    const cm = JSON.parse((await whoamiGet(s, '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication')).text);
    const pem = (f: string) => readFileSync(join(dir, f), 'utf8').trim();
    expect(cm.data['client-ca-file'].trim()).toBe(pem('client-ca.crt'));
    expect(cm.data['requestheader-client-ca-file'].trim()).toBe(pem('front-proxy-ca.crt'));
    expect(JSON.parse(cm.data['requestheader-username-headers'])).toEqual(['X-Remote-User']);
    expect(JSON.parse(cm.data['requestheader-group-headers'])).toEqual(['X-Remote-Group']);
    expect(JSON.parse(cm.data['requestheader-uid-headers'])).toEqual(['X-Remote-Uid']);
    expect(JSON.parse(cm.data['requestheader-extra-headers-prefix'])).toEqual(['X-Remote-Extra-']);
    expect(JSON.parse(cm.data['requestheader-allowed-names'])).toEqual([]);
  });

  it('says at start-up which front end serves and why', () => {
    expect(s.output()).toMatch(/front end: node:http2 .*needed by --client-ca-file, --requestheader-client-ca-file/);
  });

  it('a front-proxy certificate vouches for the identity headers: user, uid, groups, extra (keys lower-cased and percent-decoded)', async () => {
    const r = await whoami(s, 'front-proxy-client', ALICE);
    expect(r.status).toBe(201);
    expect(r.userInfo).toEqual({
      username: 'alice',
      uid: 'alice-uid',
      groups: ['g1', 'g2', 'system:authenticated'],
      // (as kube: the key is decoded, the values are passed as sent)
      extra: { scopes: ['a%2Fb'], 'acme.com/project': ['p1'] },
    });
  });

  it('the headers with a certificate from the other CA are ignored: the certificate is the user', async () => {
    const r = await whoami(s, 'jane', ALICE);
    expect(r.status).toBe(201);
    expect(r.userInfo).toEqual({ username: 'jane', groups: ['team-a', 'system:authenticated'] });
  });

  it('the headers without a certificate are ignored: the bearer token is the user, and without one 401', async () => {
    const r = await whoami(s, null, { ...ALICE, authorization: 'Bearer bob-token' });
    expect(r.status).toBe(201);
    expect(r.userInfo).toEqual({ username: 'bob', uid: 'bob-uid', groups: ['system:authenticated'] });
    expect((await whoami(s, null, ALICE)).status).toBe(401);
  });

  it('a front-proxy certificate is no x509 user: without headers it is refused, unless a token authenticates', async () => {
    expect((await whoami(s, 'front-proxy-client')).status).toBe(401);
    const r = await whoami(s, 'front-proxy-client', { authorization: 'Bearer bob-token' });
    expect(r.userInfo?.username).toBe('bob');
  });

  it('over HTTP/2 each request on the proxy\'s connection is its own user (the connection is the proxy, not a user)', async () => {
    const session = http2.connect(s.url, { ca: s.ca, cert: readFileSync(join(dir, 'front-proxy-client.crt')), key: readFileSync(join(dir, 'front-proxy-client.key')) });
    session.on('error', () => {});
    const review = (headers: Record<string, string | string[]>) =>
      new Promise<{ status: number; body: string }>((res, rej) => {
        const st = session.request({ ':method': 'POST', ':path': '/apis/authentication.k8s.io/v1/selfsubjectreviews', 'content-type': 'application/json', ...headers });
        let status = 0;
        let body = '';
        st.on('response', (h) => (status = Number(h[':status'])));
        st.setEncoding('utf8');
        st.on('data', (c) => (body += c));
        st.on('end', () => res({ status, body }));
        st.on('error', rej);
        st.end(JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }));
      });
    try {
      const [a, b, none] = await Promise.all([
        review({ 'x-remote-user': 'alice', 'x-remote-group': ['g1', 'g2'] }),
        review({ 'x-remote-user': 'carol' }),
        review({}),
      ]);
      expect(a.status, a.body).toBe(201);
      expect(JSON.parse(a.body).status.userInfo).toEqual({ username: 'alice', groups: ['g1', 'g2', 'system:authenticated'] });
      expect(JSON.parse(b.body).status.userInfo).toEqual({ username: 'carol', groups: ['system:authenticated'] });
      expect(none.status).toBe(401);
    } finally {
      session.close();
    }
  });

  it('kubectl with the front-proxy certificate alone (it cannot send the headers) is refused', async () => {
    const kc = join(dir, 'proxy.kubeconfig');
    writeFileSync(
      kc,
      `apiVersion: v1
kind: Config
clusters:
- name: ks
  cluster: {server: "${s.url}", insecure-skip-tls-verify: true}
users:
- name: proxy
  user: {client-certificate: ${join(dir, 'front-proxy-client.crt')}, client-key: ${join(dir, 'front-proxy-client.key')}}
contexts:
- name: ks
  context: {cluster: ks, user: proxy}
current-context: ks
`,
    );
    const r = await kubectl({ ...s, kubeconfigPath: kc }, ['auth', 'whoami']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/Unauthorized|must be logged in/);
  });
});

describe('front proxy with --requestheader-allowed-names and no --client-ca-file', () => {
  let s: TestServer;

  beforeAll(async () => {
    makeCerts();
    s = await startServer({
      // (RBAC: kube turns anonymous off under AlwaysAllow)
      args: ['--requestheader-client-ca-file', join(dir, 'front-proxy-ca.crt'), '--requestheader-allowed-names', 'front-proxy-client', '--authorization-mode', 'RBAC'],
    });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a listed common name vouches; the uid header is not read unless --requestheader-uid-headers names it', async () => {
    const r = await whoami(s, 'front-proxy-client', ALICE);
    expect(r.status).toBe(201);
    expect(r.userInfo?.username).toBe('alice');
    expect(r.userInfo?.uid ?? '').toBe('');
    expect(r.userInfo?.groups).toEqual(['g1', 'g2', 'system:authenticated']);
  });

  it('a common name not listed is refused: the headers are ignored, a token still authenticates', async () => {
    expect((await whoami(s, 'rogue-proxy', ALICE)).status).toBe(401);
    const r = await whoami(s, 'rogue-proxy', { ...ALICE, authorization: `Bearer ${s.token}` });
    expect(r.status).toBe(201);
    expect(r.userInfo?.username).not.toBe('alice');
  });

  it('without the user header a trusted certificate is nobody (no x509 authenticator): anonymous, and the group header is not believed', async () => {
    const r = await whoami(s, 'front-proxy-client', { 'X-Remote-Group': 'system:masters' });
    expect(r.status, r.text).toBe(403);
    expect(JSON.parse(r.text).message).toContain('User "system:anonymous" cannot create resource "selfsubjectreviews"');
  });
});
