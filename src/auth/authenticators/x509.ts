// X509 client certificates as a request authenticator (kube's request/x509 with its
// CommonNameUserConversion): the verified leaf's common name is the user, its organizations
// the groups. The transport verified the chain; one user is made per certificate object
// (the transport keeps one per connection).
// Thread ownership: the front thread (a WeakMap keyed by the connection's certificate).
import type { AuthRequest, AuthResult, RequestAuthenticatorMode } from '../authenticator.js';
import type { UserInfo } from '../user.js';
import { withAuthenticated } from './token-file.js';

export class X509Authenticator implements RequestAuthenticatorMode {
  readonly name = 'x509';
  private byCert = new WeakMap<object, AuthResult>();

  authenticateRequest(req: Pick<AuthRequest, 'clientCert'>): AuthResult {
    const cert = req.clientCert;
    if (!cert) return { ok: false };
    let r = this.byCert.get(cert);
    if (!r) {
      const user: UserInfo = withAuthenticated({ name: cert.commonName, uid: '', groups: cert.organizations });
      this.byCert.set(cert, (r = { ok: true, response: { user } }));
    }
    return r;
  }
}
