// The static token file (--token-auth-file) as a token authenticator (kube's
// token/tokenfile): one map lookup, each user resolved once with system:authenticated
// added, so the filter can keep its one-lookup fast path. Immutable after start.
import type { AuthResult, TokenAuthenticatorMode } from '../authenticator.js';
import type { UserInfo } from '../user.js';

export function withAuthenticated(u: UserInfo): UserInfo {
  return u.groups.includes('system:authenticated') ? u : { ...u, groups: [...u.groups, 'system:authenticated'] };
}

export class StaticTokenAuthenticator implements TokenAuthenticatorMode {
  readonly name = 'token-file';
  private resolved = new Map<string, UserInfo>();

  constructor(
    tokens: Map<string, UserInfo>,
    /** the audiences a static token is taken to be valid for (the API audiences) */
    private apiAudiences: string[] = [],
  ) {
    for (const [t, u] of tokens) this.resolved.set(t, withAuthenticated(u));
  }

  lookup(token: string): UserInfo | undefined {
    return this.resolved.get(token);
  }

  authenticateToken(token: string, audiences?: string[]): AuthResult {
    const user = this.resolved.get(token);
    if (!user) return { ok: false };
    return { ok: true, response: { user, audiences: audiences ?? this.apiAudiences } };
  }
}
