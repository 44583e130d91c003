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
}

/** What a request authenticator sees of a request (kube's authenticator.Request). */
export interface AuthRequest {
  headers: Record<string, string | undefined>;
  /** the verified TLS client certificate chain's leaf, when the transport has one */
  clientCert?: { commonName: string; organizations: string[]; raw?: Buffer; chain?: Buffer[] };
  path: string;
}

/** kube's authenticator.Request: front proxy (requestheader), x509. */
export interface RequestAuthenticatorMode {
  readonly name: string;
  authenticateRequest(req: AuthRequest): AuthResult | Promise<AuthResult>;
}
