// Authentication: bearer tokens (the static token file, then service-account JWTs), then the
// TLS client certificate when the transport has one, else anonymous (when allowed). A
// credential that is presented and wrong is 401 at once; it never falls through to anonymous.
import type { Filter } from '../filter-chain.js';
import type { ApiRequest } from '../types.js';
import type { UserInfo } from '../../auth/user.js';
import { ANONYMOUS } from '../../auth/user.js';
import { errors } from '../../errors.js';
import { AuthenticationError, type ServiceAccountTokens } from '../../auth/service-account.js';

export interface AuthenticationOptions {
  tokens: Map<string, UserInfo>;
  anonymous: boolean;
  serviceAccounts?: ServiceAccountTokens;
}

function withAuthenticated(u: UserInfo): UserInfo {
  return u.groups.includes('system:authenticated') ? u : { ...u, groups: [...u.groups, 'system:authenticated'] };
}

export interface TokenAuthentication {
  authenticated: boolean;
  user?: UserInfo;
  audiences?: string[];
  /** why a token that an authenticator recognised was refused */
  error?: string;
}

/**
 * The bearer-token authenticators in kube's order (token file, service accounts), as
 * TokenReview and the filter use them. Synchronous for the static tokens.
 */
export class TokenAuthenticator {
  private resolved = new Map<string, UserInfo>();
  constructor(private opts: AuthenticationOptions) {
    // Users are resolved once per token, not per request.
    for (const [t, u] of opts.tokens) this.resolved.set(t, withAuthenticated(u));
  }

  staticUser(token: string): UserInfo | undefined {
    return this.resolved.get(token);
  }

  async authenticate(token: string, audiences?: string[]): Promise<TokenAuthentication> {
    const u = this.resolved.get(token);
    if (u) return { authenticated: true, user: u, audiences: audiences ?? this.opts.serviceAccounts?.opts.apiAudiences };
    const sa = this.opts.serviceAccounts;
    if (!sa) return { authenticated: false };
    try {
      const r = await sa.authenticate(token, audiences && audiences.length ? audiences : undefined);
      if (!r) return { authenticated: false };
      return { authenticated: true, user: r.user, audiences: r.audiences };
    } catch (e) {
      if (e instanceof AuthenticationError) return { authenticated: false, error: e.message };
      throw e;
    }
  }
}

export function authenticationFilter(opts: AuthenticationOptions, tokens = new TokenAuthenticator(opts)): Filter {
  // Header values already seen to carry a valid static token: a client sends the same header
  // on every request, so most requests cost one map lookup. Bounded, and only valid ones enter.
  // Service-account tokens are not remembered: they expire, and their account may go.
  const byHeader = new Map<string, UserInfo>();
  const byCert = new WeakMap<NonNullable<ApiRequest['clientCert']>, UserInfo>();
  return {
    name: 'authentication',
    run(req) {
      // A verified client certificate decides first, as kube's x509 authenticator comes
      // before the token ones; a refused one fails the request unless a token succeeds.
      const cert = req.clientCert;
      if (cert) {
        // one user per certificate object (the transport keeps one per connection)
        let user = byCert.get(cert);
        if (!user) byCert.set(cert, (user = withAuthenticated({ name: cert.commonName, uid: '', groups: cert.organizations })));
        req.user = user;
        return;
      }
      const auth = req.headers['authorization'];
      if (auth) {
        const known = byHeader.get(auth);
        if (known) {
          req.user = known;
          return;
        }
        const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
        if (!m) throw errors.unauthorized();
        const token = m[1].trim();
        const user = tokens.staticUser(token);
        if (user) {
          if (byHeader.size < 1024) byHeader.set(auth, user);
          req.user = user;
          return;
        }
        return tokens.authenticate(token).then((r) => {
          if (!r.authenticated || !r.user) throw errors.unauthorized();
          req.user = r.user;
        });
      }
      // (never anonymous after a failed credential: kube's union fails on the error)
      if (req.clientCertError !== undefined || !opts.anonymous) throw errors.unauthorized();
      req.user = ANONYMOUS;
    },
  };
}
