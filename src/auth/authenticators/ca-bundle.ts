// Which CA bundle a verified client certificate chain belongs to. The node:http2 front end
// asks for client certificates trusting the union of --client-ca-file and
// --requestheader-client-ca-file (kube's dynamic serving bundle does the same), so OpenSSL's
// verdict says only "one of them"; each authenticator then checks that the chain OpenSSL built
// passes through a certificate of its own bundle, which is what verifying against that bundle
// alone would accept (Go's Verify takes any certificate of its root pool as the anchor).
// Stateless.
import { X509Certificate } from 'node:crypto';

/** The SHA-256 fingerprints (node's colon-separated upper-case form, as getPeerCertificate's fingerprint256) of every certificate in a PEM bundle. */
export function bundleFingerprints(pem: string | Buffer): Set<string> {
  const out = new Set<string>();
  for (const block of String(pem).match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []) out.add(new X509Certificate(block).fingerprint256);
  return out;
}

/** Whether a verified chain (its fingerprints, leaf first) passes through one of the bundle's certificates. */
export function chainReaches(chain: string[] | undefined, anchors: Set<string>): boolean {
  if (!chain) return false;
  for (const f of chain) if (anchors.has(f)) return true;
  return false;
}
