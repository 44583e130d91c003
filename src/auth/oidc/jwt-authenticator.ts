// One JWT issuer's token authenticator (kube's plugin/pkg/authenticator/token/oidc/oidc.go
// Authenticator.AuthenticateToken): a token whose unverified `iss` is not this issuer's is
// passed on; one that is ours is verified (signature against the provider's keys, issuer,
// audiences with MatchAny, exp, nbf with go-oidc's skew) and mapped to a user by claims or
// CEL, then checked by the required claims, the claim validation rules and the user
// validation rules. Refusals carry kube's messages ("oidc: verify token: ..."); the client
// still sees only 401 Unauthorized.
//
// Thread ownership: the front thread that built it; keys come from ProviderKeys (refreshed
// in the background), and verified tokens are remembered until they expire (at most a
// minute) so a client repeating its token costs one map lookup.
import { compactVerify, decodeProtectedHeader } from 'jose';
import type { AuthResult, TokenAuthenticatorMode } from '../authenticator.js';
import type { UserInfo } from '../user.js';
import type { Program } from '../../cel/environment.js';
import { ProviderKeys } from './provider-keys.js';
import { ALLOWED_SIGNING_ALGS, type JWTAuthenticatorConfig } from './jwt-config.js';
import { claimsActivation, compileClaimsExpression, evalExpression, toStringList, userActivation, CLAIMS_VARS, USER_VARS } from './claims-cel.js';
import { fromCel } from '../../cel/values.js';

/** go-oidc's allowed clock skew for nbf (5 minutes). */
const NBF_LEEWAY_S = 300;
const CACHE_MAX = 4096;
const CACHE_TTL_MS = 60_000;

interface CelMapper {
  username?: Program;
  groups?: Program;
  uid?: Program;
  extra: { key: string; program: Program }[];
  claimRules: { expression: string; message: string; program: Program }[];
  userRules: { expression: string; message: string; program: Program }[];
}

/** Go's time.Time %v of a UTC instant ("2006-01-02 15:04:05 +0000 UTC"). */
export function goTime(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' +0000 UTC');
}

function goQuoteList(a: string[]): string {
  return `[${a.map((s) => JSON.stringify(s)).join(' ')}]`;
}

/** The unverified issuer of a JWT (kube's hasCorrectIssuer), or undefined when it is not a JWT. */
export function untrustedIssuer(token: string): string | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const p = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    return typeof p?.iss === 'string' ? p.iss : undefined;
  } catch {
    return undefined;
  }
}

/** Compiles a configuration's CEL (throws with the first compile error, kube-worded). */
export function compileCel(cfg: JWTAuthenticatorConfig, path = 'jwt[0]'): CelMapper {
  const must = (expr: string, vars: Record<string, string>, field: string): Program => {
    const r = compileClaimsExpression(expr, vars);
    if (!r.program) throw new Error(`${path}.${field}: Invalid value: ${JSON.stringify(expr)}: ${r.error}`);
    return r.program;
  };
  const m = cfg.claimMappings;
  return {
    username: m.username.expression ? must(m.username.expression, CLAIMS_VARS, 'claimMappings.username.expression') : undefined,
    groups: m.groups?.expression ? must(m.groups.expression, CLAIMS_VARS, 'claimMappings.groups.expression') : undefined,
    uid: m.uid?.expression ? must(m.uid.expression, CLAIMS_VARS, 'claimMappings.uid.expression') : undefined,
    extra: (m.extra ?? []).map((e, i) => ({ key: e.key, program: must(e.valueExpression, CLAIMS_VARS, `claimMappings.extra[${i}].valueExpression`) })),
    claimRules: (cfg.claimValidationRules ?? [])
      .map((r, i) => (r.expression ? { expression: r.expression, message: r.message ?? '', program: must(r.expression, CLAIMS_VARS, `claimValidationRules[${i}].expression`) } : undefined))
      .filter((x): x is NonNullable<typeof x> => !!x),
    userRules: (cfg.userValidationRules ?? []).map((r, i) => ({ expression: r.expression, message: r.message ?? '', program: must(r.expression, USER_VARS, `userValidationRules[${i}].expression`) })),
  };
}

export class JwtAuthenticator implements TokenAuthenticatorMode {
  readonly name: string;
  readonly keys: ProviderKeys;
  private cel: CelMapper;
  private requiredClaims: [string, string][];
  private algs: Set<string>;
  private audiences: Set<string>;
  /** own: the answer for the API audiences, made once, so that the union's grouped form of it is made once too */
  private verified = new Map<string, { user: UserInfo; until: number; own?: AuthResult }>();

  constructor(
    readonly config: JWTAuthenticatorConfig,
    private apiAudiences: string[],
    opts: { log?: (m: string) => void; keys?: ProviderKeys; refreshMs?: number } = {},
  ) {
    this.name = `jwt:${config.issuer.url}`;
    this.cel = compileCel(config);
    this.requiredClaims = (config.claimValidationRules ?? []).filter((r) => r.claim).map((r) => [r.claim!, r.requiredValue ?? '']);
    this.algs = new Set(config.signingAlgs?.length ? config.signingAlgs : ALLOWED_SIGNING_ALGS);
    this.audiences = new Set(config.issuer.audiences);
    this.keys =
      opts.keys ??
      new ProviderKeys({ issuerURL: config.issuer.url, discoveryURL: config.issuer.discoveryURL, ca: config.issuer.certificateAuthority, log: opts.log, refreshMs: opts.refreshMs });
  }

  start(): Promise<void> {
    return this.keys.start();
  }

  close(): void {
    this.keys.close();
  }

  /** A token verified within the last minute (and not expired since), answered without parsing it again; else undefined. */
  cachedResult(token: string, audiences?: string[]): AuthResult | undefined {
    const hit = this.verified.get(token);
    if (!hit) return undefined;
    if (hit.until <= Date.now()) {
      this.verified.delete(token);
      return undefined;
    }
    if (!audiences || !audiences.length) return (hit.own ??= { ok: true, response: { user: hit.user, audiences: this.apiAudiences } });
    const respAuds = this.responseAudiences(audiences);
    return respAuds ? { ok: true, response: { user: hit.user, audiences: respAuds } } : { ok: false };
  }

  /** kube wraps this authenticator as audience-agnostic: it answers for the API audiences only. */
  private responseAudiences(audiences?: string[]): string[] | undefined {
    if (!audiences || !audiences.length) return this.apiAudiences;
    const r = this.apiAudiences.filter((a) => audiences.includes(a));
    return r.length ? r : undefined;
  }

  async authenticateToken(token: string, audiences?: string[]): Promise<AuthResult> {
    const cached = this.cachedResult(token, audiences);
    if (cached) return cached;
    if (untrustedIssuer(token) !== this.config.issuer.url) return { ok: false };
    const respAuds = this.responseAudiences(audiences);
    if (!respAuds) return { ok: false };
    const now = Date.now();
    try {
      const { user, exp } = await this.verify(token);
      if (this.verified.size >= CACHE_MAX) this.verified.clear();
      this.verified.set(token, { user, until: Math.min(now + CACHE_TTL_MS, exp * 1000) });
      return { ok: true, response: { user, audiences: respAuds } };
    } catch (e: any) {
      return { ok: false, error: e.message };
    }
  }

  private async verify(token: string): Promise<{ user: UserInfo; exp: number }> {
    if (!this.keys.initialized) throw new Error('oidc: authenticator not initialized');
    const claims = await this.verifyToken(token).catch((e: Error) => {
      throw new Error(`oidc: verify token: ${e.message}`);
    });
    const info = this.mapUser(claims);
    for (const [claim, value] of this.requiredClaims) {
      if (!(claim in claims)) throw new Error(`oidc: required claim ${claim} not present in ID token`);
      const v = claims[claim];
      if (typeof v !== 'string') throw new Error(`oidc: parse claim ${claim}: json: cannot unmarshal ${goJsonType(v)} into Go value of type string`);
      if (v !== value) throw new Error(`oidc: required claim ${claim} value does not match. Got = ${v}, want = ${value}`);
    }
    if (this.cel.claimRules.length) {
      const act = claimsActivation(claims);
      for (const r of this.cel.claimRules) {
        const v = this.evalOr('oidc: error evaluating claim validation expression', r.program, act);
        if (typeof v !== 'boolean') throw new Error('oidc: error evaluating claim validation expression: validation expression must return a boolean');
        if (!v) throw new Error(`oidc: error evaluating claim validation expression: validation expression '${r.expression}' failed: ${r.message}`);
      }
    }
    if (this.cel.userRules.length) {
      const act = userActivation(info);
      for (const r of this.cel.userRules) {
        const v = this.evalOr('oidc: error evaluating user info validation rule', r.program, act);
        if (typeof v !== 'boolean') throw new Error('oidc: error evaluating user info validation rule: validation expression must return a boolean');
        if (!v) throw new Error(`oidc: error evaluating user info validation rule: validation expression '${r.expression}' failed: ${r.message}`);
      }
    }
    // kube's group authenticator adds system:authenticated to every authenticated user
    if (!info.groups.includes('system:authenticated')) info.groups = [...info.groups, 'system:authenticated'];
    return { user: info, exp: typeof claims.exp === 'number' ? claims.exp : Number.MAX_SAFE_INTEGER / 1000 };
  }

  private evalOr(prefix: string, p: Program, act: Record<string, any>): any {
    try {
      return evalExpression(p, act);
    } catch (e: any) {
      throw new Error(`${prefix}: ${e.message}`);
    }
  }

  /** go-oidc's IDTokenVerifier.Verify plus kube's audience check; returns the payload. */
  private async verifyToken(token: string): Promise<Record<string, any>> {
    const parts = token.split('.');
    let claims: Record<string, any>;
    try {
      claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
      if (!claims || typeof claims !== 'object' || Array.isArray(claims)) throw new Error('not an object');
    } catch (e: any) {
      throw new Error(`oidc: malformed jwt payload: ${e.message}`);
    }
    if (claims.iss !== this.config.issuer.url) throw new Error(`oidc: id token issued by a different provider, expected ${JSON.stringify(this.config.issuer.url)} got ${JSON.stringify(claims.iss)}`);
    const nowS = Math.floor(Date.now() / 1000);
    if (typeof claims.exp === 'number' && claims.exp < nowS) throw new Error(`oidc: token is expired (Token Expiry: ${goTime(claims.exp)})`);
    if (typeof claims.nbf === 'number' && nowS + NBF_LEEWAY_S < claims.nbf) throw new Error(`oidc: current time ${goTime(nowS)} before the nbf (not before) time: ${goTime(claims.nbf)}`);
    let header;
    try {
      header = decodeProtectedHeader(token);
    } catch (e: any) {
      throw new Error(`oidc: malformed jwt: ${e.message}`);
    }
    const alg = header.alg ?? '';
    if (!this.algs.has(alg)) throw new Error(`oidc: id token signed with unsupported algorithm, expected ${goQuoteList([...this.algs])} got ${JSON.stringify(alg)}`);
    if (!(await this.signatureValid(token, header.kid, alg))) {
      // a key id we have not seen may be a rotation: refresh once (rate-limited) and retry
      if (header.kid && !this.keys.current().some((k) => k.kid === header.kid)) {
        await this.keys.refreshForUnknownKid();
        if (await this.signatureValid(token, header.kid, alg)) return this.checkAudience(claims);
      }
      throw new Error('failed to verify signature: failed to verify id token signature');
    }
    return this.checkAudience(claims);
  }

  private checkAudience(claims: Record<string, any>): Record<string, any> {
    const aud: string[] = Array.isArray(claims.aud) ? claims.aud : typeof claims.aud === 'string' ? [claims.aud] : [];
    if (!aud.some((a) => this.audiences.has(a))) throw new Error(`oidc: expected audience in ${goQuoteList([...this.audiences].sort())} got ${goQuoteList(aud)}`);
    return claims;
  }

  private async signatureValid(token: string, kid: string | undefined, alg: string): Promise<boolean> {
    const keys = this.keys.current().filter((k) => (!kid || !k.kid || k.kid === kid) && (!k.alg || k.alg === alg) && kty(alg) === k.kty);
    for (const k of keys) {
      try {
        await compactVerify(token, k.key, { algorithms: [alg] });
        return true;
      } catch {
        /* next key */
      }
    }
    return false;
  }

  /** kube's getUsername, getGroups, getUID, getExtra. */
  private mapUser(claims: Record<string, any>): UserInfo {
    const m = this.config.claimMappings;
    let act: Record<string, any> | undefined;
    const activation = () => (act ??= claimsActivation(claims));
    let name: string;
    if (this.cel.username) {
      const v = fromCel(this.evalOr('oidc: error evaluating username claim expression', this.cel.username, activation()));
      if (typeof v !== 'string') throw new Error('oidc: error evaluating username claim expression: username claim expression must return a string');
      name = v;
    } else {
      const claim = m.username.claim!;
      const v = claims[claim];
      if (!(claim in claims)) throw new Error(`oidc: parse username claims ${JSON.stringify(claim)}: claim not present`);
      if (typeof v !== 'string') throw new Error(`oidc: parse username claims ${JSON.stringify(claim)}: json: cannot unmarshal ${goJsonType(v)} into Go value of type string`);
      if (claim === 'email' && 'email_verified' in claims) {
        if (typeof claims.email_verified !== 'boolean') throw new Error(`oidc: parse 'email_verified' claim: json: cannot unmarshal ${goJsonType(claims.email_verified)} into Go value of type bool`);
        if (!claims.email_verified) throw new Error('oidc: email not verified');
      }
      name = (m.username.prefix ?? '') + v;
    }
    let groups: string[] = [];
    if (m.groups?.claim && m.groups.claim in claims) {
      const v = claims[m.groups.claim];
      const list = typeof v === 'string' ? [v] : Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;
      if (!list) throw new Error(`oidc: parse groups claim ${JSON.stringify(m.groups.claim)}: json: cannot unmarshal ${goJsonType(v)} into Go value of type string`);
      groups = m.groups.prefix ? list.map((g: string) => m.groups!.prefix + g) : [...list];
    } else if (this.cel.groups) {
      try {
        groups = toStringList(this.evalOr('oidc: error evaluating group claim expression', this.cel.groups, activation())) ?? [];
      } catch (e: any) {
        throw new Error(e.message.startsWith('oidc:') ? e.message : `oidc: error evaluating group claim expression: ${e.message}`);
      }
    }
    let uid = '';
    if (m.uid?.claim) {
      const v = claims[m.uid.claim];
      if (!(m.uid.claim in claims)) throw new Error(`oidc: parse uid claim ${JSON.stringify(m.uid.claim)}: claim not present`);
      if (typeof v !== 'string') throw new Error(`oidc: parse uid claim ${JSON.stringify(m.uid.claim)}: json: cannot unmarshal ${goJsonType(v)} into Go value of type string`);
      uid = v;
    } else if (this.cel.uid) {
      const v = fromCel(this.evalOr('oidc: error evaluating uid claim expression', this.cel.uid, activation()));
      if (typeof v !== 'string') throw new Error('oidc: error evaluating uid claim expression: uid claim expression must return a string');
      uid = v;
    }
    const extra: Record<string, string[]> = {};
    for (const e of this.cel.extra) {
      let vals: string[] | undefined;
      const raw = this.evalOr('oidc: error evaluating extra claim expression', e.program, activation());
      try {
        vals = toStringList(raw);
      } catch (err: any) {
        throw new Error(`oidc: error evaluating extra claim expression: ${e.program.expression}: ${err.message}`);
      }
      if (vals) extra[e.key] = vals;
    }
    return { name, uid, groups, ...(Object.keys(extra).length ? { extra } : {}) };
  }
}

function kty(alg: string): string {
  return alg.startsWith('ES') ? 'EC' : 'RSA';
}

function goJsonType(v: unknown): string {
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'string';
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  return 'object';
}
