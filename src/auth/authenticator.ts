// The contract of kubeshard's authenticators (kube's authenticator.Token and Request,
// apiserver/pkg/authentication/authenticator/interfaces.go): each one answers for the
// credentials it recognises and passes on the others, and the union (kube's
// request/union and token/union) tries them in order. A token an authenticator recognises
// and refuses is a 401 with that error; never a fall-through to anonymous.
//
// Thread ownership: the front thread that built them; an authenticator that talks to a
// provider (OIDC, webhook) keeps its caches and fetches per thread, never per request.
import type { UserInfo } from './user.js';

export interface AuthenticatorResponse {
  user: UserInfo;
  /** the audiences the credential is valid for (TokenReview's status.audiences) */
  audiences?: string[];
}

/** ok: recognised and valid; not ok without error: not this authenticator's token; with error: recognised and refused. */
export type AuthResult = { ok: true; response: AuthenticatorResponse } | { ok: false; error?: string };

/** kube's authenticator.Token: a bearer token (OIDC, webhook, bootstrap, service account, static file). */
export interface TokenAuthenticatorMode {
  readonly name: string;
  /** audiences: the API audiences the caller asks for (TokenReview's spec.audiences), or the server's */
  authenticateToken(token: string, audiences?: string[]): AuthResult | Promise<AuthResult>;
  /**
   * A remembered accepting answer that may be given before the authenticators in front of
   * this one are asked, because none of them could accept the token (the union's warm path
   * for tokens that are not the static file's); undefined to go the usual way.
   */
  cachedAccept?(token: string, audiences?: string[]): AuthResult | undefined;
}

/** What a request authenticator sees of a request (kube's authenticator.Request). */
export interface AuthRequest {
  headers: Record<string, string | undefined>;
  /** the verified TLS client certificate chain's leaf, when the transport has one */
  clientCert?: { commonName: string; organizations: string[]; raw?: Buffer; chain?: Buffer[]; chainFingerprints?: string[] };
  path: string;
}

/** kube's authenticator.Request: front proxy (requestheader), x509. */
export interface RequestAuthenticatorMode {
  readonly name: string;
  authenticateRequest(req: AuthRequest): AuthResult | Promise<AuthResult>;
  /**
   * Removes the headers this authenticator trusts from a request, whatever it decided
   * (kube's ClearAuthenticationHeaders): the filter calls it on every request.
   */
  stripIdentityHeaders?(headers: Record<string, string | undefined>): void;
}

/**
 * What a registered token authenticator's factory is given (see AuthorizerModeContext):
 * the options, the server's services, and the API audiences (--api-audiences, else the
 * service-account issuers) for authenticators that check audiences.
 */
export interface TokenAuthenticatorContext {
  options: any;
  services: Record<string, unknown>;
  apiAudiences: string[];
}

/** null or undefined: not configured by these options (the union skips it). */
export type TokenAuthenticatorFactory = (ctx: TokenAuthenticatorContext) => TokenAuthenticatorMode | null | undefined;

/**
 * kube's BuildAuthenticator order for bearer tokens: the token file, service accounts,
 * bootstrap tokens, OIDC/JWT (and --authentication-config's issuers), then the webhook.
 * A name not listed goes just before the webhook.
 */
export const TOKEN_AUTHENTICATOR_ORDER = ['token-file', 'service-account', 'bootstrap', 'oidc', 'jwt', 'authentication-config', 'webhook'];

const tokenAuthenticators = new Map<string, TokenAuthenticatorFactory>();

export function registerTokenAuthenticator(name: string, factory: TokenAuthenticatorFactory): void {
  tokenAuthenticators.set(name, factory);
}

/** The registered factories, in kube's order. */
export function tokenAuthenticatorFactories(): Array<[string, TokenAuthenticatorFactory]> {
  const rank = (n: string) => {
    const i = TOKEN_AUTHENTICATOR_ORDER.indexOf(n);
    return i >= 0 ? i : TOKEN_AUTHENTICATOR_ORDER.indexOf('webhook') - 0.5;
  };
  return [...tokenAuthenticators].sort((a, b) => rank(a[0]) - rank(b[0]));
}

/** null or undefined: not configured by these options. */
export type RequestAuthenticatorFactory = (ctx: TokenAuthenticatorContext) => RequestAuthenticatorMode | null | undefined;

const requestAuthenticators = new Map<string, RequestAuthenticatorFactory>();

/**
 * Plugs in a request authenticator that comes before x509 and the bearer token in kube's
 * order (the front proxy's requestheader authenticator). The filter asks the configured ones
 * first; one that accepts decides. One that refuses with an error is passed over as kube's
 * union does (x509 and the token still get their turn), but the request can no longer be
 * anonymous: if nothing else authenticates it, it is a 401.
 */
export function registerRequestAuthenticator(name: string, factory: RequestAuthenticatorFactory): void {
  requestAuthenticators.set(name, factory);
}

export function requestAuthenticatorFactories(): Array<[string, RequestAuthenticatorFactory]> {
  return [...requestAuthenticators];
}
