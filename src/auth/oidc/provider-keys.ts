// An OIDC provider's signing keys, kept current in the background: the discovery document
// (<issuer or discoveryURL>/.well-known/openid-configuration) names the JWKS, which is
// fetched at start, refreshed on a timer, and refreshed early (rate-limited) when a token
// names a key id the set does not hold, as go-oidc's remote key set behind kube's OIDC
// authenticator does. A request never waits for the provider except that one early refresh.
// Until the first fetch succeeds the authenticator answers "not initialized" (kube's
// asynchronous initialisation) and retries every 10 seconds.
//
// Thread ownership: the front thread that built the authenticator; each thread keeps its
// own set (a few fetches per thread per hour, never one per request).
import https from 'node:https';
import http from 'node:http';
import type { JWK } from 'jose';
import { createPublicKey, type KeyObject } from 'node:crypto';

export interface ProviderKeysOptions {
  issuerURL: string;
  discoveryURL?: string;
  /** PEM CA bundle for the provider's TLS (else the system roots) */
  ca?: string;
  /** background refresh period (ms) */
  refreshMs?: number;
  /** the least time between two refreshes caused by unknown key ids (ms) */
  minUnknownKidRefreshMs?: number;
  log?: (msg: string) => void;
}

export interface ProviderKey {
  kid?: string;
  alg?: string;
  key: KeyObject;
  kty: string;
}

const MAX_BODY = 1 << 20;

/** GETs a JSON document over HTTPS with the given CA (or plain HTTP for tests of plain issuers). */
export function getJson(url: string, ca?: string, timeoutMs = 10_000): Promise<any> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const mod = u.protocol === 'http:' ? http : https;
    const req = mod.get(u, { ...(ca ? { ca } : {}), timeout: timeoutMs, headers: { accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) req.destroy(new Error(`response from ${url} is too large`));
        else chunks.push(c);
      });
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) return reject(new Error(`${res.statusCode} ${res.statusMessage}: ${body.slice(0, 200)}`));
        try {
          resolve(JSON.parse(body));
        } catch (e: any) {
          reject(new Error(`failed to decode provider response from ${url}: ${e.message}`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`timeout fetching ${url}`)));
    req.on('error', reject);
  });
}

export class ProviderKeys {
  private keys: ProviderKey[] = [];
  private ready = false;
  private jwksURI = '';
  private timer: NodeJS.Timeout | undefined;
  private inflight: Promise<void> | undefined;
  private lastUnknownRefresh = 0;
  private closed = false;
  /** fetches made (discovery and JWKS), for tests and metrics */
  fetches = 0;

  constructor(private opts: ProviderKeysOptions) {}

  /** Starts the first fetch (not awaited by start-up: kube initialises asynchronously). */
  start(): Promise<void> {
    const first = this.refresh().catch((e) => {
      this.opts.log?.(`oidc: initializing provider for issuer ${JSON.stringify(this.opts.issuerURL)}: ${e.message}`);
    });
    // the next fetch: in 10 s when this one failed, else at the refresh period
    void first.finally(() => this.schedule());
    return first;
  }

  private schedule(): void {
    if (this.closed) return;
    const period = this.ready ? (this.opts.refreshMs ?? 60 * 60_000) : 10_000;
    this.timer = setTimeout(() => {
      this.refresh()
        .catch((e) => this.opts.log?.(`oidc: refreshing keys of issuer ${JSON.stringify(this.opts.issuerURL)}: ${e.message}`))
        .finally(() => this.schedule());
    }, period);
    this.timer.unref();
  }

  get initialized(): boolean {
    return this.ready;
  }

  current(): ProviderKey[] {
    return this.keys;
  }

  /** A token named a key id we do not hold: refresh now unless one was made recently. */
  async refreshForUnknownKid(): Promise<void> {
    const now = Date.now();
    if (now - this.lastUnknownRefresh < (this.opts.minUnknownKidRefreshMs ?? 10_000)) return this.inflight;
    this.lastUnknownRefresh = now;
    await this.refresh().catch(() => undefined);
  }

  refresh(): Promise<void> {
    if (this.inflight) return this.inflight;
    this.inflight = this.fetchAll().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async fetchAll(): Promise<void> {
    if (!this.jwksURI) {
      const base = this.opts.discoveryURL || this.opts.issuerURL.replace(/\/$/, '') + '/.well-known/openid-configuration';
      this.fetches++;
      const doc = await getJson(base, this.opts.ca);
      // go-oidc's NewProvider: the document must name the issuer we were configured with
      // (a discoveryURL configuration only fetches elsewhere; the issuer still must match).
      if (doc.issuer !== this.opts.issuerURL) throw new Error(`oidc: issuer did not match the issuer returned by provider, expected ${JSON.stringify(this.opts.issuerURL)} got ${JSON.stringify(doc.issuer)}`);
      if (typeof doc.jwks_uri !== 'string' || !doc.jwks_uri) throw new Error('oidc: provider discovery document has no jwks_uri');
      this.jwksURI = doc.jwks_uri;
    }
    this.fetches++;
    const set = await getJson(this.jwksURI, this.opts.ca);
    if (!set || !Array.isArray(set.keys)) throw new Error('oidc: failed to decode keys: no "keys" list');
    const keys: ProviderKey[] = [];
    for (const jwk of set.keys as JWK[]) {
      if (jwk.use && jwk.use !== 'sig') continue;
      try {
        if (jwk.kty !== 'RSA' && jwk.kty !== 'EC') continue;
        keys.push({ kid: jwk.kid, alg: jwk.alg, kty: jwk.kty, key: createPublicKey({ key: jwk as any, format: 'jwk' }) });
      } catch {
        /* a key we cannot use is skipped, as go-jose skips unknown key types */
      }
    }
    this.keys = keys;
    this.ready = true;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
