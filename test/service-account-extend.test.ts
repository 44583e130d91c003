// Issue 21 fixes: --service-account-extend-token-expiration (kube's year-long pod-bound tokens
// for the kubelet's 3607 s request, with kubernetes.io.warnafter) and the service-account
// verifying keys' fallback to --tls-private-key-file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';
import { startServer, request, until, type TestServer } from './helpers/server.js';

const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const dir = mkdtempSync(join(tmpdir(), 'sa-extend-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'tls.key', '-out', 'tls.crt', '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { cwd: dir, stdio: 'pipe' });

function claimsOf(token: string): any {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
}

async function podToken(s: TestServer, pod: string, seconds: number): Promise<{ claims: any; status: any }> {
  const r = await request(s, 'POST', '/api/v1/namespaces/default/serviceaccounts/default/token', {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: seconds, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod } },
  });
  expect(r.status, r.body).toBe(201);
  return { claims: claimsOf(r.json().status.token), status: r.json().status };
}

async function makePod(s: TestServer): Promise<void> {
  await until(async () => (await request(s, 'GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200, 15_000);
  const r = await request(s, 'POST', '/api/v1/namespaces/default/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
  expect(r.status, r.body).toBe(201);
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('--service-account-extend-token-expiration (default true) and the TLS key fallback', () => {
  let s: TestServer;
  beforeAll(async () => {
    // the helper trusts <data-dir>/certs/ca.crt: the self-signed serving certificate is its own CA
    const dataDir = mkdtempSync(join(tmpdir(), 'kubeshard-test-'));
    mkdirSync(join(dataDir, 'certs'), { recursive: true });
    copyFileSync(join(dir, 'tls.crt'), join(dataDir, 'certs', 'ca.crt'));
    s = await startServer({ dataDir, args: [`--tls-cert-file=${join(dir, 'tls.crt')}`, `--tls-private-key-file=${join(dir, 'tls.key')}`] });
    await makePod(s);
  }, 90_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
  });

  it("extends a pod-bound 3607 s token to a year, warning after the requested expiry", async () => {
    const { claims, status } = await podToken(s, 'p', 3607);
    expect(claims.exp - claims.iat).toBe(365 * 24 * 3600);
    expect(claims['kubernetes.io'].warnafter).toBe(claims.iat + 3607);
    // the status reports what was asked for
    expect(Math.abs(Date.parse(status.expirationTimestamp) / 1000 - (claims.iat + 3607))).toBeLessThanOrEqual(1);
  });

  it('leaves other expirations alone', async () => {
    const { claims } = await podToken(s, 'p', 3600);
    expect(claims.exp - claims.iat).toBe(3600);
    expect(claims['kubernetes.io'].warnafter).toBeUndefined();
  });

  it('verifies tokens signed by --tls-private-key-file when no --service-account-key-file is given', async () => {
    const sa = (await request(s, 'GET', '/api/v1/namespaces/default/serviceaccounts/default')).json();
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ 'kubernetes.io': { namespace: 'default', serviceaccount: { name: 'default', uid: sa.metadata.uid } } })
      .setProtectedHeader({ alg: 'RS256' })
      .setIssuer(ISSUER)
      .setSubject('system:serviceaccount:default:default')
      .setAudience(ISSUER)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(createPrivateKey(readFileSync(join(dir, 'tls.key'))));
    const r = await request(s, 'POST', '/apis/authentication.k8s.io/v1/tokenreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } });
    expect(r.json().status).toMatchObject({ authenticated: true, user: { username: 'system:serviceaccount:default:default' } });
    // and the server's own (generated signing key) tokens still verify
    const own = await request(s, 'POST', '/api/v1/namespaces/default/serviceaccounts/default/token', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} });
    const r2 = await request(s, 'POST', '/apis/authentication.k8s.io/v1/tokenreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: own.json().status.token } });
    expect(r2.json().status.authenticated).toBe(true);
  });
});

describe('--service-account-extend-token-expiration=false', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ args: ['--service-account-extend-token-expiration=false'] });
    await makePod(s);
  }, 90_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
  });

  it('issues what was asked for', async () => {
    const { claims } = await podToken(s, 'p', 3607);
    expect(claims.exp - claims.iat).toBe(3607);
    expect(claims['kubernetes.io'].warnafter).toBeUndefined();
  });
});
