// Authentication: the filter only calls the authenticators in src/auth (kube's request union:
// the front proxy's request headers, x509, then the bearer token through the token union,
// then anonymous when allowed).
// A credential that is presented and wrong is 401 at once; it never falls through to
// anonymous.
import type { Filter } from '../filter-chain.js';
import type { ApiRequest } from '../types.js';
import type { UserInfo } from '../../auth/user.js';
import { ANONYMOUS } from '../../auth/user.js';
import { errors } from '../../errors.js';
import type { AuthRequest, AuthResult, RequestAuthenticatorMode } from '../../auth/authenticator.js';
import type { TokenAuthenticatorUnion } from '../../auth/authenticator-union.js';
import { X509Authenticator, type CaAnchors } from '../../auth/authenticators/x509.js';
import { stripStandardIdentityHeaders } from '../../auth/authenticators/requestheader.js';
import type { AnonymousConfig } from '../../auth/oidc/authentication-config.js';

export interface AuthenticationOptions {
  anonymous: boolean;
  /** the bearer-token authenticators (src/auth/authenticator-union.ts) */
  tokens: TokenAuthenticatorUnion;
  /** request authenticators before x509 (requestheader), from registerRequestAuthenticator; none costs nothing */
  requestAuthenticators?: RequestAuthenticatorMode[];
  /**
   * --client-ca-file's certificates, when the transport also trusts another bundle (the front
   * proxy's): a chain must reach one of them to authenticate as x509. null: no
   * --client-ca-file, so no x509 authenticator (a certificate alone is nobody's).
   * Undefined: the transport trusts only --client-ca-file. A followed file (DynamicCaFile)
   * is read per request.
   */
  clientCaAnchors?: CaAnchors | null;
  /** the anonymous authenticator of --authentication-config, when the file configures it (read per request: it reloads) */
  anonymousConfig?: () => AnonymousConfig | undefined;
}

/** --anonymous-auth, or the configuration file's anonymous authenticator with its path conditions (kube's anonymous.NewAuthenticator). */
function anonymousAllowed(opts: AuthenticationOptions, path: string): boolean {
  const a = opts.anonymousConfig?.();
  if (!a) return opts.anonymous;
  if (!a.enabled) return false;
  return !a.conditions?.length || a.conditions.some((c) => c.path === path);
}

export function authenticationFilter(opts: AuthenticationOptions): Filter {
  const tokens = opts.tokens;
  const x509 = opts.clientCaAnchors === null ? null : new X509Authenticator(opts.clientCaAnchors);
  // Header values already seen to carry a valid static token: a client sends the same header
  // on every request, so most requests cost one map lookup. Bounded, and only valid ones enter.
  // Other tokens are not remembered here: they expire, and their account may go (a webhook's
  // answers are cached by its own TTL).
  const byHeader = new Map<string, UserInfo>();
  const accept = (req: ApiRequest, r: AuthResult) => {
    if (!r.ok) throw errors.unauthorized();
    req.user = r.response.user;
  };
  const before = opts.requestAuthenticators?.length ? opts.requestAuthenticators : null;
  const filter: Filter = {
    name: 'authentication',
    run(req) {
      // A verified client certificate decides first, as kube's x509 authenticator comes
      // before the token ones.
      let refused = req.clientCertError !== undefined;
      if (req.clientCert && x509) {
        const r = x509.authenticateRequest(req);
        if (r.ok) {
          req.user = r.response.user;
          return;
        }
        if (r.error) refused = true;
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
        const r = tokens.authenticate(token);
        if (r instanceof Promise) return r.then((res) => accept(req, res));
        accept(req, r);
        return;
      }
      // (never anonymous after a failed credential: kube's union fails on the error)
      if (refused || !anonymousAllowed(opts, req.path)) throw errors.unauthorized();
      req.user = ANONYMOUS;
    },
  };
  if (!before) {
    // No front proxy configured: its standard headers still leave every request (kube's
    // filter clears them whatever the configuration), before any later filter sees them.
    const run = filter.run;
    return {
      name: 'authentication',
      run(req, res) {
        stripStandardIdentityHeaders(req.headers as Record<string, string | undefined>);
        return run(req, res);
      },
    };
  }
  // kube's request union: requestheader (and any other registered) before x509 and tokens.
  // Their headers leave the request whatever they decide (kube's ClearAuthenticationHeaders),
  // before any later filter, the aggregator's proxy or audit sees it.
  const rest = filter.run;
  const strip = before.filter((a) => a.stripIdentityHeaders);
  const grouped = (u: UserInfo): UserInfo => (u.groups.includes('system:authenticated') ? u : { ...u, groups: [...u.groups, 'system:authenticated'] });
  // Synchronous while the authenticators are (the requestheader one is): a request does not
  // become a promise for being asked about a front proxy.
  const from = (req: ApiRequest, res: Parameters<Filter['run']>[1], ar: AuthRequest, i: number, refusal: string | undefined): ReturnType<Filter['run']> => {
    for (; i < before.length; i++) {
      const r = before[i].authenticateRequest(ar);
      if (r instanceof Promise) {
        const next = i + 1;
        return r.then(
          (res2) => {
            if (res2.ok) return done(req, ar, grouped(res2.response.user));
            return from(req, res, ar, next, refusal ?? res2.error);
          },
          (err) => {
            stripAll(ar);
            throw err;
          },
        );
      }
      if (r.ok) return done(req, ar, grouped(r.response.user));
      // (passed over, as kube's union collects the error; nothing after may be anonymous)
      refusal ??= r.error;
    }
    stripAll(ar);
    if (refusal !== undefined && req.clientCertError === undefined) req.clientCertError = refusal;
    return rest(req, res);
  };
  const stripAll = (ar: AuthRequest) => {
    // (the front proxy's authenticator strips the standard names with its own; without it they go all the same)
    if (strip.length === 0) stripStandardIdentityHeaders(ar.headers);
    for (const a of strip) a.stripIdentityHeaders!(ar.headers);
  };
  const done = (req: ApiRequest, ar: AuthRequest, user: UserInfo) => {
    stripAll(ar);
    req.user = user;
  };
  return {
    name: 'authentication',
    run(req, res) {
      const ar: AuthRequest = { headers: req.headers as AuthRequest['headers'], clientCert: req.clientCert, path: req.path };
      try {
        return from(req, res, ar, 0, undefined);
      } catch (err) {
        stripAll(ar);
        throw err;
      }
    },
  };
}
