// --authorization-config (kube's AuthorizationConfiguration, apiserver.config.k8s.io/v1 and
// v1beta1): an ordered chain of authorizers, webhooks among them with their own version,
// TTLs, failurePolicy and CEL matchConditions over the SubjectAccessReview's spec (as
// `request`). Validated as kube's ValidateAuthorizationConfiguration words it; the file is
// watched and a valid new version replaces the chain (an invalid one is logged and the old
// chain kept, as kube's reloader does).
//
// Thread ownership: the front thread that built the chain (each thread watches the file).
import { readFileSync } from 'node:fs';
import { followFile } from '../config/followed-file.js';
import { parse as parseYaml } from 'yaml';
import type { AuthorizerMode, AuthorizerModeContext } from './authorizer.js';
import { AuthorizerUnion } from './authorizer-union.js';
import { authorizerMode } from './authorizer-modes.js';
import { WebhookAuthorizer } from './authorizers/webhook.js';
import { compile, evalBudgeted } from '../cel/environment.js';
import { celView } from '../cel/values.js';
import { RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS } from '../cel/cost.js';

const KNOWN_TYPES = ['AlwaysAllow', 'AlwaysDeny', 'ABAC', 'Webhook', 'RBAC', 'Node'];
const GROUP = 'apiserver.config.k8s.io';

export interface WebhookEntry {
  timeoutSeconds: number;
  subjectAccessReviewVersion: 'v1' | 'v1beta1';
  failurePolicy: 'NoOpinion' | 'Deny';
  authorizedTtlSeconds: number;
  unauthorizedTtlSeconds: number;
  cacheAuthorizedRequests: boolean;
  cacheUnauthorizedRequests: boolean;
  kubeConfigFile: string;
  matchConditions: Array<{ expression: string }>;
}

export interface AuthorizerEntry {
  type: string;
  name: string;
  webhook?: WebhookEntry;
}

/** A Go duration ("3s", "1m30s", "500ms") in seconds; NaN when malformed. */
function duration(v: unknown): number {
  if (typeof v !== 'string' || v === '') return NaN;
  if (v === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  const unit: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  let total = 0;
  let m: RegExpExecArray | null;
  let at = 0;
  while ((m = re.exec(v))) {
    total += Number(m[1]) * unit[m[2]];
    at = re.lastIndex;
  }
  return at === v.length ? total : NaN;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Parses and validates the file's text; throws with kube's field errors joined. */
export function parseAuthorizationConfig(text: string): AuthorizerEntry[] {
  let cfg: any;
  try {
    cfg = parseYaml(text);
  } catch (e: any) {
    throw new Error(`error decoding authorization configuration: ${e?.message ?? e}`);
  }
  const apiVersion = String(cfg?.apiVersion ?? '');
  if (cfg?.kind !== 'AuthorizationConfiguration' || ![`${GROUP}/v1`, `${GROUP}/v1beta1`, `${GROUP}/v1alpha1`].includes(apiVersion)) {
    throw new Error(`no kind "${cfg?.kind ?? ''}" is registered for version "${apiVersion}" in scheme`);
  }
  const errs: string[] = [];
  const list: any[] = Array.isArray(cfg.authorizers) ? cfg.authorizers : [];
  if (list.length === 0) errs.push('authorizers: Required value: at least one authorization mode must be defined');
  const seenNames = new Set<string>();
  const seenTypes = new Set<string>();
  const out: AuthorizerEntry[] = [];
  list.forEach((a, i) => {
    const f = `authorizers[${i}]`;
    const type = String(a?.type ?? '');
    const name = String(a?.name ?? '');
    if (!type) errs.push(`${f}.type: Required value`);
    else if (!KNOWN_TYPES.includes(type)) errs.push(`${f}.type: Unsupported value: "${type}": supported values: ${KNOWN_TYPES.map((t) => `"${t}"`).join(', ')}`);
    else if (type !== 'Webhook' && seenTypes.has(type)) errs.push(`${f}.type: Duplicate value: "${type}"`);
    seenTypes.add(type);
    if (!name) errs.push(`${f}.name: Required value`);
    else if (!DNS1123_SUBDOMAIN.test(name) || name.length > 253) errs.push(`${f}.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`);
    else if (seenNames.has(name)) errs.push(`${f}.name: Duplicate value: "${name}"`);
    seenNames.add(name);
    const entry: AuthorizerEntry = { type, name };
    if (type === 'Webhook') {
      const w = a?.webhook;
      if (!w || typeof w !== 'object') errs.push(`${f}.webhook: Required value: required when type=Webhook`);
      else entry.webhook = webhookEntry(w, `${f}.webhook`, errs);
    } else if (a?.webhook != null) errs.push(`${f}.webhook: Invalid value: "non-null": may only be specified when type=Webhook`);
    out.push(entry);
  });
  if (errs.length) throw new Error(errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`);
  return out;
}

function webhookEntry(w: any, f: string, errs: string[]): WebhookEntry {
  const timeout = w.timeout === undefined ? NaN : duration(w.timeout);
  if (w.timeout === undefined) errs.push(`${f}.timeout: Required value`);
  else if (!(timeout > 0 && timeout <= 30)) errs.push(`${f}.timeout: Invalid value: "${w.timeout}": must be > 0s and <= 30s`);
  const cacheAuthorized = w.cacheAuthorizedRequests !== false;
  const cacheUnauthorized = w.cacheUnauthorizedRequests !== false;
  const ttl = (key: string, on: boolean) => {
    if (!on) return 0;
    if (w[key] === undefined) {
      errs.push(`${f}.${key}: Required value`);
      return 0;
    }
    const t = duration(w[key]);
    if (!(t > 0)) errs.push(`${f}.${key}: Invalid value: "${w[key]}": must be > 0s`);
    return t;
  };
  const authorizedTtlSeconds = ttl('authorizedTTL', cacheAuthorized);
  const unauthorizedTtlSeconds = ttl('unauthorizedTTL', cacheUnauthorized);
  const version = String(w.subjectAccessReviewVersion ?? '');
  if (!version) errs.push(`${f}.subjectAccessReviewVersion: Required value`);
  else if (version !== 'v1' && version !== 'v1beta1') errs.push(`${f}.subjectAccessReviewVersion: Unsupported value: "${version}": supported values: "v1", "v1beta1"`);
  const conditions: any[] = Array.isArray(w.matchConditions) ? w.matchConditions : [];
  if (conditions.length) {
    const mv = String(w.matchConditionSubjectAccessReviewVersion ?? '');
    if (!mv) errs.push(`${f}.matchConditionSubjectAccessReviewVersion: Required value`);
    else if (mv !== 'v1') errs.push(`${f}.matchConditionSubjectAccessReviewVersion: Unsupported value: "${mv}": supported values: "v1"`);
  }
  const seenExpr = new Set<string>();
  conditions.forEach((c, j) => {
    const expr = String(c?.expression ?? '');
    const cf = `${f}.matchConditions[${j}].expression`;
    if (!expr) return errs.push(`${cf}: Required value`);
    if (seenExpr.has(expr)) return errs.push(`${cf}: Duplicate value: "${expr}"`);
    seenExpr.add(expr);
    const r = compile(expr, { request: 'dyn' }, ['bool']);
    if (r.error) errs.push(`${cf}: Invalid value: "${expr}": compilation failed: ${r.error.replace(/^compilation failed: /, '')}`);
  });
  const failurePolicy = String(w.failurePolicy ?? '');
  if (!failurePolicy) errs.push(`${f}.failurePolicy: Required value`);
  else if (failurePolicy !== 'NoOpinion' && failurePolicy !== 'Deny') errs.push(`${f}.failurePolicy: Unsupported value: "${failurePolicy}": supported values: "NoOpinion", "Deny"`);
  const ci = w.connectionInfo ?? {};
  const ctype = String(ci.type ?? '');
  let kubeConfigFile = '';
  if (!ctype) errs.push(`${f}.connectionInfo.type: Required value`);
  else if (ctype === 'KubeConfigFile') {
    kubeConfigFile = String(ci.kubeConfigFile ?? '');
    if (!kubeConfigFile) errs.push(`${f}.connectionInfo.kubeConfigFile: Required value`);
    else if (!kubeConfigFile.startsWith('/')) errs.push(`${f}.connectionInfo.kubeConfigFile: Invalid value: "${kubeConfigFile}": must be an absolute path`);
  } else if (ctype === 'InClusterConfig') errs.push(`${f}.connectionInfo.type: Unsupported value: "InClusterConfig": kubeshard runs outside any cluster; use "KubeConfigFile"`);
  else errs.push(`${f}.connectionInfo.type: Unsupported value: "${ctype}": supported values: "InClusterConfig", "KubeConfigFile"`);
  return {
    timeoutSeconds: timeout,
    subjectAccessReviewVersion: version as any,
    failurePolicy: failurePolicy as any,
    authorizedTtlSeconds,
    unauthorizedTtlSeconds,
    cacheAuthorizedRequests: cacheAuthorized,
    cacheUnauthorizedRequests: cacheUnauthorized,
    kubeConfigFile,
    matchConditions: conditions.map((c) => ({ expression: String(c.expression) })),
  };
}

/** kube's matchConditions for authorization: all true calls the webhook, a false one skips it, errors go to failurePolicy. */
function matcher(conditions: Array<{ expression: string }>): ((review: any) => boolean) | undefined {
  if (!conditions.length) return undefined;
  const programs = conditions.map((c) => compile(c.expression, { request: 'dyn' }, ['bool']).program!);
  return (review) => {
    // matchConditions see the v1 spec (groups, not v1beta1's group)
    const spec = { ...review.spec };
    if (spec.group) {
      spec.groups = spec.group;
      delete spec.group;
    }
    const activation = { request: celView(spec) };
    let budget = RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS;
    const errs: string[] = [];
    for (const p of programs) {
      const r = evalBudgeted(p, activation, budget);
      if (r.outOfBudget) throw new Error('validation failed due to running out of cost budget, no further validation rules will be run');
      budget = r.remaining;
      if (r.error !== undefined) errs.push(`expression '${p.expression}' resulted in error: ${r.error}`);
      else if (r.value === false) return false;
    }
    if (errs.length) throw new Error(errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`);
    return true;
  };
}

export function modesOfConfig(entries: AuthorizerEntry[], ctx: AuthorizerModeContext): AuthorizerMode[] {
  return entries.map((e) => {
    if (e.type !== 'Webhook') return authorizerMode(e.type, ctx);
    const w = e.webhook!;
    return new WebhookAuthorizer({
      name: e.name,
      configFile: w.kubeConfigFile,
      version: w.subjectAccessReviewVersion,
      authorizedTtlMs: w.cacheAuthorizedRequests ? w.authorizedTtlSeconds * 1000 : 0,
      unauthorizedTtlMs: w.cacheUnauthorizedRequests ? w.unauthorizedTtlSeconds * 1000 : 0,
      onError: w.failurePolicy,
      timeoutMs: w.timeoutSeconds * 1000,
      match: matcher(w.matchConditions),
    });
  });
}

/**
 * The chain of the file, rebuilt when the file changes (checked every second by its
 * modification time, on the main thread; every front thread gets the same content:
 * config/followed-file.ts). Never treated as fixed: the chain may change under the filter.
 */
export function buildAuthorizerFromConfig(path: string, ctx: AuthorizerModeContext, intervalMs = 1000): AuthorizerUnion {
  let text = readFileSync(path, 'utf8');
  const union = new AuthorizerUnion(modesOfConfig(parseAuthorizationConfig(text), ctx), { reloadable: true });
  const followed = followFile(
    path,
    intervalMs,
    (next) => {
      if (next === text) return;
      try {
        union.replace(modesOfConfig(parseAuthorizationConfig(next), ctx));
        text = next;
        console.log(`I authorization config ${path} reloaded`);
      } catch (e: any) {
        console.error(`E authorization config ${path}: ${e?.message ?? e}; keeping the previous configuration`);
      }
    },
    (e) => console.error(`E authorization config ${path}: ${e.message}; keeping the previous configuration`),
  );
  union.onClose = () => followed.stop();
  return union;
}
