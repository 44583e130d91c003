// The current webhooks (kube's generic.Source over the configuration manager, with the
// accessors of webhook/accessors.go): read from the cache's Mutating- or
// ValidatingWebhookConfigurations, compiled once per configuration resourceVersion (rules,
// selectors, matchConditions, the HTTPS client with its CA), configurations in name order and
// each one's hooks in their order. A request with no configuration costs one cache list.
//
// Thread ownership: the front thread (the compiled hooks and their clients).
import type { ObjectSource } from '../plugin.js';
import type { CompileMatchConditions, MatchConditionsEvaluator } from '../match-conditions.js';
import type { LabelSelectorSpec } from '../../registry/label-selector.js';
import { compileRule, type CompiledRule } from './predicates/rules.js';
import { WebhookClient, type ClientConfig } from './client.js';

export type HookType = 'admit' | 'validating';

/** One webhook of a configuration, ready to match and call (kube's WebhookAccessor). */
export interface Hook {
  /** "<configuration>/<webhook>/<index>": unique, as kube's GetUID */
  uid: string;
  name: string;
  configurationName: string;
  type: HookType;
  rules: CompiledRule[];
  matchPolicy: 'Exact' | 'Equivalent';
  namespaceSelector: LabelSelectorSpec;
  objectSelector: LabelSelectorSpec;
  failurePolicy: 'Fail' | 'Ignore';
  sideEffects: string | undefined;
  timeoutSeconds: number;
  admissionReviewVersions: string[];
  reinvocationPolicy: 'Never' | 'IfNeeded';
  /** the compiled matchConditions (none: always matches) */
  matchConditions?: MatchConditionsEvaluator;
  /** why the matchConditions cannot be evaluated (no CEL evaluator, or a compile error) */
  matchConditionsError?: string;
  client: WebhookClient;
}

/** kube's default and bound of timeoutSeconds (validation keeps stored values within 1..30). */
const DEFAULT_TIMEOUT_SECONDS = 10;
const MAX_TIMEOUT_SECONDS = 30;

export class WebhookSource {
  private stamp: string[] = [];
  private current: Hook[] = [];
  /** clients by their clientConfig, kept across configuration versions (kube caches them likewise) */
  private clients = new Map<string, WebhookClient>();

  constructor(
    private readonly objects: ObjectSource,
    /** "mutatingwebhookconfigurations.admissionregistration.k8s.io" or the validating one */
    private readonly resource: string,
    private readonly type: HookType,
    private readonly compileMatchConditions?: CompileMatchConditions,
  ) {}

  /** The current hooks, recompiled only when a configuration changed. */
  hooks(): Hook[] {
    const configs = this.objects.list(this.resource, '');
    if (configs.length === 0) {
      if (this.current.length) this.rebuild([]);
      return this.current;
    }
    let same = configs.length === this.stamp.length;
    for (let i = 0; same && i < configs.length; i++) {
      const m = configs[i]?.metadata;
      if (`${m?.name}@${m?.resourceVersion}` !== this.stamp[i]) same = false;
    }
    if (!same) this.rebuild(configs);
    return this.current;
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  private rebuild(configs: any[]): void {
    this.stamp = configs.map((c) => `${c?.metadata?.name}@${c?.metadata?.resourceVersion}`);
    const sorted = [...configs].sort((a, b) => (a?.metadata?.name < b?.metadata?.name ? -1 : a?.metadata?.name > b?.metadata?.name ? 1 : 0));
    const hooks: Hook[] = [];
    const used = new Map<string, WebhookClient>();
    for (const cfg of sorted) {
      const cfgName: string = cfg?.metadata?.name ?? '';
      const list = Array.isArray(cfg?.webhooks) ? cfg.webhooks : [];
      list.forEach((h: any, i: number) => {
        if (!h || typeof h.name !== 'string') return;
        const cc: ClientConfig = h.clientConfig ?? {};
        const key = JSON.stringify([cc.url ?? null, cc.service ?? null, cc.caBundle ?? null]);
        let client = used.get(key) ?? this.clients.get(key);
        if (!client) client = new WebhookClient(cc, this.objects);
        used.set(key, client);
        const hook: Hook = {
          uid: `${cfgName}/${h.name}/${i}`,
          name: h.name,
          configurationName: cfgName,
          type: this.type,
          rules: (Array.isArray(h.rules) ? h.rules : []).map(compileRule),
          matchPolicy: h.matchPolicy === 'Exact' ? 'Exact' : 'Equivalent',
          namespaceSelector: h.namespaceSelector ?? {},
          objectSelector: h.objectSelector ?? {},
          failurePolicy: h.failurePolicy === 'Ignore' ? 'Ignore' : 'Fail',
          sideEffects: typeof h.sideEffects === 'string' ? h.sideEffects : undefined,
          timeoutSeconds: Number.isInteger(h.timeoutSeconds) && h.timeoutSeconds > 0 ? Math.min(h.timeoutSeconds, MAX_TIMEOUT_SECONDS) : DEFAULT_TIMEOUT_SECONDS,
          admissionReviewVersions: Array.isArray(h.admissionReviewVersions) ? h.admissionReviewVersions : [],
          reinvocationPolicy: h.reinvocationPolicy === 'IfNeeded' ? 'IfNeeded' : 'Never',
          client,
        };
        const conditions = Array.isArray(h.matchConditions) ? h.matchConditions : [];
        if (conditions.length) {
          if (!this.compileMatchConditions) hook.matchConditionsError = 'matchConditions cannot be evaluated: no CEL evaluator is configured';
          else {
            try {
              hook.matchConditions = this.compileMatchConditions(conditions);
            } catch (e) {
              hook.matchConditionsError = (e as Error).message;
            }
          }
        }
        hooks.push(hook);
      });
    }
    for (const [k, c] of this.clients) if (!used.has(k)) c.close();
    this.clients = used;
    this.current = hooks;
  }
}
