import { describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import { JwtAuthenticator, goTime } from './jwt-authenticator.js';
import { jwtConfigFromFlags, type JWTAuthenticatorConfig } from './jwt-config.js';
import type { ProviderKeys } from './provider-keys.js';

const ISS = 'https://issuer.example';
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const other = generateKeyPairSync('rsa', { modulusLength: 2048 });

function fakeKeys(initialized = true): ProviderKeys & { refreshes: number } {
  const k: any = {
    refreshes: 0,
    initialized,
    current: () => [{ kid: 'k1', kty: 'RSA', key: publicKey }],
    refreshForUnknownKid: async () => void k.refreshes++,
    start: async () => undefined,
    close: () => undefined,
  };
  return k;
}

async function sign(claims: Record<string, unknown>, opts: { kid?: string; key?: any; alg?: string } = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: ISS, aud: 'client', iat: now, exp: now + 600, ...claims })
    .setProtectedHeader({ alg: opts.alg ?? 'RS256', kid: opts.kid ?? 'k1' })
    .sign(opts.key ?? privateKey);
}

const flags = (over: Partial<Parameters<typeof jwtConfigFromFlags>[0]> = {}) =>
  jwtConfigFromFlags({ issuerURL: ISS, clientID: 'client', usernameClaim: 'sub', groupsClaim: 'groups', groupsPrefix: '', requiredClaims: {}, signingAlgs: ['RS256'], caFile: '', ...over }, () => '');

describe('JwtAuthenticator (kube oidc.go)', () => {
  it('passes on tokens of other issuers and non-JWTs', async () => {
    const a = new JwtAuthenticator(flags(), ['api'], { keys: fakeKeys() });
    expect(await a.authenticateToken('abc.def')).toEqual({ ok: false });
    expect(await a.authenticateToken(await sign({ iss: 'https://elsewhere', sub: 'x' }))).toEqual({ ok: false });
  });

  it('prefixes claims other than email with the issuer, unless a prefix is given or "-"', async () => {
    const t = await sign({ sub: 'alice', email: 'a@x.io', email_verified: true, groups: 'one' });
    const byDefault = (await new JwtAuthenticator(flags(), ['api'], { keys: fakeKeys() }).authenticateToken(t)) as any;
    expect(byDefault.response.user).toMatchObject({ name: `${ISS}#alice`, groups: ['one', 'system:authenticated'] });
    const email = (await new JwtAuthenticator(flags({ usernameClaim: 'email' }), ['api'], { keys: fakeKeys() }).authenticateToken(t)) as any;
    expect(email.response.user.name).toBe('a@x.io');
    const dash = (await new JwtAuthenticator(flags({ usernamePrefix: '-' }), ['api'], { keys: fakeKeys() }).authenticateToken(t)) as any;
    expect(dash.response.user.name).toBe('alice');
    const pre = (await new JwtAuthenticator(flags({ usernamePrefix: 'oidc:' }), ['api'], { keys: fakeKeys() }).authenticateToken(t)) as any;
    expect(pre.response.user.name).toBe('oidc:alice');
    expect(pre.response.audiences).toEqual(['api']);
  });

  it("refuses with kube's messages", async () => {
    const a = new JwtAuthenticator(flags({ usernameClaim: 'email', requiredClaims: { hd: 'x.io' } }), ['api'], { keys: fakeKeys() });
    const exp = Math.floor(Date.now() / 1000) - 10;
    expect(await a.authenticateToken(await sign({ email: 'a@x.io', exp }))).toEqual({ ok: false, error: `oidc: verify token: oidc: token is expired (Token Expiry: ${goTime(exp)})` });
    expect(await a.authenticateToken(await sign({ email: 'a@x.io', aud: ['b', 'c'] }))).toEqual({ ok: false, error: 'oidc: verify token: oidc: expected audience in ["client"] got ["b" "c"]' });
    expect(await a.authenticateToken(await sign({ email: 'a@x.io', email_verified: false, hd: 'x.io' }))).toEqual({ ok: false, error: 'oidc: email not verified' });
    expect(await a.authenticateToken(await sign({ email: 'a@x.io' }))).toEqual({ ok: false, error: 'oidc: required claim hd not present in ID token' });
    expect(await a.authenticateToken(await sign({ email: 'a@x.io', hd: 'y.io' }))).toEqual({ ok: false, error: 'oidc: required claim hd value does not match. Got = y.io, want = x.io' });
    expect(await a.authenticateToken(await sign({ sub: 'a' }))).toEqual({ ok: false, error: 'oidc: parse username claims "email": claim not present' });
    expect(await a.authenticateToken(await sign({ email: 'a@x.io' }, { alg: 'RS512' }))).toEqual({ ok: false, error: 'oidc: verify token: oidc: id token signed with unsupported algorithm, expected ["RS256"] got "RS512"' });
    const notYet = Math.floor(Date.now() / 1000) + 3600;
    expect((await a.authenticateToken(await sign({ email: 'a@x.io', nbf: notYet }))) as any).toMatchObject({ ok: false, error: expect.stringContaining('before the nbf (not before) time') });
  });

  it('a signature by an unknown key refreshes the keys (once per call) and is refused', async () => {
    const keys = fakeKeys();
    const a = new JwtAuthenticator(flags(), ['api'], { keys });
    const r = await a.authenticateToken(await sign({ sub: 'x' }, { kid: 'k9', key: other.privateKey }));
    expect(r).toEqual({ ok: false, error: 'oidc: verify token: failed to verify signature: failed to verify id token signature' });
    expect(keys.refreshes).toBe(1);
  });

  it('answers "not initialized" before the first key fetch', async () => {
    const a = new JwtAuthenticator(flags(), ['api'], { keys: fakeKeys(false) });
    expect(await a.authenticateToken(await sign({ sub: 'x' }))).toEqual({ ok: false, error: 'oidc: authenticator not initialized' });
  });

  it('maps with CEL and runs the validation rules', async () => {
    const cfg: JWTAuthenticatorConfig = {
      issuer: { url: ISS, audiences: ['client'] },
      claimValidationRules: [{ expression: 'claims.level > 2', message: 'level too low' }],
      claimMappings: {
        username: { expression: "'u:' + claims.sub" },
        groups: { expression: 'claims.teams' },
        uid: { expression: 'claims.id' },
        extra: [{ key: 'example.com/level', valueExpression: 'string(claims.level)' }],
      },
      userValidationRules: [{ expression: "user.groups.all(g, g != 'banned')", message: 'banned' }],
    };
    const a = new JwtAuthenticator(cfg, ['api'], { keys: fakeKeys() });
    const ok = (await a.authenticateToken(await sign({ sub: 'x', teams: ['a', ''], id: '7', level: 3 }))) as any;
    expect(ok.response.user).toEqual({ name: 'u:x', uid: '7', groups: ['a', 'system:authenticated'], extra: { 'example.com/level': ['3'] } });
    expect(await a.authenticateToken(await sign({ sub: 'x', teams: [], id: '7', level: 1 }))).toEqual({
      ok: false,
      error: "oidc: error evaluating claim validation expression: validation expression 'claims.level > 2' failed: level too low",
    });
    expect(await a.authenticateToken(await sign({ sub: 'x', teams: 'banned', id: '7', level: 5 }))).toEqual({
      ok: false,
      error: "oidc: error evaluating user info validation rule: validation expression 'user.groups.all(g, g != 'banned')' failed: banned",
    });
    expect(((await a.authenticateToken(await sign({ sub: 'x', teams: [1], id: '7', level: 5 }))) as any).error).toBe(
      'oidc: error evaluating group claim expression: expression must return a string or a list of strings',
    );
  });
});
