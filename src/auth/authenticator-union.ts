// The bearer-token authenticators joined as kube's token union (tokenunion.New): each is
// asked in kube's BuildAuthenticator order (token file, service accounts, then the
// registered ones: bootstrap, OIDC/JWT, webhook); the first that accepts decides; one that
// recognises and refuses adds its error and the next is asked; when none accepts, the
// errors are aggregated (TokenReview's status.error; the filter's 401). Every accepted user
// is in system:authenticated (kube's AuthenticatedGroupAdder).
//
// Synchronous while the authenticators are: a static token is one map lookup, and a cached
// webhook answer is a plain value; only a JWT check or a provider call makes a promise.
//
// Thread ownership: the front thread that built it (the registered authenticators' caches).
import { tokenAuthenticatorFactories, type AuthResult, type TokenAuthenticatorContext, type TokenAuthenticatorMode } from './authenticator.js';
import { StaticTokenAuthenticator, withAuthenticated } from './authenticators/token-file.js';
import { ServiceAccountAuthenticator } from './authenticators/service-account.js';
import type { ServiceAccountTokens } from './service-account.js';
import type { UserInfo } from './user.js';
import { aggregate } from './rbac/resolver.js';
import './authenticators/webhook.js';
import './authenticators/requestheader.js';

function isPromise<T>(x: T | Promise<T>): x is Promise<T> {
  return typeof (x as any)?.then === 'function';
}

// the grouped form of a result an authenticator keeps (a cached webhook answer) is made once
const groupedOf = new WeakMap<AuthResult, AuthResult>();

function grouped(r: AuthResult): AuthResult {
  if (!r.ok) return r;
  const u = r.response.user;
  if (u.groups.includes('system:authenticated')) return r;
  let g = groupedOf.get(r);
  if (!g) groupedOf.set(r, (g = { ok: true, response: { ...r.response, user: withAuthenticated(u) } }));
  return g;
}

export class TokenAuthenticatorUnion {
  readonly names: string[];
  /** the modes with a warm path that may go first (TokenAuthenticatorMode.cachedAccept) */
  private readonly warm: TokenAuthenticatorMode[];
  constructor(
    readonly modes: TokenAuthenticatorMode[],
    /** the static token file, also the first of modes: the filter's one-lookup path */
    readonly staticTokens?: StaticTokenAuthenticator,
  ) {
    this.names = modes.map((m) => m.name);
    this.warm = modes.filter((m) => m.cachedAccept);
  }

  staticUser(token: string): UserInfo | undefined {
    return this.staticTokens?.lookup(token);
  }

  authenticate(token: string, audiences?: string[]): AuthResult | Promise<AuthResult> {
    // a remembered JWT answers before the service-account check splits and decodes it
    // again on every request (the static file, which could hold any string, is asked first)
    if (this.warm.length && !this.staticTokens?.lookup(token)) {
      for (const m of this.warm) {
        const hit = m.cachedAccept!(token, audiences);
        if (hit) return grouped(hit);
      }
    }
    return this.run(token, audiences, 0, null);
  }

  private run(token: string, audiences: string[] | undefined, from: number, errs: string[] | null): AuthResult | Promise<AuthResult> {
    for (let i = from; i < this.modes.length; i++) {
      let r: AuthResult | Promise<AuthResult>;
      try {
        r = this.modes[i].authenticateToken(token, audiences);
      } catch (e: any) {
        r = { ok: false, error: String(e?.message ?? e) };
      }
      if (isPromise(r)) {
        return r.then(
          (res) => this.step(token, audiences, i, res, errs),
          (e) => this.step(token, audiences, i, { ok: false, error: String(e?.message ?? e) }, errs),
        );
      }
      if (r.ok) return grouped(r);
      if (r.error) (errs ??= []).push(r.error);
    }
    return errs ? { ok: false, error: aggregate(errs) } : { ok: false };
  }

  private step(token: string, audiences: string[] | undefined, i: number, r: AuthResult, errs: string[] | null): AuthResult | Promise<AuthResult> {
    if (r.ok) return grouped(r);
    if (r.error) (errs ??= []).push(r.error);
    return this.run(token, audiences, i + 1, errs);
  }
}

/**
 * The token authenticators these options configure, in kube's order: the static token
 * file, service accounts, then every registered factory that returns one.
 */
export function buildTokenAuthenticator(ctx: TokenAuthenticatorContext, parts: { tokens: Map<string, UserInfo>; serviceAccounts?: ServiceAccountTokens }): TokenAuthenticatorUnion {
  const staticTokens = new StaticTokenAuthenticator(parts.tokens, ctx.apiAudiences);
  const modes: TokenAuthenticatorMode[] = [staticTokens];
  if (parts.serviceAccounts) modes.push(new ServiceAccountAuthenticator(parts.serviceAccounts));
  for (const [, factory] of tokenAuthenticatorFactories()) {
    const m = factory(ctx);
    if (m) modes.push(m);
  }
  return new TokenAuthenticatorUnion(modes, staticTokens);
}
