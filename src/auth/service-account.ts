// Service-account tokens: the signing key (--service-account-signing-key-file), the keys that
// verify (--service-account-key-file), TokenRequest issuing (serviceaccounts/token) and the
// bearer-token authenticator behind both requests and TokenReview, as kube-apiserver's
// pkg/serviceaccount does. Tokens are RS256 JWTs whose `kid` is the base64url SHA-256 of the
// public key's DER (PKIX), so the JWKS served at /openid/v1/jwks names them the same way.
//
// Thread ownership: the front thread. Issuing and verifying are async (WebCrypto); the
// object lookups (--service-account-lookup) read the watch caches synchronously.
import { X509Certificate, createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { writePrivateFile } from '../file-modes.js';
import { SignJWT, compactVerify, exportJWK, decodeProtectedHeader } from 'jose';
import type { UserInfo } from './user.js';

/** What kube's validator needs to read: a service account, a pod or a secret, from the caches. */
export type ObjectLookup = (resource: 'serviceaccounts' | 'pods' | 'secrets', namespace: string, name: string) => any | null;

export interface ServiceAccountTokenOptions {
  issuers: string[];
  apiAudiences: string[];
  signingKeyFile: string;
  keyFiles: string[];
  lookup: boolean;
  /** --service-account-max-token-expiration in seconds; 0 means none */
  maxExpirationSeconds: number;
}

export const SA_PREFIX = 'system:serviceaccount:';

/** Creates an RSA signing key at `file` (PKCS#8 PEM) unless one is there; kube expects an operator to provide it. */
export function ensureSigningKey(file: string): void {
  if (existsSync(file)) return;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writePrivateFile(file, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
}

/** The public keys a PEM file holds: public keys, private keys (their public half) or certificates. */
function publicKeysOf(file: string): KeyObject[] {
  const pem = readFileSync(file, 'utf8');
  const blocks = pem.match(/-----BEGIN ([A-Z0-9 ]+)-----[\s\S]+?-----END \1-----/g) ?? [];
  const out: KeyObject[] = [];
  for (const b of blocks) {
    if (/BEGIN CERTIFICATE/.test(b)) {
      out.push(new X509Certificate(b).publicKey);
    } else if (/PRIVATE KEY/.test(b)) out.push(createPublicKey(createPrivateKey(b)));
    else out.push(createPublicKey(b));
  }
  if (out.length === 0) throw new Error(`${file}: no PEM-encoded public or private key found`);
  return out;
}

export function keyIdOf(pub: KeyObject): string {
  const der = pub.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('base64url');
}

function algOf(pub: KeyObject): string {
  if (pub.asymmetricKeyType === 'rsa') return 'RS256';
  if (pub.asymmetricKeyType === 'ec') {
    const c = pub.asymmetricKeyDetails?.namedCurve;
    return c === 'secp384r1' ? 'ES384' : c === 'secp521r1' ? 'ES512' : 'ES256';
  }
  throw new Error(`unsupported service account key type ${pub.asymmetricKeyType}`);
}

export interface TokenRequestResult {
  token: string;
  /** seconds since the epoch */
  expiration: number;
}

export interface BoundRef {
  kind: 'Pod' | 'Secret' | 'Node';
  name: string;
  uid: string;
}

export class AuthenticationError extends Error {}

export class ServiceAccountTokens {
  readonly issuer: string;
  private signingKey: KeyObject;
  private signingKid: string;
  private signingAlg: string;
  private verifyKeys = new Map<string, { key: KeyObject; alg: string }>();

  constructor(
    readonly opts: ServiceAccountTokenOptions,
    private lookup: ObjectLookup,
  ) {
    this.issuer = opts.issuers[0];
    this.signingKey = createPrivateKey(readFileSync(opts.signingKeyFile));
    const pub = createPublicKey(this.signingKey);
    this.signingKid = keyIdOf(pub);
    this.signingAlg = algOf(pub);
    const files = opts.keyFiles.length ? opts.keyFiles : [opts.signingKeyFile];
    for (const f of files) for (const k of publicKeysOf(f)) this.verifyKeys.set(keyIdOf(k), { key: k, alg: algOf(k) });
  }

  /** Signs a token for `sa` (a stored ServiceAccount), as kube's token.Claims plus the issuer. */
  async issue(
    sa: any,
    audiences: string[],
    expirationSeconds: number,
    bound?: BoundRef,
    node?: { name: string; uid: string },
    /** kube's extended expiry (--service-account-extend-token-expiration): valid this long, warn after the requested time */
    extend?: { validSeconds: number; warnAfterSeconds: number },
  ): Promise<TokenRequestResult> {
    const now = Math.floor(Date.now() / 1000);
    const exp = now + expirationSeconds;
    const jwtExp = extend ? now + extend.validSeconds : exp;
    const k8s: Record<string, unknown> = {
      namespace: sa.metadata.namespace,
      serviceaccount: { name: sa.metadata.name, uid: sa.metadata.uid },
    };
    if (bound?.kind === 'Pod') {
      k8s.pod = { name: bound.name, uid: bound.uid };
      if (node) k8s.node = node;
    } else if (bound?.kind === 'Secret') k8s.secret = { name: bound.name, uid: bound.uid };
    else if (bound?.kind === 'Node') k8s.node = { name: bound.name, uid: bound.uid };
    if (extend) k8s.warnafter = now + extend.warnAfterSeconds;
    const token = await new SignJWT({ 'kubernetes.io': k8s })
      .setProtectedHeader({ alg: this.signingAlg, kid: this.signingKid })
      .setIssuer(this.issuer)
      .setSubject(`${SA_PREFIX}${sa.metadata.namespace}:${sa.metadata.name}`)
      .setAudience(audiences)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(jwtExp)
      .setJti(randomUUID())
      .sign(this.signingKey);
    return { token, expiration: exp };
  }

  /** Whether `token` looks like one of ours (synchronous: other tokens pass on without a promise). */
  isOurs(token: string): boolean {
    return this.claimsIfOurs(token) !== null;
  }

  /** Whether `token` looks like one of ours: a JWT whose issuer is one we accept. */
  private claimsIfOurs(token: string): any | null {
    const parts = token.split('.');
    if (parts.length !== 3) return null;
    try {
      const text = Buffer.from(parts[1], 'base64url').toString('utf8');
      // Another issuer's JWT (OIDC) on every request: skip the JSON parse when the payload
      // cannot name one of our issuers. Without a backslash no JSON escape can hide the
      // issuer, so its literal text would have to appear.
      if (!text.includes('\\') && !this.opts.issuers.some((i) => text.includes(i))) return null;
      const payload = JSON.parse(text);
      if (!payload || typeof payload !== 'object' || !this.opts.issuers.includes(payload.iss)) return null;
      return payload;
    } catch {
      return null;
    }
  }

  /**
   * kube's JWT token authenticator: null when the token is not a service-account token of an
   * issuer we accept (another authenticator may know it); throws AuthenticationError when it
   * is ours and invalid; otherwise the user and the audiences it was accepted for.
   */
  async authenticate(token: string, wantAudiences: string[] = this.opts.apiAudiences): Promise<{ user: UserInfo; audiences: string[] } | null> {
    const claims = this.claimsIfOurs(token);
    if (!claims) return null;
    let header;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      return null;
    }
    const candidates = header.kid && this.verifyKeys.has(header.kid) ? [this.verifyKeys.get(header.kid)!] : [...this.verifyKeys.values()];
    let verified = false;
    for (const k of candidates) {
      if (header.alg !== k.alg) continue;
      try {
        await compactVerify(token, k.key);
        verified = true;
        break;
      } catch {
        /* next key */
      }
    }
    if (!verified) throw new AuthenticationError('invalid signature');
    const tokenAuds: string[] = Array.isArray(claims.aud) ? claims.aud : typeof claims.aud === 'string' ? [claims.aud] : [];
    const audiences = wantAudiences.filter((a) => tokenAuds.includes(a));
    if (audiences.length === 0) throw new AuthenticationError('token audiences ' + goStringList(tokenAuds) + ' is invalid for the target audiences ' + goStringList(wantAudiences));
    const now = Math.floor(Date.now() / 1000);
    // go-jose's default leeway of a minute either way
    if (typeof claims.exp === 'number' && now > claims.exp + 60) throw new AuthenticationError('service account token has expired');
    if (typeof claims.nbf === 'number' && now < claims.nbf - 60) throw new AuthenticationError('service account token is not valid yet');
    const k8s = claims['kubernetes.io'] ?? {};
    const ns: string = k8s.namespace ?? '';
    const saName: string = k8s.serviceaccount?.name ?? '';
    const saUid: string = k8s.serviceaccount?.uid ?? '';
    if (!ns || !saName) throw new AuthenticationError('service account token claims could not be validated due to unexpected private claim');
    const extra: Record<string, string[]> = {};
    if (this.opts.lookup) {
      const sa = this.lookup('serviceaccounts', ns, saName);
      if (!sa) throw new AuthenticationError(`serviceaccounts "${saName}" not found`);
      if (deletedBefore(sa, now - 60)) throw new AuthenticationError(`service account ${ns}/${saName} has been deleted`);
      if (sa.metadata.uid !== saUid) throw new AuthenticationError(`service account UID (${sa.metadata.uid}) does not match claim (${saUid})`);
      for (const [kind, ref] of [['secrets', k8s.secret], ['pods', k8s.pod]] as const) {
        if (!ref) continue;
        const o = this.lookup(kind, ns, ref.name);
        if (!o || deletedBefore(o, now - 60)) throw new AuthenticationError('service account token has been invalidated');
        if (o.metadata.uid !== ref.uid) {
          throw new AuthenticationError(kind === 'pods' ? `pod UID (${o.metadata.uid}) does not match service account pod ref claim (${ref.uid})` : `secret UID (${o.metadata.uid}) does not match service account secret ref claim (${ref.uid})`);
        }
      }
    }
    if (k8s.pod) {
      extra['authentication.kubernetes.io/pod-name'] = [k8s.pod.name];
      extra['authentication.kubernetes.io/pod-uid'] = [k8s.pod.uid];
    }
    if (k8s.node) {
      extra['authentication.kubernetes.io/node-name'] = [k8s.node.name];
      if (k8s.node.uid) extra['authentication.kubernetes.io/node-uid'] = [k8s.node.uid];
    }
    if (typeof claims.jti === 'string' && claims.jti) extra['authentication.kubernetes.io/credential-id'] = [`JTI=${claims.jti}`];
    const user: UserInfo = {
      name: `${SA_PREFIX}${ns}:${saName}`,
      uid: saUid,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
      ...(Object.keys(extra).length ? { extra } : {}),
    };
    return { user, audiences };
  }

  /** The JSON Web Key Set of the verifying keys (kube's /openid/v1/jwks). */
  async jwks(): Promise<string> {
    const keys = [];
    for (const [kid, { key, alg }] of this.verifyKeys) {
      const jwk = await exportJWK(key);
      keys.push({ use: 'sig', kty: jwk.kty, kid, alg, ...(jwk.kty === 'RSA' ? { n: jwk.n, e: jwk.e } : { crv: jwk.crv, x: jwk.x, y: jwk.y }) });
    }
    return JSON.stringify({ keys });
  }

  /** The OpenID provider configuration (kube's /.well-known/openid-configuration). */
  openidConfiguration(jwksUri: string): string {
    const algs = [...new Set([...this.verifyKeys.values()].map((k) => k.alg))].sort();
    return JSON.stringify({
      issuer: this.issuer,
      jwks_uri: jwksUri,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: algs,
    });
  }
}

function deletedBefore(o: any, epochSeconds: number): boolean {
  const ts = o?.metadata?.deletionTimestamp;
  return !!ts && Date.parse(ts) / 1000 < epochSeconds;
}

function goStringList(a: string[]): string {
  return `[${a.map((s) => JSON.stringify(s)).join(' ')}]`;
}
