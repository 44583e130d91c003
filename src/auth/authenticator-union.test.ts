import { describe, it, expect } from 'vitest';
import { TokenAuthenticatorUnion } from './authenticator-union.js';
import { StaticTokenAuthenticator } from './authenticators/token-file.js';
import { TOKEN_AUTHENTICATOR_ORDER, registerTokenAuthenticator, tokenAuthenticatorFactories, type AuthResult, type TokenAuthenticatorMode } from './authenticator.js';

function mode(name: string, answers: Record<string, AuthResult>, async = false): TokenAuthenticatorMode & { asked: string[] } {
  const m = {
    name,
    asked: [] as string[],
    authenticateToken(t: string) {
      m.asked.push(t);
      const r = answers[t] ?? { ok: false };
      return async ? Promise.resolve(r) : r;
    },
  };
  return m;
}
const user = (name: string) => ({ name, uid: '', groups: ['g'] });

describe('token authenticator union', () => {
  const statics = new StaticTokenAuthenticator(new Map([['s', user('static')]]), ['api']);
  it('a static token is one synchronous lookup, in system:authenticated, with the API audiences', () => {
    const later = mode('later', {});
    const u = new TokenAuthenticatorUnion([statics, later], statics);
    expect(u.staticUser('s')?.groups).toEqual(['g', 'system:authenticated']);
    const r = u.authenticate('s');
    expect(r).toEqual({ ok: true, response: { user: { name: 'static', uid: '', groups: ['g', 'system:authenticated'] }, audiences: ['api'] } });
    expect(later.asked).toEqual([]);
  });
  it('goes on after a refusal with an error; the first acceptance decides and is grouped', async () => {
    const sa = mode('sa', { t: { ok: false, error: 'token has expired' } }, true);
    const hook = mode('hook', { t: { ok: true, response: { user: user('hooked') } } });
    const u = new TokenAuthenticatorUnion([statics, sa, hook], statics);
    expect(await u.authenticate('t')).toEqual({ ok: true, response: { user: { name: 'hooked', uid: '', groups: ['g', 'system:authenticated'] } } });
  });
  it("a mode's remembered acceptance answers before the modes in front of it, never before the static file", () => {
    const sa = mode('sa', {});
    const jwt = Object.assign(mode('jwt', {}), {
      cachedAccept: (t: string): AuthResult | undefined => (t === 'j' || t === 's' ? { ok: true, response: { user: user('remembered') } } : undefined),
    });
    const u = new TokenAuthenticatorUnion([statics, sa, jwt], statics);
    expect(u.authenticate('j')).toEqual({ ok: true, response: { user: { name: 'remembered', uid: '', groups: ['g', 'system:authenticated'] } } });
    expect(sa.asked).toEqual([]);
    expect((u.authenticate('s') as any).response.user.name).toBe('static');
    // nothing remembered: the usual order
    u.authenticate('other');
    expect(sa.asked).toEqual(['other']);
  });
  it('nobody accepting: the errors aggregated, as TokenReview reports them', async () => {
    const a = mode('a', { t: { ok: false, error: 'e1' } });
    const b = mode('b', { t: { ok: false, error: 'e2' } }, true);
    const c = mode('c', {});
    const u = new TokenAuthenticatorUnion([a, b, c]);
    expect(await u.authenticate('t')).toEqual({ ok: false, error: '[e1, e2]' });
    expect(new TokenAuthenticatorUnion([c]).authenticate('t')).toEqual({ ok: false });
  });
  it("registered authenticators come in kube's order, whatever the registration order", () => {
    registerTokenAuthenticator('test-unknown', () => null);
    registerTokenAuthenticator('oidc', () => null);
    registerTokenAuthenticator('bootstrap', () => null);
    const names = tokenAuthenticatorFactories().map(([n]) => n);
    expect(names.indexOf('bootstrap')).toBeLessThan(names.indexOf('oidc'));
    expect(names.indexOf('oidc')).toBeLessThan(names.indexOf('test-unknown'));
    expect(names.indexOf('test-unknown')).toBeLessThan(names.indexOf('webhook'));
    expect(TOKEN_AUTHENTICATOR_ORDER.at(-1)).toBe('webhook');
  });
});
