// The Webhook authorization mode (kube's plugin/pkg/authorizer/webhook): a SubjectAccessReview
// POSTed to the service of --authorization-webhook-config-file, in the version
// --authorization-webhook-version names. allowed is Allow, denied is Deny (ending the chain),
// neither is NoOpinion, both is Deny with an error. A webhook that cannot be reached gives
// NoOpinion with the error (kube's flag-configured failure decision), and is not cached.
// Answers are cached by the review's spec: allowed ones for the authorized TTL (5m), the
// others for the unauthorized TTL (30s); a cached answer is returned synchronously, so a
// warm webhook keeps the chain on its synchronous path.
//
// Thread ownership: the front thread that built it (cache, client and its connections).
import { registerAuthorizerMode, type AuthorizerMode, type AuthorizerResult, type AuthorizerModeContext } from '../authorizer.js';
import type { AuthorizationAttributes, Rules } from '../attributes.js';
import { loadWebhookKubeconfig, WebhookClient } from '../webhook-client.js';
import { TtlCache } from '../ttl-cache.js';

export interface WebhookAuthorizerOptions {
  name?: string;
  /** kubeconfig file of the webhook */
  configFile: string;
  version: 'v1' | 'v1beta1';
  authorizedTtlMs: number;
  unauthorizedTtlMs: number;
  /** the decision when the webhook fails (NoOpinion from the flags; --authorization-config's failurePolicy) */
  onError?: 'NoOpinion' | 'Deny';
  timeoutMs?: number;
  /** kube's retry backoff steps (5 by default) */
  retries?: number;
  /** --authorization-config's matchConditions: false skips the webhook, an error is onError */
  match?: (review: any) => boolean;
}

interface Status {
  allowed?: boolean;
  denied?: boolean;
  reason?: string;
}

export class WebhookAuthorizer implements AuthorizerMode {
  readonly name: string;
  private cache = new TtlCache<Status>();
  private client: WebhookClient;
  /** how many reviews were sent (tests observe the cache through it) */
  calls = 0;

  constructor(readonly opts: WebhookAuthorizerOptions) {
    this.name = opts.name ?? 'Webhook';
    this.client = new WebhookClient(loadWebhookKubeconfig(opts.configFile), opts.timeoutMs ?? 30_000, opts.retries ?? 5);
  }

  /** kube's SubjectAccessReviewSpec of the attributes; v1beta1 calls the groups "group". */
  spec(a: AuthorizationAttributes): Record<string, unknown> {
    const u = a.user;
    const spec: Record<string, unknown> = {};
    if (u) {
      if (u.name) spec.user = u.name;
      if (u.uid) spec.uid = u.uid;
      if (u.groups?.length) spec[this.opts.version === 'v1beta1' ? 'group' : 'groups'] = u.groups;
      if (u.extra && Object.keys(u.extra).length) spec.extra = u.extra;
    }
    if (a.resourceRequest) {
      const ra: Record<string, string> = {};
      if (a.namespace) ra.namespace = a.namespace;
      if (a.verb) ra.verb = a.verb;
      if (a.apiGroup) ra.group = a.apiGroup;
      if (a.resource) ra.resource = a.resource;
      if (a.subresource) ra.subresource = a.subresource;
      if (a.name) ra.name = a.name;
      spec.resourceAttributes = ra;
    } else spec.nonResourceAttributes = { path: a.path, verb: a.verb };
    return spec;
  }

  authorize(a: AuthorizationAttributes): AuthorizerResult | Promise<AuthorizerResult> {
    const spec = this.spec(a);
    const review = { apiVersion: `authorization.k8s.io/${this.opts.version}`, kind: 'SubjectAccessReview', spec };
    if (this.opts.match) {
      let matches: boolean;
      try {
        matches = this.opts.match(review);
      } catch (e: any) {
        return this.failed(e);
      }
      if (!matches) return { decision: 'NoOpinion', reason: '' };
    }
    const key = JSON.stringify(spec);
    const cached = this.cache.get(key);
    if (cached) return decisionOf(cached);
    this.calls++;
    return this.client.post(review).then(
      (answer) => {
        const status: Status = answer?.status ?? {};
        this.cache.set(key, status, status.allowed ? this.opts.authorizedTtlMs : this.opts.unauthorizedTtlMs);
        return decisionOf(status);
      },
      (e) => this.failed(e),
    );
  }

  private failed(e: any): AuthorizerResult {
    const msg = String(e?.message ?? e);
    console.error(`E Failed to make webhook authorizer request: ${msg}`);
    return { decision: this.opts.onError ?? 'NoOpinion', reason: '', error: msg };
  }

  /** kube's webhook RulesFor: a webhook cannot list rules */
  rulesFor(): Rules {
    return { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: 'webhook authorizer does not support user rule resolution' };
  }
}

function decisionOf(s: Status): AuthorizerResult {
  const reason = s.reason ?? '';
  if (s.denied && s.allowed) return { decision: 'Deny', reason, error: 'webhook subject access review returned both allow and deny response' };
  if (s.denied) return { decision: 'Deny', reason };
  if (s.allowed) return { decision: 'Allow', reason };
  return { decision: 'NoOpinion', reason };
}

registerAuthorizerMode('Webhook', (ctx: AuthorizerModeContext) => {
  const o = ctx.options;
  return new WebhookAuthorizer({
    configFile: o.authorizationWebhookConfigFile,
    version: o.authorizationWebhookVersion,
    authorizedTtlMs: o.authorizationWebhookCacheAuthorizedTtlSeconds * 1000,
    unauthorizedTtlMs: o.authorizationWebhookCacheUnauthorizedTtlSeconds * 1000,
  });
});
