// admissionregistration.k8s.io/v1 webhook configurations, as kube 1.33's
// pkg/apis/admissionregistration/validation checks them (and k8s.io/apiserver's webhook URL and
// service checks). Their CEL (matchConditions, a policy's expressions) is compiled in admission-cel.ts.
import type { FieldError } from '../strategy.js';
import { validatePolicyExpressions, validateMatchConditions, validateMutatingPolicyExpressions } from './admission-cel.js';
import {
  dns1035LabelErrors,
  dns1123SubdomainErrors,
  duplicate,
  forbidden,
  invalid,
  isInt,
  isObj,
  list,
  notSupported,
  present,
  required,
} from './field.js';
import { validateLabelSelector } from './selector.js';
import { pathSegmentErrors } from './autoscaling.js';


const FAILURE_POLICIES = ['Fail', 'Ignore'];
const MATCH_POLICIES = ['Equivalent', 'Exact'];
const SIDE_EFFECTS_ALL = ['None', 'NoneOnDryRun', 'Some', 'Unknown'];
const SIDE_EFFECTS_NONE = ['None', 'NoneOnDryRun'];
const OPERATIONS = ['*', 'CONNECT', 'CREATE', 'DELETE', 'UPDATE'];
const REINVOCATION = ['IfNeeded', 'Never'];
const SCOPES = ['*', 'Cluster', 'Namespaced'];
const REVIEW_VERSIONS = ['v1', 'v1beta1'];

/** IsFullyQualifiedName: a DNS subdomain of at least three segments. */
function fullyQualifiedName(path: string, name: unknown): FieldError[] {
  const n = typeof name === 'string' ? name : '';
  if (n === '') return [required(path)];
  const errs = dns1123SubdomainErrors(n);
  if (errs.length) return [invalid(path, n, errs.join(','))];
  if (n.split('.').length < 3) return [invalid(path, n, 'should be a domain with at least three segments separated by dots')];
  return [];
}

/** validateResources: the resource/subresource wildcard rules of a webhook rule. */
function validateResources(resources: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const rs = list(resources);
  if (rs.length === 0) errs.push(required(path));
  const resWildSub = new Set<string>();
  const subWildRes = new Set<string>();
  let doubleWild = false;
  let singleWild = false;
  let plain = false;
  rs.forEach((r, i) => {
    if (r === '' || !present(r)) {
      errs.push(required(`${path}[${i}]`));
      return;
    }
    const s = String(r);
    if (s === '*/*') doubleWild = true;
    if (s === '*') singleWild = true;
    const slash = s.indexOf('/');
    if (slash < 0) {
      plain = s !== '*';
      return;
    }
    const res = s.slice(0, slash);
    const sub = s.slice(slash + 1);
    if (resWildSub.has(res)) errs.push(invalid(`${path}[${i}]`, s, `if '${res}/*' is present, must not specify ${s}`));
    if (subWildRes.has(sub)) errs.push(invalid(`${path}[${i}]`, s, `if '*/${sub}' is present, must not specify ${s}`));
    if (sub === '*') resWildSub.add(res);
    if (res === '*') subWildRes.add(sub);
  });
  if (rs.length > 1 && doubleWild) errs.push(invalid(path, rs, "if '*/*' is present, must not specify other resources"));
  if (singleWild && plain) errs.push(invalid(path, rs, "if '*' is present, must not specify other resources without subresources"));
  return errs;
}

function validateRuleWithOperations(rule: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(rule)) return errs;
  const ops = list(rule.operations);
  if (ops.length === 0) errs.push(required(`${path}.operations`));
  if (ops.length > 1 && ops.includes('*')) errs.push(invalid(`${path}.operations`, ops, "if '*' is present, must not specify other operations"));
  ops.forEach((op: any, i) => {
    if (!OPERATIONS.includes(op)) errs.push(notSupported(`${path}.operations[${i}]`, op, OPERATIONS));
  });
  const groups = list(rule.apiGroups);
  if (groups.length === 0) errs.push(required(`${path}.apiGroups`));
  if (groups.length > 1 && groups.includes('*')) errs.push(invalid(`${path}.apiGroups`, groups, "if '*' is present, must not specify other API groups"));
  const versions = list(rule.apiVersions);
  if (versions.length === 0) errs.push(required(`${path}.apiVersions`));
  if (versions.length > 1 && versions.includes('*')) errs.push(invalid(`${path}.apiVersions`, versions, "if '*' is present, must not specify other API versions"));
  versions.forEach((v, i) => {
    if (v === '' || !present(v)) errs.push(required(`${path}.apiVersions[${i}]`));
  });
  errs.push(...validateResources(rule.resources, `${path}.resources`));
  if (present(rule.scope) && !SCOPES.includes(String(rule.scope))) errs.push(notSupported(`${path}.scope`, rule.scope, SCOPES));
  return errs;
}

/** What Go's url.Parse yields for the parts kube checks (scheme, host, user, query, fragment). */
function parseUrl(u: string): { scheme: string; host: string; user?: string; query: string; fragment: string } | string {
  if (/[\x00-\x1f\x7f]/.test(u)) return `parse ${JSON.stringify(u)}: net/url: invalid control character in URL`;
  let rest = u;
  let fragment = '';
  const hash = rest.indexOf('#');
  if (hash >= 0) {
    fragment = rest.slice(hash + 1);
    rest = rest.slice(0, hash);
  }
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(rest);
  if (!m && rest.startsWith(':')) return `parse ${JSON.stringify(u)}: missing protocol scheme`;
  const scheme = m ? m[1].toLowerCase() : '';
  if (m) rest = rest.slice(m[0].length);
  let query = '';
  const q = rest.indexOf('?');
  if (q >= 0) {
    query = rest.slice(q + 1);
    rest = rest.slice(0, q);
  }
  let host = '';
  let user: string | undefined;
  if (rest.startsWith('//')) {
    const slash = rest.indexOf('/', 2);
    let authority = slash < 0 ? rest.slice(2) : rest.slice(2, slash);
    const at = authority.lastIndexOf('@');
    if (at >= 0) {
      user = authority.slice(0, at);
      authority = authority.slice(at + 1);
    }
    host = authority;
  }
  return { scheme, host, user, query, fragment };
}

const URL_FORM = '; desired format: https://host[/path]';

/** k8s.io/apiserver's ValidateWebhookURL (https forced). */
export function validateWebhookUrl(path: string, url: string): FieldError[] {
  const u = parseUrl(url);
  if (typeof u === 'string') return [required(path, `url must be a valid URL: ${u}${URL_FORM}`)];
  const errs: FieldError[] = [];
  if (u.scheme !== 'https') errs.push(invalid(path, u.scheme, "'https' is the only allowed URL scheme" + URL_FORM));
  if (u.host === '') errs.push(invalid(path, u.host, 'host must be provided' + URL_FORM));
  if (u.user !== undefined) errs.push(invalid(path, u.user, 'user information is not permitted in the URL'));
  if (u.fragment !== '') errs.push(invalid(path, u.fragment, 'fragments are not permitted in the URL'));
  if (u.query !== '') errs.push(invalid(path, u.query, 'query parameters are not permitted in the URL'));
  return errs;
}

/** k8s.io/apiserver's ValidateWebhookService. */
export function validateWebhookService(path: string, svc: any): FieldError[] {
  const errs: FieldError[] = [];
  if (!svc.name) errs.push(required(`${path}.name`, 'service name is required'));
  if (!svc.namespace) errs.push(required(`${path}.namespace`, 'service namespace is required'));
  const port = svc.port ?? 0;
  if (!(isInt(port) && port >= 1 && port <= 65535)) errs.push(invalid(`${path}.port`, port, 'port is not valid: must be between 1 and 65535, inclusive'));
  if (!present(svc.path)) return errs;
  const p = String(svc.path);
  if (p === '/' || p === '') return errs;
  if (p === '//') return [...errs, invalid(`${path}.path`, p, 'segment[0] may not be empty')];
  if (!p.startsWith('/')) errs.push(invalid(`${path}.path`, p, "must start with a '/'"));
  let check = p.slice(1);
  if (check.endsWith('/')) check = check.slice(0, -1);
  check.split('/').forEach((step, i) => {
    if (step === '') {
      errs.push(invalid(`${path}.path`, p, `segment[${i}] may not be empty`));
      return;
    }
    for (const f of dns1123SubdomainErrors(step)) errs.push(invalid(`${path}.path`, p, `segment[${i}]: ${f}`));
  });
  return errs;
}

function validateAdmissionReviewVersions(versions: unknown, requireRecognized: boolean, path: string): FieldError[] {
  const vs = list(versions);
  if (vs.length === 0) return [required(path, `must specify one of ${REVIEW_VERSIONS.join(', ')}`)];
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  let accepted = false;
  vs.forEach((v, i) => {
    if (seen.has(v)) {
      errs.push(invalid(`${path}[${i}]`, v, 'duplicate version'));
      return;
    }
    seen.add(v);
    for (const e of dns1035LabelErrors(String(v))) errs.push(invalid(`${path}[${i}]`, v, e));
    if (REVIEW_VERSIONS.includes(v)) accepted = true;
  });
  if (requireRecognized && !accepted) errs.push(invalid(path, vs, `must include at least one of ${REVIEW_VERSIONS.join(', ')}`));
  return errs;
}

interface Options {
  requireNoSideEffects: boolean;
  requireRecognizedReviewVersion: boolean;
  requireUniqueNames: boolean;
}

function validateWebhook(hook: any, mutating: boolean, opts: Options, path: string): FieldError[] {
  const errs: FieldError[] = [];
  errs.push(...fullyQualifiedName(`${path}.name`, hook.name));
  list(hook.rules).forEach((r, i) => errs.push(...validateRuleWithOperations(r, `${path}.rules[${i}]`)));
  if (present(hook.failurePolicy) && !FAILURE_POLICIES.includes(hook.failurePolicy)) errs.push(notSupported(`${path}.failurePolicy`, hook.failurePolicy, FAILURE_POLICIES));
  if (present(hook.matchPolicy) && !MATCH_POLICIES.includes(hook.matchPolicy)) errs.push(notSupported(`${path}.matchPolicy`, hook.matchPolicy, MATCH_POLICIES));
  const allowed = opts.requireNoSideEffects ? SIDE_EFFECTS_NONE : SIDE_EFFECTS_ALL;
  if (!present(hook.sideEffects)) errs.push(required(`${path}.sideEffects`, `must specify one of ${allowed.join(', ')}`));
  else if (!allowed.includes(hook.sideEffects)) errs.push(notSupported(`${path}.sideEffects`, hook.sideEffects, allowed));
  if (present(hook.timeoutSeconds) && isInt(hook.timeoutSeconds) && (hook.timeoutSeconds > 30 || hook.timeoutSeconds < 1)) {
    errs.push(invalid(`${path}.timeoutSeconds`, hook.timeoutSeconds, 'the timeout value must be between 1 and 30 seconds'));
  }
  errs.push(...validateMatchConditions(hook.matchConditions, `${path}.matchConditions`));
  if (isObj(hook.namespaceSelector)) errs.push(...validateLabelSelector(hook.namespaceSelector, `${path}.namespaceSelector`));
  if (isObj(hook.objectSelector)) errs.push(...validateLabelSelector(hook.objectSelector, `${path}.objectSelector`));
  if (mutating && present(hook.reinvocationPolicy) && !REINVOCATION.includes(hook.reinvocationPolicy)) {
    errs.push(notSupported(`${path}.reinvocationPolicy`, hook.reinvocationPolicy, REINVOCATION));
  }
  const cc = isObj(hook.clientConfig) ? hook.clientConfig : {};
  if (present(cc.url) === present(cc.service)) errs.push(required(`${path}.clientConfig`, 'exactly one of url or service is required'));
  else if (present(cc.url)) errs.push(...validateWebhookUrl(`${path}.clientConfig.url`, String(cc.url)));
  else if (isObj(cc.service)) errs.push(...validateWebhookService(`${path}.clientConfig.service`, cc.service));
  return errs;
}

function validateConfiguration(obj: any, mutating: boolean, opts: Options): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  list(obj?.webhooks).forEach((hook, i) => {
    const path = `webhooks[${i}]`;
    if (!isObj(hook)) return;
    errs.push(...validateWebhook(hook, mutating, opts, path));
    errs.push(...validateAdmissionReviewVersions(hook.admissionReviewVersions, opts.requireRecognizedReviewVersion, `${path}.admissionReviewVersions`));
    if (opts.requireUniqueNames && typeof hook.name === 'string' && hook.name !== '') {
      if (names.has(hook.name)) errs.push(duplicate(`${path}.name`, hook.name));
      else names.add(hook.name);
    }
  });
  return errs;
}

/**
 * On update the strict rules apply only if the stored configuration already met them (kube
 * lets an old webhook keep its side effects, review versions or duplicate names).
 */
function updateOptions(old: any): Options {
  const hooks = list(old?.webhooks).filter(isObj);
  const names = hooks.map((h) => h.name);
  return {
    requireNoSideEffects: hooks.every((h) => SIDE_EFFECTS_NONE.includes(h.sideEffects)),
    requireRecognizedReviewVersion: hooks.every((h) => list(h.admissionReviewVersions).length === 0 || list(h.admissionReviewVersions).some((v) => REVIEW_VERSIONS.includes(v))),
    requireUniqueNames: new Set(names).size === names.length,
  };
}

const STRICT: Options = { requireNoSideEffects: true, requireRecognizedReviewVersion: true, requireUniqueNames: true };

export function validateValidatingWebhookConfiguration(obj: any, old?: any): FieldError[] {
  return validateConfiguration(obj, false, old ? updateOptions(old) : STRICT);
}

export function validateMutatingWebhookConfiguration(obj: any, old?: any): FieldError[] {
  return validateConfiguration(obj, true, old ? updateOptions(old) : STRICT);
}

/** path.ValidatePathSegmentName (no prefix): a name that can be one segment of a URL path. */
function pathSegmentNameErrors(field: string, name: string): FieldError[] {
  return pathSegmentErrors(name).map((msg) => invalid(field, name, msg));
}

/** validateMatchResources of a policy or binding (selectors and match policy are defaulted first). */
function validateMatchResources(m: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(m)) return errs;
  if (!present(m.matchPolicy)) errs.push(required(`${path}.matchPolicy`));
  else if (!MATCH_POLICIES.includes(String(m.matchPolicy))) errs.push(notSupported(`${path}.matchPolicy`, m.matchPolicy, MATCH_POLICIES));
  if (isObj(m.namespaceSelector)) errs.push(...validateLabelSelector(m.namespaceSelector, `${path}.namespaceSelector`));
  if (isObj(m.objectSelector)) errs.push(...validateLabelSelector(m.objectSelector, `${path}.objectSelector`));
  for (const key of ['resourceRules', 'excludeResourceRules']) {
    list(m[key]).forEach((r, i) => {
      const rp = `${path}.${key}[${i}]`;
      const seen = new Set<string>();
      list(r?.resourceNames).forEach((n, j) => {
        const np = `${rp}.resourceNames[${j}]`;
        const name = String(n);
        errs.push(...pathSegmentNameErrors(np, name));
        if (seen.has(name)) errs.push(duplicate(np, name));
        seen.add(name);
      });
      errs.push(...validateRuleWithOperations(r, rp));
    });
  }
  return errs;
}

/** What both policy kinds require first: a failure policy, and match constraints with at least one resource rule. */
function validatePolicyHead(spec: any, errs: FieldError[]): void {
  if (!present(spec.failurePolicy)) errs.push(required('spec.failurePolicy'));
  else if (!FAILURE_POLICIES.includes(String(spec.failurePolicy))) errs.push(notSupported('spec.failurePolicy', spec.failurePolicy, FAILURE_POLICIES));
  if (!isObj(spec.matchConstraints)) errs.push(required('spec.matchConstraints'));
  else {
    errs.push(...validateMatchResources(spec.matchConstraints, 'spec.matchConstraints'));
    if (list(spec.matchConstraints.resourceRules).length === 0) errs.push(required('spec.matchConstraints.resourceRules'));
  }
}

/**
 * ValidatingAdmissionPolicy without its CEL: failure policy, match constraints (with at least
 * one resource rule), and at least one validation or audit annotation, each with an expression.
 * Its CEL expressions are compiled by validatePolicyExpressions (admission-cel.ts).
 */
export function validateValidatingAdmissionPolicy(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObj(obj?.spec) ? obj.spec : {};
  validatePolicyHead(spec, errs);
  if (list(spec.validations).length === 0 && list(spec.auditAnnotations).length === 0) {
    const why = 'validations or auditAnnotations must contain at least one item';
    errs.push(required('spec.validations', why), required('spec.auditAnnotations', why));
  } else {
    list(spec.validations).forEach((v, i) => {
      if (!isObj(v) || String(v.expression ?? '').trim() === '') errs.push(required(`spec.validations[${i}].expression`, 'expression is not specified'));
    });
  }
  errs.push(...validatePolicyExpressions(spec));
  return errs;
}

const PATCH_TYPES = ['ApplyConfiguration', 'JSONPatch'];

/**
 * MutatingAdmissionPolicy (v1alpha1): failure policy, match constraints (with at least one
 * resource rule, none for DELETE), reinvocation policy (required), and at least one mutation whose patchType names the
 * one expression it carries; the expressions compiled as admission will run them.
 */
export function validateMutatingAdmissionPolicy(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObj(obj?.spec) ? obj.spec : {};
  validatePolicyHead(spec, errs);
  if (isObj(spec.matchConstraints)) errs.push(...validateMutableOperations(spec.matchConstraints, 'spec.matchConstraints'));
  // required in v1alpha1, with no default (unlike a webhook's)
  if (!present(spec.reinvocationPolicy) || spec.reinvocationPolicy === '') errs.push(required('spec.reinvocationPolicy'));
  else if (!REINVOCATION.includes(String(spec.reinvocationPolicy))) errs.push(notSupported('spec.reinvocationPolicy', spec.reinvocationPolicy, REINVOCATION));
  if (list(spec.mutations).length === 0) errs.push(required('spec.mutations', 'mutations must contain at least one item'));
  list(spec.mutations).forEach((m, i) => {
    const at = `spec.mutations[${i}]`;
    if (!present(m?.patchType)) return errs.push(required(`${at}.patchType`));
    if (!PATCH_TYPES.includes(String(m.patchType))) return errs.push(notSupported(`${at}.patchType`, m.patchType, PATCH_TYPES));
    const [own, other] = m.patchType === 'JSONPatch' ? ['jsonPatch', 'applyConfiguration'] : ['applyConfiguration', 'jsonPatch'];
    if (m[other] != null) errs.push({ field: `${at}.${other}`, type: 'FieldValueForbidden', detail: `must not be specified when patchType is ${m.patchType}` });
    if (!isObj(m[own])) errs.push(required(`${at}.${own}`, `must be specified when patchType is ${m.patchType}`));
    else if (typeof m[own].expression !== 'string' || m[own].expression.trim() === '') errs.push(required(`${at}.${own}.expression`, 'expression is not specified'));
  });
  errs.push(...validateMutatingPolicyExpressions(spec));
  return errs;
}

// A mutating policy cannot act on a DELETE (kube's supportedMutatingOperations).
const MUTATING_OPERATIONS = ['*', 'CONNECT', 'CREATE', 'UPDATE'];

/**
 * The operations of a mutating policy's or binding's resource rules: every one must be one a
 * mutation can apply to. As kube, the error names the operations of all rules, without an index.
 */
function validateMutableOperations(m: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  for (const r of list(m?.resourceRules)) {
    for (const op of list(r?.operations)) if (!MUTATING_OPERATIONS.includes(op)) errs.push(notSupported(`${path}.resourceRules.operations`, op, MUTATING_OPERATIONS));
  }
  return errs;
}

const NOT_FOUND_ACTIONS = ['Deny', 'Allow'];

/** validateParamRef: a name or a selector (not both), and what to do when no param is found. */
function validateParamRef(ref: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!present(ref)) return errs;
  const pr = isObj(ref) ? ref : {};
  const name = typeof pr.name === 'string' ? pr.name : '';
  const hasSelector = present(pr.selector);
  const both = 'name and selector are mutually exclusive';
  if (name !== '') {
    errs.push(...pathSegmentNameErrors(`${path}.name`, name));
    if (hasSelector) errs.push(forbidden(`${path}.name`, both));
  }
  if (hasSelector) {
    if (isObj(pr.selector)) errs.push(...validateLabelSelector(pr.selector, `${path}.selector`));
    if (name !== '') errs.push(forbidden(`${path}.selector`, both));
  }
  if (name === '' && !hasSelector) errs.push(required(path, 'one of name or selector must be specified'));
  const action = pr.parameterNotFoundAction;
  if (!present(action) || action === '') errs.push(required(`${path}.parameterNotFoundAction`));
  else if (!NOT_FOUND_ACTIONS.includes(String(action))) errs.push(notSupported(`${path}.parameterNotFoundAction`, action, NOT_FOUND_ACTIONS));
  return errs;
}

/** The spec fields both kinds of binding share: the policy's name, paramRef and matchResources. */
function validateBindingSpec(spec: any): FieldError[] {
  const errs: FieldError[] = [];
  const policyName = typeof spec.policyName === 'string' ? spec.policyName : '';
  if (policyName === '') errs.push(required('spec.policyName'));
  else for (const msg of dns1123SubdomainErrors(policyName)) errs.push(invalid('spec.policyName', policyName, msg));
  errs.push(...validateParamRef(spec.paramRef, 'spec.paramRef'));
  errs.push(...validateMatchResources(spec.matchResources, 'spec.matchResources'));
  return errs;
}

const VALIDATION_ACTIONS = ['Audit', 'Deny', 'Warn'];

/** validateValidationActions: at least one, no repeats, and not both Deny and Warn. */
function validateValidationActions(actions: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  list(actions).forEach((a, i) => {
    if (!VALIDATION_ACTIONS.includes(a)) errs.push(notSupported(`${path}[${i}]`, a, VALIDATION_ACTIONS));
    if (seen.has(a)) errs.push(duplicate(`${path}[${i}]`, a));
    seen.add(a);
  });
  if (seen.has('Deny') && seen.has('Warn')) {
    errs.push(invalid(path, actions, 'must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)'));
  }
  if (seen.size === 0) errs.push(required(path, 'at least one validation action is required'));
  return errs;
}

/** ValidatingAdmissionPolicyBinding, as kube's validateValidatingAdmissionPolicyBindingSpec. */
export function validateValidatingAdmissionPolicyBinding(obj: any): FieldError[] {
  const spec = isObj(obj?.spec) ? obj.spec : {};
  return [...validateBindingSpec(spec), ...validateValidationActions(spec.validationActions, 'spec.validationActions')];
}

/** MutatingAdmissionPolicyBinding (v1alpha1), as kube's validateMutatingAdmissionPolicyBindingSpec. */
export function validateMutatingAdmissionPolicyBinding(obj: any): FieldError[] {
  const spec = isObj(obj?.spec) ? obj.spec : {};
  const errs = validateBindingSpec(spec);
  if (isObj(spec.matchResources)) errs.push(...validateMutableOperations(spec.matchResources, 'spec.matchResources'));
  return errs;
}
