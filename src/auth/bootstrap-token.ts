// Bootstrap tokens (--enable-bootstrap-token-auth; kube's plugin/pkg/auth/authenticator/
// token/bootstrap): a token `<id>.<secret>` names the Secret kube-system/bootstrap-token-<id>
// of type bootstrap.kubernetes.io/token; it authenticates as system:bootstrap:<id> in
// system:bootstrappers (plus the Secret's auth-extra-groups) when the Secret's token-secret
// matches, it allows authentication and it has not expired. Every refusal is "not this
// authenticator's token" (kube logs why and the union answers 401), never an error.
//
// Thread ownership: the front thread; Secrets are read from its watch cache, never from storage.
import { timingSafeEqual } from 'node:crypto';
import { registerTokenAuthenticator, type AuthResult, type TokenAuthenticatorMode } from './authenticator.js';

export const BOOTSTRAP_TOKEN_SECRET_TYPE = 'bootstrap.kubernetes.io/token';
export const BOOTSTRAP_TOKEN_SECRET_PREFIX = 'bootstrap-token-';
export const BOOTSTRAP_USER_PREFIX = 'system:bootstrap:';
export const BOOTSTRAPPERS_GROUP = 'system:bootstrappers';

const TOKEN_RE = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const GROUP_RE = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;

/** A Secret's data value as text (data is base64; stringData never reaches storage). */
export function secretValue(secret: any, key: string): string | undefined {
  const v = secret?.data?.[key];
  return typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : undefined;
}

/** kube's bootstrapsecretutil.HasExpired: an expiration that does not parse counts as expired. */
export function bootstrapSecretExpired(secret: any, now = Date.now()): boolean {
  const exp = secretValue(secret, 'expiration');
  if (exp === undefined || exp === '') return false;
  const t = Date.parse(exp);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(exp) || Number.isNaN(t)) return true;
  return t <= now;
}

export class BootstrapTokenAuthenticator implements TokenAuthenticatorMode {
  readonly name = 'bootstrap-token';

  constructor(
    /** the Secret kube-system/<name> from the cache, or null */
    private lookupSecret: (name: string) => any | null,
    private log: (m: string) => void = () => undefined,
  ) {}

  authenticateToken(token: string): AuthResult {
    const m = TOKEN_RE.exec(token);
    if (!m) return { ok: false };
    const [, id, secretPart] = m;
    const name = BOOTSTRAP_TOKEN_SECRET_PREFIX + id;
    const s = this.lookupSecret(name);
    const refuse = (why: string): AuthResult => {
      this.log(`Bootstrap secret kube-system/${name} ${why}`);
      return { ok: false };
    };
    if (!s) return refuse('not found');
    if (s.metadata?.deletionTimestamp) return refuse('is being deleted');
    if (s.type !== BOOTSTRAP_TOKEN_SECRET_TYPE) return refuse(`has invalid type, expected ${BOOTSTRAP_TOKEN_SECRET_TYPE}`);
    const stored = secretValue(s, 'token-secret') ?? '';
    const a = Buffer.from(stored);
    const b = Buffer.from(secretPart);
    if (a.length !== b.length || !timingSafeEqual(a, b)) return refuse('has invalid value for key token-secret');
    if (secretValue(s, 'token-id') !== id) return refuse('has invalid value for key token-id');
    if (bootstrapSecretExpired(s)) return refuse('has expired');
    if (secretValue(s, 'usage-bootstrap-authentication') !== 'true') return refuse('not marked usage-bootstrap-authentication=true');
    const extra = (secretValue(s, 'auth-extra-groups') ?? '').split(',').map((g) => g.trim()).filter(Boolean);
    for (const g of extra) if (!GROUP_RE.test(g)) return refuse(`has invalid value for key auth-extra-groups: group ${JSON.stringify(g)} does not match the pattern`);
    const groups = [BOOTSTRAPPERS_GROUP, ...new Set(extra.filter((g) => g !== BOOTSTRAPPERS_GROUP)), 'system:authenticated'];
    return { ok: true, response: { user: { name: BOOTSTRAP_USER_PREFIX + id, uid: '', groups } } };
  }
}

// In the token union at kube's place (after service accounts): the server builds the
// authenticator when --enable-bootstrap-token-auth is set and hands it over in the context.
registerTokenAuthenticator('bootstrap', (ctx) => ctx.services.bootstrapTokens as BootstrapTokenAuthenticator | undefined);
