// X509 client certificates as a request authenticator (kube's request/x509 with its
// CommonNameUserConversion): the verified leaf's common name is the user, its organizations
// the groups. The transport verified the chain against every bundle it trusts; when that is
// more than --client-ca-file (the front proxy's CA too), the chain must also reach one of
// --client-ca-file's certificates, so that a front proxy's certificate never authenticates
// as a user of its own. One user is made per certificate object (the transport keeps one
// per connection).
// Thread ownership: the front thread (a WeakMap keyed by the connection's certificate).
import type { AuthRequest, AuthResult, RequestAuthenticatorMode } from '../authenticator.js';
import type { UserInfo } from '../user.js';
import { withAuthenticated } from './token-file.js';
import { chainReaches } from './ca-bundle.js';

export class X509Authenticator implements RequestAuthenticatorMode {
  readonly name = 'x509';
  private byCert = new WeakMap<object, AuthResult>();

  /** anchors: the fingerprints of --client-ca-file's certificates, when the transport trusts other bundles too */
  constructor(private readonly anchors?: Set<string>) {}

  authenticateRequest(req: Pick<AuthRequest, 'clientCert'>): AuthResult {
    const cert = req.clientCert;
    if (!cert) return { ok: false };
    let r = this.byCert.get(cert);
    if (!r && this.anchors && !chainReaches(cert.chainFingerprints, this.anchors)) {
      this.byCert.set(cert, (r = { ok: false, error: 'verifying certificate failed: certificate signed by unknown authority' }));
    }
    if (!r) {
      const user: UserInfo = withAuthenticated({ name: cert.commonName, uid: '', groups: cert.organizations });
      this.byCert.set(cert, (r = { ok: true, response: { user } }));
    }
    return r;
  }
}
