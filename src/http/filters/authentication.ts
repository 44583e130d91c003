// Authentication: bearer tokens (the static token file, then service-account JWTs), then the
// TLS client certificate when the transport has one, else anonymous (when allowed). A
// credential that is presented and wrong is 401 at once; it never falls through to anonymous.
import type { Filter } from '../filter-chain.js';
import type { ApiRequest } from '../types.js';
import type { UserInfo } from '../../auth/user.js';
import { ANONYMOUS } from '../../auth/user.js';
import { errors } from '../../errors.js';
import { AuthenticationError, type ServiceAccountTokens } from '../../auth/service-account.js';
import type { TokenAuthenticatorMode } from '../../auth/authenticator.js';
import type { AnonymousConfig } from '../../auth/oidc/authentication-config.js';

export interface AuthenticationOptions {
  tokens: Map<string, UserInfo>;
  anonymous: boolean;
  serviceAccounts?: ServiceAccountTokens;
  // --- issue 21 (h5-oidc) wiring; the integrator moves these into the seam's registry ---
  /** token authenticators after the service accounts, in kube's order (bootstrap tokens, then JWT issuers) */
  moreTokenAuthenticators?: TokenAuthenticatorMode[];
  /** the anonymous authenticator of --authentication-config, when the file configures it (read per request: it reloads) */
  anonymousConfig?: () => AnonymousConfig | undefined;
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
    // kube's token union (request/union.New): each authenticator in turn, errors gathered,
    // the first success wins; all refused is the errors joined as kube's aggregate.
    const errs: string[] = [];
    const sa = this.opts.serviceAccounts;
    if (sa) {
      try {
        const r = await sa.authenticate(token, audiences && audiences.length ? audiences : undefined);
        if (r) return { authenticated: true, user: r.user, audiences: r.audiences };
      } catch (e) {
        if (!(e instanceof AuthenticationError)) throw e;
        errs.push(e.message);
      }
    }
    // (issue 21, h5-oidc: the seam's registry replaces this loop)
    for (const a of this.opts.moreTokenAuthenticators ?? []) {
      const r = await a.authenticateToken(token, audiences && audiences.length ? audiences : undefined);
      if (r.ok) return { authenticated: true, user: r.response.user, audiences: r.response.audiences ?? audiences ?? this.opts.serviceAccounts?.opts.apiAudiences };
      if (r.error) errs.push(r.error);
    }
    if (errs.length === 0) return { authenticated: false };
    return { authenticated: false, error: errs.length === 1 ? errs[0] : `[${errs.join(', ')}]` };
  }
}

/** --anonymous-auth, or the configuration file's anonymous authenticator with its path conditions (kube's anonymous.NewAuthenticator). */
function anonymousAllowed(opts: AuthenticationOptions, path: string): boolean {
  const a = opts.anonymousConfig?.();
  if (!a) return opts.anonymous;
  if (!a.enabled) return false;
  return !a.conditions?.length || a.conditions.some((c) => c.path === path);
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
      if (req.clientCertError !== undefined || !anonymousAllowed(opts, req.path)) throw errors.unauthorized();
      req.user = ANONYMOUS;
    },
  };
}
