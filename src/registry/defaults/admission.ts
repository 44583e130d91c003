// Defaults of admissionregistration.k8s.io/v1 (SetDefaults_ValidatingWebhook, _MutatingWebhook,
// _Rule, _ServiceReference, _ValidatingAdmissionPolicySpec and _MatchResources), 1.33. In v1
// sideEffects and admissionReviewVersions have no default: validation requires them.
import { arr, isObj } from './common.js';

const unset = (v: unknown) => v === undefined || v === null;

function setIfNil(obj: Record<string, any>, key: string, value: unknown): void {
  if (unset(obj[key])) obj[key] = value;
}

/** A Rule (RuleWithOperations, NamedRuleWithOperations): scope "*" unless told. */
function defaultRules(rules: unknown): void {
  for (const r of arr(rules)) if (isObj(r)) setIfNil(r, 'scope', '*');
}

function defaultWebhook(hook: unknown, mutating: boolean): void {
  if (!isObj(hook)) return;
  setIfNil(hook, 'failurePolicy', 'Fail');
  setIfNil(hook, 'matchPolicy', 'Equivalent');
  setIfNil(hook, 'namespaceSelector', {});
  setIfNil(hook, 'objectSelector', {});
  setIfNil(hook, 'timeoutSeconds', 10);
  if (mutating) setIfNil(hook, 'reinvocationPolicy', 'Never');
  defaultRules(hook.rules);
  const svc = isObj(hook.clientConfig) ? hook.clientConfig.service : undefined;
  if (isObj(svc)) setIfNil(svc, 'port', 443);
}

export function defaultValidatingWebhookConfiguration(obj: any): void {
  for (const h of arr(obj?.webhooks)) defaultWebhook(h, false);
}

export function defaultMutatingWebhookConfiguration(obj: any): void {
  for (const h of arr(obj?.webhooks)) defaultWebhook(h, true);
}

function defaultMatchResources(m: unknown): void {
  if (!isObj(m)) return;
  setIfNil(m, 'matchPolicy', 'Equivalent');
  setIfNil(m, 'namespaceSelector', {});
  setIfNil(m, 'objectSelector', {});
  defaultRules(m.resourceRules);
  defaultRules(m.excludeResourceRules);
}

export function defaultValidatingAdmissionPolicy(obj: any): void {
  const spec = obj?.spec;
  if (!isObj(spec)) return;
  setIfNil(spec, 'failurePolicy', 'Fail');
  defaultMatchResources(spec.matchConstraints);
}

export function defaultValidatingAdmissionPolicyBinding(obj: any): void {
  if (isObj(obj?.spec)) defaultMatchResources(obj.spec.matchResources);
}
