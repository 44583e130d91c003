// --client-ca-file and --requestheader-client-ca-file are followed while the server runs
// (kube's dynamic CA content): rewriting a file with another authority makes new
// connections trust the new one and not the old, without a restart; the
// extension-apiserver-authentication ConfigMap gains the new authority; a file rewritten
// empty is refused and the bundle in use stays. A connection verified before the change is
// judged by the bundle of now on its next request (kube verifies each request's chain).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import https from 'node:https';
import http2 from 'node:http2';
import { request, startServer, until, type TestServer } from './helpers/server.js';

const dir = mkdtempSync(join(tmpdir(), 'kubeshard-ca-reload-'));
const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });

function makeCerts(): void {
  for (const ca of ['users-1', 'users-2', 'proxy-1', 'proxy-2']) {
    ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${ca}.key`]);
    ssl(['req', '-x509', '-new', '-key', `${ca}.key`, '-sha256', '-days', '2', '-subj', `/CN=${ca}-ca`, '-out', `${ca}.crt`]);
  }
  const client = (name: string, subj: string, ca: string) => {
    ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`]);
    ssl(['req', '-new', '-key', `${name}.key`, '-subj', subj, '-out', `${name}.csr`]);
    writeFileSync(join(dir, `${name}.ext`), 'extendedKeyUsage=clientAuth\n');
    ssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '2', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
  };
  client('alice', '/O=old/CN=alice', 'users-1');
  client('bob', '/O=new/CN=bob', 'users-2');
  client('front-1', '/CN=front-proxy-client', 'proxy-1');
  client('front-2', '/CN=front-proxy-client', 'proxy-2');
}

/** Who the server says the caller is, on a new connection (status, user name). */
function whoami(s: TestServer, cert: string, headers: Record<string, string> = {}): Promise<{ status: number; user?: string }> {
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
        cert: readFileSync(join(dir, `${cert}.crt`)),
        key: readFileSync(join(dir, `${cert}.key`)),
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, user: res.statusCode === 201 ? JSON.parse(text).status.userInfo.username : undefined }));
      },
    );
    // (a handshake the server refuses outright counts as refused)
    req.on('error', (e) => (/ECONNRESET|socket hang up|alert/i.test(String(e)) ? resolve({ status: 0 }) : reject(e)));
    req.end(body);
  });
}

/** One request on an HTTP/2 session kept open across the change. */
function review(session: http2.ClientHttp2Session): Promise<{ status: number; user?: string }> {
  return new Promise((res, rej) => {
    const st = session.request({ ':method': 'POST', ':path': '/apis/authentication.k8s.io/v1/selfsubjectreviews', 'content-type': 'application/json' });
    let status = 0;
    let body = '';
    st.on('response', (h) => (status = Number(h[':status'])));
    st.setEncoding('utf8');
    st.on('data', (c) => (body += c));
    st.on('end', () => res({ status, user: status === 201 ? JSON.parse(body).status.userInfo.username : undefined }));
    st.on('error', rej);
    st.end(JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }));
  });
}

describe('client CA files rewritten while serving', () => {
  let s: TestServer;
  const clientCaFile = join(dir, 'client-ca.crt');
  const proxyCaFile = join(dir, 'requestheader-ca.crt');

  beforeAll(async () => {
    makeCerts();
    copyFileSync(join(dir, 'users-1.crt'), clientCaFile);
    copyFileSync(join(dir, 'proxy-1.crt'), proxyCaFile);
    s = await startServer({ args: ['--client-ca-file', clientCaFile, '--requestheader-client-ca-file', proxyCaFile, '--requestheader-allowed-names', 'front-proxy-client', '--anonymous-auth=false'] });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('before: the first authorities are trusted, the second not', async () => {
    expect(await whoami(s, 'alice')).toEqual({ status: 201, user: 'alice' });
    expect((await whoami(s, 'bob')).status).not.toBe(201);
    expect(await whoami(s, 'front-1', { 'X-Remote-User': 'carol' })).toEqual({ status: 201, user: 'carol' });
    expect((await whoami(s, 'front-2', { 'X-Remote-User': 'carol' })).status).not.toBe(201);
  });

  it('after rewriting both files: new connections trust the new authorities and not the old ones, and the ConfigMap has the new ones', async () => {
    const kept = http2.connect(s.url, { ca: s.ca, cert: readFileSync(join(dir, 'alice.crt')), key: readFileSync(join(dir, 'alice.key')) });
    kept.on('error', () => {});
    try {
      expect(await review(kept)).toEqual({ status: 201, user: 'alice' });
      writeFileSync(clientCaFile, readFileSync(join(dir, 'users-2.crt')));
      writeFileSync(proxyCaFile, readFileSync(join(dir, 'proxy-2.crt')));
      await until(async () => (await whoami(s, 'bob')).status === 201, 15_000);
      await until(async () => (await whoami(s, 'front-2', { 'X-Remote-User': 'carol' })).status === 201, 15_000);
      expect(await whoami(s, 'bob')).toEqual({ status: 201, user: 'bob' });
      expect((await whoami(s, 'alice')).status).toBe(401);
      expect(await whoami(s, 'front-2', { 'X-Remote-User': 'carol' })).toEqual({ status: 201, user: 'carol' });
      expect((await whoami(s, 'front-1', { 'X-Remote-User': 'carol' })).status).toBe(401);
      // the connection alice opened before is judged by the bundle of now
      expect((await review(kept)).status).toBe(401);
      // HTTP/2 (ALPN) still negotiated on the replaced context
      const fresh = http2.connect(s.url, { ca: s.ca, cert: readFileSync(join(dir, 'bob.crt')), key: readFileSync(join(dir, 'bob.key')) });
      fresh.on('error', () => {});
      try {
        expect(await review(fresh)).toEqual({ status: 201, user: 'bob' });
        expect(fresh.alpnProtocol).toBe('h2');
      } finally {
        fresh.close();
      }
    } finally {
      kept.close();
    }
    expect(s.output()).toMatch(/--client-ca-file: loaded a new CA bundle/);
    const pem = (f: string) => readFileSync(join(dir, f), 'utf8').trim();
    const cm = await until(async () => {
      const r = (await request(s, 'GET', '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication')).json();
      return r.data?.['client-ca-file']?.includes(pem('users-2.crt')) && r.data?.['requestheader-client-ca-file']?.includes(pem('proxy-2.crt')) && r;
    }, 15_000);
    // (merged as kube merges: the earlier authority stays until it expires)
    expect(cm.data['client-ca-file']).toContain(pem('users-1.crt'));
  });

  it('a file rewritten empty is refused: the bundle in use stays', async () => {
    writeFileSync(clientCaFile, '');
    await until(() => /--client-ca-file: not loading an empty CA bundle/.test(s.output()), 15_000);
    expect(await whoami(s, 'bob')).toEqual({ status: 201, user: 'bob' });
    expect((await whoami(s, 'alice')).status).toBe(401);
  });
});
