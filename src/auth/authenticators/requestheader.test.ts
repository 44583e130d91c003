import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { RequestHeaderAuthenticator, requestHeaderConfig } from './requestheader.js';
import { bundleFingerprints, chainReaches } from './ca-bundle.js';
import { authenticationFilter } from '../../http/filters/authentication.js';
import { TokenAuthenticatorUnion } from '../authenticator-union.js';
import { StaticTokenAuthenticator } from './token-file.js';
import { features } from '../../features.js';
import type { ApiRequest } from '../../http/types.js';

const dir = mkdtempSync(join(tmpdir(), 'kubeshard-rh-unit-'));
let caFile = '';
let fp = '';
let otherFp = '';

beforeAll(() => {
  for (const ca of ['fp', 'other']) {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${ca}.key`, '-subj', `/CN=${ca}`, '-days', '1', '-out', `${ca}.crt`], { cwd: dir, stdio: 'ignore' });
  }
  caFile = join(dir, 'fp.crt');
  fp = new X509Certificate(readFileSync(caFile)).fingerprint256;
  otherFp = new X509Certificate(readFileSync(join(dir, 'other.crt'))).fingerprint256;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const defaults = () => requestHeaderConfig({ requestheaderClientCaFile: caFile, requestheaderAllowedNames: [] })!;
const proxyCert = (cn = 'front-proxy-client', via = () => fp) => ({ commonName: cn, organizations: [], chainFingerprints: ['LEAF', via()] });

describe('requestheader authenticator', () => {
  it('defaults to the X-Remote-* headers, the uid ones only when named', () => {
    expect(requestHeaderConfig({ requestheaderClientCaFile: '', requestheaderAllowedNames: [] })).toBeNull();
    const c = defaults();
    expect([c.usernameHeaders, c.groupHeaders, c.uidHeaders, c.extraHeaderPrefixes]).toEqual([['X-Remote-User'], ['X-Remote-Group'], [], ['X-Remote-Extra-']]);
  });

  it('refuses --requestheader-uid-headers while RemoteRequestHeaderUID is off', () => {
    features.set('RemoteRequestHeaderUID=false');
    try {
      expect(() => requestHeaderConfig({ requestheaderClientCaFile: caFile, requestheaderAllowedNames: [], requestheaderUidHeaders: ['X-Remote-Uid'] })).toThrow(/RemoteRequestHeaderUID/);
    } finally {
      features.reset();
    }
  });

  it('reads user, groups (every value of every header) and extra (keys lower-cased, percent-decoded; values as sent)', () => {
    const a = new RequestHeaderAuthenticator({ ...defaults(), groupHeaders: ['X-Remote-Group', 'X-Other-Group'], uidHeaders: ['X-Remote-Uid'] });
    const r = a.authenticateRequest({
      path: '/',
      clientCert: proxyCert(),
      headers: { 'x-remote-user': 'alice', 'x-remote-uid': 'u1', 'x-remote-group': 'g1, g2', 'x-other-group': 'g3', 'x-remote-extra-scopes': 'a%2Fb, c', 'x-remote-extra-acme.com%2fproject': 'p', 'x-remote-extra-bad%zz': 'v' },
    });
    expect(r).toEqual({ ok: true, response: { user: { name: 'alice', uid: 'u1', groups: ['g1', 'g2', 'g3'], extra: { scopes: ['a%2Fb', 'c'], 'acme.com/project': ['p'], 'bad%zz': ['v'] } } } });
  });

  it('no certificate: not its request; another CA or an unlisted name: an error; a trusted one without a user: nobody', () => {
    const a = new RequestHeaderAuthenticator({ ...defaults(), allowedNames: ['front-proxy-client'] });
    const headers = { 'x-remote-user': 'alice' };
    expect(a.authenticateRequest({ path: '/', headers })).toEqual({ ok: false });
    expect(a.authenticateRequest({ path: '/', headers, clientCert: proxyCert('front-proxy-client', () => otherFp) })).toMatchObject({ ok: false, error: expect.any(String) });
    expect(a.authenticateRequest({ path: '/', headers, clientCert: proxyCert('rogue') })).toMatchObject({ ok: false, error: expect.stringContaining('rogue') });
    expect(a.authenticateRequest({ path: '/', headers: {}, clientCert: proxyCert() })).toEqual({ ok: false });
  });

  it('strips the standard X-Remote-* headers and the configured ones (the uid one even when not read)', () => {
    const a = new RequestHeaderAuthenticator({ ...defaults(), usernameHeaders: ['X-Proxy-User'], extraHeaderPrefixes: ['X-Proxy-Extra-'] });
    const h: Record<string, string> = { 'x-proxy-user': 'p', 'x-proxy-extra-a': 'b', 'x-remote-user': 'a', 'x-remote-group': 'g', 'x-remote-extra-foo': 'x', 'x-remote-uid': 'u', accept: '*/*' };
    a.stripIdentityHeaders(h);
    expect(h).toEqual({ accept: '*/*' });
  });

  it('ca bundle fingerprints and chain membership', () => {
    expect(bundleFingerprints(readFileSync(caFile))).toEqual(new Set([fp]));
    expect(chainReaches(['LEAF', fp], new Set([fp]))).toBe(true);
    expect(chainReaches(['LEAF', otherFp], new Set([fp]))).toBe(false);
    expect(chainReaches(undefined, new Set([fp]))).toBe(false);
  });
});

describe('authentication filter with the front proxy', () => {
  const tokens = new StaticTokenAuthenticator(new Map([['bob-token', { name: 'bob', uid: '', groups: [] }]]), []);
  const filterOf = (clientCaAnchors?: Set<string> | null) =>
    authenticationFilter({ anonymous: true, tokens: new TokenAuthenticatorUnion([tokens], tokens), requestAuthenticators: [new RequestHeaderAuthenticator(defaults())], clientCaAnchors });
  const run = async (f: ReturnType<typeof filterOf>, req: Partial<ApiRequest>) => {
    const r = { path: '/api', headers: {}, ...req } as ApiRequest;
    try {
      await f.run(r, {} as never);
      return { user: r.user, headers: r.headers };
    } catch (e) {
      return { code: (e as { status?: { code?: number } }).status?.code ?? (e as { code?: number }).code, headers: r.headers };
    }
  };

  it('a trusted proxy sets the user; the headers are gone afterwards, trusted or not', async () => {
    const f = filterOf(new Set([otherFp]));
    const ok = await run(f, { clientCert: proxyCert(), headers: { 'x-remote-user': 'alice', 'x-remote-group': 'g', 'x-remote-extra-k': 'v', accept: 'x' } });
    expect(ok.user).toEqual({ name: 'alice', uid: '', groups: ['g', 'system:authenticated'], extra: { k: ['v'] } });
    expect(ok.headers).toEqual({ accept: 'x' });
    const spoofed = await run(f, { headers: { 'x-remote-user': 'alice', 'x-remote-group': 'system:masters', authorization: 'Bearer bob-token' } });
    expect(spoofed.user?.name).toBe('bob');
    expect(spoofed.headers).toEqual({ authorization: 'Bearer bob-token' });
  });

  it('a front-proxy certificate is no x509 user of --client-ca-file: refused, never anonymous', async () => {
    const f = filterOf(new Set([otherFp]));
    expect((await run(f, { clientCert: proxyCert() })).code).toBe(401);
    const x509 = await run(f, { clientCert: { commonName: 'jane', organizations: ['t'], chainFingerprints: ['LEAF', otherFp] }, headers: { 'x-remote-user': 'alice' } });
    expect(x509.user).toEqual({ name: 'jane', uid: '', groups: ['t', 'system:authenticated'] });
    // without --client-ca-file there is no x509 authenticator: a trusted proxy certificate alone is anonymous
    expect((await run(filterOf(null), { clientCert: proxyCert() })).user?.name).toBe('system:anonymous');
  });

  it('without a front proxy configured the standard X-Remote-* headers are not believed and leave the request all the same', async () => {
    const f = authenticationFilter({ anonymous: true, tokens: new TokenAuthenticatorUnion([tokens], tokens) });
    const headers = { 'x-remote-user': 'admin', 'x-remote-uid': 'u', 'x-remote-group': 'system:masters', 'x-remote-extra-scopes': 'all', 'x-remote-extra-': 'x', 'x-remoteish': 'kept', authorization: 'Bearer bob-token' };
    const r = await run(f, { headers });
    expect(r.user?.name).toBe('bob');
    expect(r.headers).toStrictEqual({ 'x-remoteish': 'kept', authorization: 'Bearer bob-token' });
    const anon = await run(f, { headers: { 'x-remote-user': 'admin', 'x-remote-group': 'system:masters' } });
    expect(anon.user?.name).toBe('system:anonymous');
    expect(anon.headers).toEqual({});
  });
});
