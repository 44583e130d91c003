// The JWT issuers of the --oidc-* flags or of --authentication-config, as one token
// authenticator (kube's union of its per-issuer authenticators: a token goes to the issuer
// its unverified `iss` names). With a configuration file, the file is polled and a changed,
// valid one replaces the issuers (and the anonymous settings) once the new issuers have
// fetched their keys, as kube-apiserver's dynamic authentication config does; an invalid
// one is logged and the running configuration kept.
//
// Thread ownership: the front thread that built it (each thread fetches keys for itself; the
// main thread polls the file and hands every thread the same content: config/followed-file.ts).
import { readFileSync } from 'node:fs';
import { followFile, type FollowedFile } from '../../config/followed-file.js';
import { createHash } from 'node:crypto';
import type { AuthResult, TokenAuthenticatorMode } from '../authenticator.js';
import { JwtAuthenticator, untrustedIssuer } from './jwt-authenticator.js';
import type { JWTAuthenticatorConfig } from './jwt-config.js';
import { parseAuthenticationConfiguration, type AnonymousConfig } from './authentication-config.js';

export interface JwtAuthenticatorsOptions {
  apiAudiences: string[];
  log: (m: string) => void;
  /** the file to poll (--authentication-config), when there is one */
  configFile?: string;
  reloadMs?: number;
  disallowedIssuers?: string[];
  /**
   * the service-account issuers: a remembered answer of an issuer among them is never given
   * ahead of the service-account authenticator (cachedAccept); the file's validation refuses
   * such an issuer, the --oidc-* flags do not
   */
  serviceAccountIssuers?: string[];
}

export class JwtAuthenticators implements TokenAuthenticatorMode {
  readonly name = 'jwt';
  private byIssuer = new Map<string, JwtAuthenticator>();
  private anonymousConfig: AnonymousConfig | undefined;
  private fileHash = '';
  private followed: FollowedFile | undefined;
  /** reloads applied (for tests and the log) */
  reloads = 0;

  constructor(
    configs: JWTAuthenticatorConfig[],
    private opts: JwtAuthenticatorsOptions,
    anonymous?: AnonymousConfig,
    fileText?: string,
  ) {
    this.install(configs.map((c) => new JwtAuthenticator(c, opts.apiAudiences, { log: opts.log })));
    this.anonymousConfig = anonymous;
    if (fileText !== undefined) this.fileHash = hash(fileText);
  }

  /** Loads --authentication-config (throws with kube's validation message when invalid). */
  static fromFile(file: string, opts: Omit<JwtAuthenticatorsOptions, 'configFile'>): JwtAuthenticators {
    const text = readFileSync(file, 'utf8');
    const cfg = parseAuthenticationConfiguration(text, opts.disallowedIssuers);
    return new JwtAuthenticators(cfg.jwt, { ...opts, configFile: file }, cfg.anonymous, text);
  }

  /** The anonymous authenticator's configuration from the file, when the file has one. */
  get anonymous(): AnonymousConfig | undefined {
    return this.anonymousConfig;
  }

  get authenticators(): JwtAuthenticator[] {
    return [...this.byIssuer.values()];
  }

  private install(list: JwtAuthenticator[]): void {
    this.byIssuer = new Map(list.map((a) => [a.config.issuer.url, a]));
  }

  /** Starts the issuers' key fetches and the file poll; resolves when every first fetch has been tried. */
  async start(): Promise<void> {
    await Promise.all(this.authenticators.map((a) => a.start()));
    if (this.opts.configFile) this.follow();
  }

  private follow(): void {
    const file = this.opts.configFile!;
    this.followed = followFile(
      file,
      this.opts.reloadMs ?? 60_000,
      (text) => void this.apply(text),
      (e) => this.opts.log(`authentication config: reading ${file}: ${e.message}`),
    );
  }

  /** A new content of the file: a valid one replaces the issuers; an invalid one is logged once. */
  private async apply(text: string): Promise<void> {
    const h = hash(text);
    if (h === this.fileHash) return;
    let next: JwtAuthenticator[];
    let anonymous: AnonymousConfig | undefined;
    try {
      const cfg = parseAuthenticationConfiguration(text, this.opts.disallowedIssuers);
      next = cfg.jwt.map((c) => new JwtAuthenticator(c, this.opts.apiAudiences, { log: this.opts.log }));
      anonymous = cfg.anonymous;
    } catch (e: any) {
      this.fileHash = h; // logged once per content
      this.opts.log(`authentication config: reload failed, keeping the running configuration: ${e.message}`);
      return;
    }
    await Promise.all(next.map((a) => a.start()));
    const old = this.authenticators;
    this.install(next);
    this.anonymousConfig = anonymous;
    this.fileHash = h;
    this.reloads++;
    for (const a of old) a.close();
    this.opts.log(`authentication config: reloaded ${this.opts.configFile} (${next.length} JWT issuer(s))`);
  }

  authenticateToken(token: string, audiences?: string[]): AuthResult | Promise<AuthResult> {
    if (this.byIssuer.size === 0) return { ok: false };
    // a token seen in the last minute: no parsing (the common case, a client repeating its token)
    for (const a of this.byIssuer.values()) {
      const hit = a.cachedResult(token, audiences);
      if (hit) return hit;
    }
    const iss = untrustedIssuer(token);
    const a = iss === undefined ? undefined : this.byIssuer.get(iss);
    if (!a) return { ok: false };
    return a.authenticateToken(token, audiences);
  }

  /**
   * A token verified in the last minute, answered ahead of the authenticators before this
   * one in the union (authenticator-union.ts): none of them can accept it. A JWT is never a
   * bootstrap token (one dot), and a service-account token carries a service-account issuer,
   * which is never one of ours here. Only accepting answers are given; else undefined.
   */
  cachedAccept(token: string, audiences?: string[]): AuthResult | undefined {
    for (const [iss, a] of this.byIssuer) {
      if (this.opts.serviceAccountIssuers?.includes(iss)) continue;
      const hit = a.cachedResult(token, audiences);
      if (hit?.ok) return hit;
    }
    return undefined;
  }

  close(): void {
    this.followed?.stop();
    for (const a of this.authenticators) a.close();
  }
}

function hash(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}
