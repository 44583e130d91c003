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

/** A bundle's fingerprints, fixed or followed (DynamicCaFile: replaced when its file changes). */
export type CaAnchors = Set<string> | { readonly fingerprints: Set<string> };

export class X509Authenticator implements RequestAuthenticatorMode {
  readonly name = 'x509';
  private byCert = new WeakMap<object, AuthResult>();
  /** the anchors byCert's answers were made with: a new bundle starts them over */
  private seen: Set<string> | undefined;

  /**
   * anchors: --client-ca-file's certificates, when the transport trusts other bundles too or
   * the file is followed (then a connection verified before the file changed is judged by
   * the bundle of now, as kube verifies each request's chain against its current pool)
   */
  constructor(private readonly anchors?: CaAnchors) {}

  authenticateRequest(req: Pick<AuthRequest, 'clientCert'>): AuthResult {
    const cert = req.clientCert;
    if (!cert) return { ok: false };
    const anchors = this.anchors instanceof Set ? this.anchors : this.anchors?.fingerprints;
    if (anchors !== this.seen) {
      this.seen = anchors;
      this.byCert = new WeakMap();
    }
    let r = this.byCert.get(cert);
    if (!r && anchors && !chainReaches(cert.chainFingerprints, anchors)) {
      this.byCert.set(cert, (r = { ok: false, error: 'verifying certificate failed: certificate signed by unknown authority' }));
    }
    if (!r) {
      const user: UserInfo = withAuthenticated({ name: cert.commonName, uid: '', groups: cert.organizations });
      this.byCert.set(cert, (r = { ok: true, response: { user } }));
    }
    return r;
  }
}
