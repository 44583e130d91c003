// Service-account JWTs as a token authenticator (kube's serviceaccount JWT authenticator):
// a token of another issuer is not ours (passed on); ours and invalid is refused with
// the reason. The verification itself is in ../service-account.ts.
import type { AuthResult, TokenAuthenticatorMode } from '../authenticator.js';
import { AuthenticationError, type ServiceAccountTokens } from '../service-account.js';

export class ServiceAccountAuthenticator implements TokenAuthenticatorMode {
  readonly name = 'service-account';
  constructor(readonly tokens: ServiceAccountTokens) {}

  authenticateToken(token: string, audiences?: string[]): AuthResult | Promise<AuthResult> {
    // another issuer's token passes on at once: no promise on the path of the tokens after us
    if (!this.tokens.isOurs(token)) return { ok: false };
    return this.verify(token, audiences);
  }

  private async verify(token: string, audiences?: string[]): Promise<AuthResult> {
    try {
      const r = await this.tokens.authenticate(token, audiences && audiences.length ? audiences : undefined);
      if (!r) return { ok: false };
      return { ok: true, response: { user: r.user, audiences: r.audiences } };
    } catch (e) {
      if (e instanceof AuthenticationError) return { ok: false, error: e.message };
      throw e;
    }
  }
}
