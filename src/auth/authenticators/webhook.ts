// Webhook token authentication (kube's plugin/pkg/authenticator/token/webhook behind
// token/cache): a TokenReview POSTed to the service of
// --authentication-token-webhook-config-file, in the --authentication-token-webhook-version.
// The answer is cached by a hash of the token and the audiences for
// --authentication-token-webhook-cache-ttl, accepted and refused alike; an error (the webhook
// unreachable, or a refusal carrying status.error) is not cached, as kube's cache does with
// cacheErrors off. A cached answer is a plain value, so a warm token costs no promise.
//
// Thread ownership: the front thread that built it (cache, client and its connections).
import { hash } from 'node:crypto';
import { registerTokenAuthenticator, type AuthResult, type TokenAuthenticatorMode } from '../authenticator.js';
import { loadWebhookKubeconfig, WebhookClient } from '../webhook-client.js';
import { TtlCache } from '../ttl-cache.js';
import type { UserInfo } from '../user.js';

export interface WebhookTokenOptions {
  configFile: string;
  version: 'v1' | 'v1beta1';
  cacheTtlMs: number;
  /** the API audiences, sent when the caller names none and used when the webhook answers none */
  apiAudiences: string[];
  timeoutMs?: number;
  retries?: number;
}

export class WebhookTokenAuthenticator implements TokenAuthenticatorMode {
  readonly name = 'webhook';
  private cache = new TtlCache<AuthResult>();
  /** reviews in flight by key: concurrent requests with one token share one call (kube's singleflight) */
  private inflight = new Map<string, Promise<AuthResult>>();
  private client: WebhookClient;
  /** reviews sent (the cache is observable through it) */
  calls = 0;

  private apiAudiencesKey: string;

  constructor(readonly opts: WebhookTokenOptions) {
    this.apiAudiencesKey = JSON.stringify(opts.apiAudiences) + '\0';
    this.client = new WebhookClient(loadWebhookKubeconfig(opts.configFile), opts.timeoutMs ?? 30_000, opts.retries ?? 5);
  }

  authenticateToken(token: string, audiences?: string[]): AuthResult | Promise<AuthResult> {
    const own = !(audiences && audiences.length);
    const wanted = own ? this.opts.apiAudiences : audiences!;
    // the token is kept only as a hash, with the audiences it was checked for (kube's cache key)
    // (one-shot: a third of createHash's cost per warm request)
    const key = hash('sha256', (own ? this.apiAudiencesKey : JSON.stringify(wanted) + '\0') + token, 'base64');
    const cached = this.cache.get(key);
    if (cached) return cached;
    const pending = this.inflight.get(key);
    if (pending) return pending;
    const p = this.review(key, token, wanted).finally(() => this.inflight.delete(key));
    this.inflight.set(key, p);
    return p;
  }

  private review(key: string, token: string, wanted: string[]): Promise<AuthResult> {
    this.calls++;
    const review = {
      apiVersion: `authentication.k8s.io/${this.opts.version}`,
      kind: 'TokenReview',
      spec: { token, ...(wanted.length ? { audiences: wanted } : {}) },
    };
    return this.client.post(review).then(
      (answer) => {
        const r = this.resultOf(answer?.status ?? {}, wanted);
        if (r.ok || !r.error) this.cache.set(key, r, this.opts.cacheTtlMs);
        return r;
      },
      (e) => {
        const msg = String(e?.message ?? e);
        console.error(`E Failed to make webhook authenticator request: ${msg}`);
        return { ok: false, error: msg } as AuthResult;
      },
    );
  }

  private resultOf(status: any, wanted: string[]): AuthResult {
    let auds: string[] | undefined;
    if (wanted.length) {
      // the token must be good for one of the audiences asked for (those the webhook names,
      // or the API's when it names none)
      const got: string[] = Array.isArray(status.audiences) && status.audiences.length ? status.audiences : this.opts.apiAudiences;
      auds = wanted.filter((a) => got.includes(a));
      if (!auds.length) return { ok: false };
    }
    if (status.authenticated !== true) return status.error ? { ok: false, error: String(status.error) } : { ok: false };
    const u = status.user ?? {};
    const user: UserInfo = {
      name: String(u.username ?? ''),
      uid: String(u.uid ?? ''),
      groups: Array.isArray(u.groups) ? u.groups.map(String) : [],
      ...(u.extra && typeof u.extra === 'object' && Object.keys(u.extra).length ? { extra: u.extra } : {}),
    };
    return { ok: true, response: { user, ...(auds ? { audiences: auds } : {}) } };
  }
}

registerTokenAuthenticator('webhook', (ctx) => {
  const o = ctx.options;
  if (!o.authenticationTokenWebhookConfigFile) return null;
  return new WebhookTokenAuthenticator({
    configFile: o.authenticationTokenWebhookConfigFile,
    version: o.authenticationTokenWebhookVersion,
    cacheTtlMs: o.authenticationTokenWebhookCacheTtlSeconds * 1000,
    apiAudiences: ctx.apiAudiences,
  });
});
