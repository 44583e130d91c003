// X509 client certificates (spec 5.2, --client-ca-file) through the node:http2 front end,
// with the real kubectl: a certificate signed by the client CA authenticates its common
// name with its organizations as groups (over HTTP/2, which kubectl negotiates), a watch
// streams, a certificate from another authority or without client-auth usage is refused
// (401, never anonymous), and bearer tokens and HTTP/1.1 clients are still served.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http2 from 'node:http2';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk, kubectlPath, kubectlStream, certKubeconfig } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kubeshard-x509-'));
const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });

/** A CA, and client certificates signed by it (or by a stranger) with the given subject and usage. */
function makeCerts(): void {
  for (const ca of ['ca', 'other-ca']) {
    ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${ca}.key`]);
    ssl(['req', '-x509', '-new', '-key', `${ca}.key`, '-sha256', '-days', '2', '-subj', `/CN=${ca}`, '-out', `${ca}.crt`]);
  }
  const client = (name: string, subj: string, ca: string, usage: string) => {
    ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`]);
    ssl(['req', '-new', '-key', `${name}.key`, '-subj', subj, '-out', `${name}.csr`]);
    writeFileSync(join(dir, `${name}.ext`), `extendedKeyUsage=${usage}\n`);
    ssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '2', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
  };
  client('jane', '/O=team-a/O=team-b/CN=jane', 'ca', 'clientAuth');
  client('stranger', '/CN=stranger', 'other-ca', 'clientAuth');
  client('server-only', '/CN=server-only', 'ca', 'serverAuth');
}


describe('client certificates (--client-ca-file, node:http2 front end)', () => {
  let s: TestServer;
  const as = (name: string, args: string[]) => kubectl({ ...s, kubeconfigPath: certKubeconfig(s, dir, name) }, args);

  beforeAll(async () => {
    kubectlPath();
    makeCerts();
    s = await startServer({ args: ['--client-ca-file', join(dir, 'ca.crt')] });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
  });

  it('a certificate signed by the client CA authenticates its common name, organizations as groups', async () => {
    const r = await as('jane', ['auth', 'whoami', '-o', 'json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).status.userInfo).toEqual({ username: 'jane', groups: ['team-a', 'team-b', 'system:authenticated'] });
    const created = await as('jane', ['create', 'configmap', 'from-jane', '-n', 'default', '--from-literal=a=b']);
    expect(created.code, created.stderr).toBe(0);
    const mf = JSON.parse((await as('jane', ['get', 'configmap', 'from-jane', '-n', 'default', '-o', 'json', '--show-managed-fields'])).stdout).metadata.managedFields;
    expect(mf[0].manager).toBe('kubectl-create');
  });

  it('is served over HTTP/2 when the client offers it, and a watch streams', async () => {
    const session = http2.connect(s.url, { ca: s.ca, cert: readFileSync(join(dir, 'jane.crt')), key: readFileSync(join(dir, 'jane.key')) });
    try {
      const get = (path: string) =>
        new Promise<{ status: number; body: string }>((res, rej) => {
          const st = session.request({ ':path': path });
          let status = 0;
          let body = '';
          st.on('response', (h) => (status = Number(h[':status'])));
          st.setEncoding('utf8');
          st.on('data', (c) => (body += c));
          st.on('end', () => res({ status, body }));
          st.on('error', rej);
        });
      const r = await get('/api/v1/namespaces/default/configmaps/from-jane');
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body).data).toEqual({ a: 'b' });
    } finally {
      session.close();
    }
    const w = kubectlStream({ ...s, kubeconfigPath: certKubeconfig(s, dir, 'jane') }, ['get', 'configmaps', '-n', 'default', '-w', '-o', 'name']);
    try {
      await until(() => w.output().includes('configmap/from-jane'), 15_000);
      await kubectlOk(s, ['create', 'configmap', 'later', '-n', 'default']);
      await until(() => w.output().includes('configmap/later'), 15_000);
    } finally {
      w.stop();
    }
  });

  it('a certificate from another authority, or without client-auth usage, is refused with 401 (never anonymous)', async () => {
    for (const name of ['stranger', 'server-only']) {
      const r = await as(name, ['get', 'namespaces']);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/Unauthorized/);
    }
  });

  it('bearer tokens and HTTP/1.1 clients are still served', async () => {
    // the test helper speaks HTTP/1.1 with the admin token
    const r = await request(s, 'GET', '/api/v1/namespaces/default');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect((await kubectl(s, ['get', 'configmap', 'from-jane', '-n', 'default'])).code).toBe(0);
    // no certificate, no token: the TLS layer lets it in and authentication decides; under
    // AlwaysAllow anonymous is off (as in kube), so that is a 401 Status, not a TLS failure
    const anon = await request(s, 'GET', '/version', undefined, { authorization: '' });
    expect(anon.status).toBe(401);
    expect(anon.json().reason).toBe('Unauthorized');
  });
});

describe('--goaway-chance (HTTP/2)', () => {
  let s: TestServer;
  beforeAll(async () => {
    if (!existsSync(join(dir, 'ca.crt'))) makeCerts();
    s = await startServer({ args: ['--client-ca-file', join(dir, 'ca.crt'), '--goaway-chance', '0.02'] });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a request now and then ends its connection with GOAWAY after completing', async () => {
    const session = http2.connect(s.url, { ca: s.ca });
    let goaway = false;
    session.on('goaway', () => (goaway = true));
    session.on('error', () => {});
    const statuses: number[] = [];
    try {
      // with a chance of 0.02 per request, 2,000 requests all passing without a GOAWAY has a probability of 3e-18
      for (let i = 0; i < 2000 && !goaway; i++) {
        const status = await new Promise<number>((res, rej) => {
          const st = session.request({ ':path': '/version', authorization: `Bearer ${s.token}` });
          let code = 0;
          st.on('response', (h) => (code = Number(h[':status'])));
          st.resume();
          st.on('end', () => res(code));
          st.on('error', rej);
        });
        statuses.push(status);
      }
    } finally {
      session.destroy();
    }
    expect(goaway).toBe(true);
    // every request made before the GOAWAY was answered in full
    expect(statuses.every((c) => c === 200)).toBe(true);
  });
});
