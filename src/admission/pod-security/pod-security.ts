// PodSecurity (kube's plugin/pkg/admission/security/podsecurity over
// k8s.io/pod-security-admission/admission): the Pod Security Standards enforced per namespace.
// A namespace's pod-security.kubernetes.io/{enforce,audit,warn}[-version] labels (else the
// configured defaults) choose a level and version per mode. Pods are refused when they fail
// the enforce level; failing the warn level gives a Warning, failing the audit level an audit
// annotation. Workload objects with a pod template get warn and audit only. Namespace writes
// must carry valid labels, and a change that tightens enforce reports the existing pods that
// would now be refused. Exempt usernames, runtime classes and namespaces are not checked.
//
// Thread ownership: the front thread (as every admission plugin). The parsed namespace
// policies are cached here per namespace, keyed by the namespace's resourceVersion, so a pod
// create in an unlabelled namespace reads one cached object and parses nothing.
import { AdmissionPlugin, forbidden, type Attributes, type ObjectSource } from '../plugin.js';
import { errors, goQuote } from '../../errors.js';
import {
  AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL, AUDIT_VIOLATIONS_ANNOTATION, ENFORCED_POLICY_ANNOTATION, ENFORCE_LEVEL_LABEL, ENFORCE_VERSION_LABEL,
  EXEMPTION_REASON_ANNOTATION, LABEL_PREFIX, PRIVILEGED_LATEST, WARN_LEVEL_LABEL, WARN_VERSION_LABEL, compareLevels, equivalentPolicy, fullyPrivileged,
  labelErrorsText, levelVersionString, policyToEvaluate, sameLevelVersion, sameVersion, type LabelError, type LevelVersion, type Policy,
} from './api.js';
import { Evaluator, aggregate, forbiddenDetail, forbiddenReason, type Aggregate } from './checks.js';
import { loadPodSecurityConfig, type PodSecurityConfig } from './config.js';
import { podSecurityMetrics, type PodSecurityMetrics } from './metrics.js';

/** kube's defaultNamespaceMaxPodsToCheck and defaultNamespacePodCheckTimeout. */
export const NAMESPACE_MAX_PODS_TO_CHECK = 3000;
export const NAMESPACE_POD_CHECK_TIMEOUT_MS = 1000;

/** The namespaces whose parsed labels are kept at most. */
const MAX_CACHED_POLICIES = 10_000;

/** Pod subresources that cannot change the pod's spec (kube's ignoredPodSubresources). */
const IGNORED_POD_SUBRESOURCES = new Set(['exec', 'attach', 'binding', 'eviction', 'log', 'portforward', 'proxy', 'status']);

/** The workload kinds whose pod template is checked (kube's defaultPodSpecResources), by group-resource. */
const TEMPLATE_OF: Record<string, (o: any) => { meta: any; spec: any } | undefined> = {
  '/replicationcontrollers': (o) => template(o?.spec?.template),
  '/podtemplates': (o) => template(o?.template),
  'apps/replicasets': (o) => template(o?.spec?.template),
  'apps/deployments': (o) => template(o?.spec?.template),
  'apps/statefulsets': (o) => template(o?.spec?.template),
  'apps/daemonsets': (o) => template(o?.spec?.template),
  'batch/jobs': (o) => template(o?.spec?.template),
  'batch/cronjobs': (o) => template(o?.spec?.jobTemplate?.spec?.template),
};

/** (the resource names alone, a cheap first test for the writes of every other resource) */
const TEMPLATE_RESOURCES = new Set(Object.keys(TEMPLATE_OF).map((k) => k.slice(k.indexOf('/') + 1)));

/** A template the object leaves out is not checked (kube's extractPodSpecFromTemplate with nil). */
function template(t: any): { meta: any; spec: any } | undefined {
  if (t === undefined || t === null) return undefined;
  return { meta: t.metadata ?? {}, spec: t.spec ?? {} };
}

/** the audit annotation keys as the plugin records them (kube's AuditAnnotationPrefix + key) */
const AUDIT_KEYS: Record<string, string> = Object.fromEntries(
  [ENFORCED_POLICY_ANNOTATION, AUDIT_VIOLATIONS_ANNOTATION, EXEMPTION_REASON_ANNOTATION, 'error'].map((k) => [k, LABEL_PREFIX + k]),
);
const PRIVILEGED_LATEST_TEXT = levelVersionString(PRIVILEGED_LATEST);

interface NamespacePolicy {
  rv: string;
  policy: Policy;
  errs: LabelError[];
}

export class PodSecurity extends AdmissionPlugin {
  readonly name = 'PodSecurity';
  readonly config: PodSecurityConfig;
  readonly evaluator: Evaluator;
  /** parsed namespace policies, by namespace name; an entry is good while the namespace's resourceVersion is */
  private readonly policies = new Map<string, NamespacePolicy>();
  /** the defaults' evaluation needs no labels: namespaces without any PodSecurity label share it */
  private readonly defaultPolicy: Policy;
  private readonly defaults: NamespacePolicy;
  private readonly noExemptions: boolean;
  /** tests shorten the namespace check's budget */
  podCheckTimeoutMs = NAMESPACE_POD_CHECK_TIMEOUT_MS;
  maxPodsToCheck = NAMESPACE_MAX_PODS_TO_CHECK;

  constructor(objects: ObjectSource, config?: any, readonly metrics: PodSecurityMetrics = podSecurityMetrics) {
    super(objects);
    this.config = loadPodSecurityConfig(config);
    this.defaultPolicy = this.config.defaults;
    this.defaults = { rv: '', policy: this.defaultPolicy, errs: [] };
    const ex = this.config.exemptions;
    this.noExemptions = ex.usernames.size === 0 && ex.runtimeClasses.size === 0 && ex.namespaces.size === 0;
    this.evaluator = new Evaluator();
  }

  handles(a: Attributes): boolean {
    if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return false;
    const gr = a.groupResource;
    if (gr.group === '') {
      if (gr.resource === 'pods') return !IGNORED_POD_SUBRESOURCES.has(a.subresource);
      if (gr.resource === 'namespaces') return a.subresource === '';
    }
    return a.subresource === '' && TEMPLATE_RESOURCES.has(gr.resource) && TEMPLATE_OF[`${gr.group}/${gr.resource}`] !== undefined;
  }

  override validate(a: Attributes): void {
    const gr = a.groupResource;
    if (gr.group === '' && gr.resource === 'namespaces') return this.validateNamespace(a);
    if (gr.group === '' && gr.resource === 'pods') return this.validatePod(a);
    return this.validatePodController(a);
  }

  // ---------------------------------------------------------------- namespaces

  /** kube's ValidateNamespace. */
  private validateNamespace(a: Attributes): void {
    const ns = a.obj;
    const name: string = a.name || ns?.metadata?.name || '';
    const labels = ns?.metadata?.labels;
    const { policy, errs } = policyToEvaluate(labels, this.defaultPolicy);
    if (a.operation === 'CREATE') {
      if (errs.length) throw errors.invalid('Namespace', '', name, errs);
      if (this.config.exemptions.namespaces.has(name)) this.exemptNamespaceWarning(a, name, policy, labels);
      return;
    }
    const old = policyToEvaluate(a.old?.metadata?.labels, this.defaultPolicy);
    // labels already invalid in the same way may stay (other updates of the namespace go through)
    if (errs.length && (old.errs.length === 0 || !sameErrors(errs, old.errs))) throw errors.invalid('Namespace', '', name, errs);
    const next = policy.enforce;
    const prev = old.policy.enforce;
    // Nothing to dry-run: enforce unchanged, now privileged, or relaxed at the same version.
    if (sameLevelVersion(next, prev) || next.level === 'privileged') return;
    if (sameVersion(next.version, prev.version) && compareLevels(next.level, prev.level) < 1) return;
    if (this.config.exemptions.namespaces.has(name)) {
      this.exemptNamespaceWarning(a, name, policy, labels);
      return;
    }
    const warnings = this.evaluatePodsInNamespace(name, next);
    if (warnings.length) (a.warnings ??= []).push(...warnings);
  }

  /** kube's exemptNamespaceWarning: an exempt namespace that sets a policy is told it is ignored. */
  private exemptNamespaceWarning(a: Attributes, name: string, policy: Policy, labels: Record<string, string> | undefined): void {
    if (fullyPrivileged(policy) || equivalentPolicy(policy, this.defaultPolicy)) return;
    const has = (k: string) => labels !== undefined && k in labels;
    const parts: string[] = [];
    if (policy.enforce.level !== 'privileged' && (has(ENFORCE_LEVEL_LABEL) || has(ENFORCE_VERSION_LABEL))) parts.push(`enforce=${levelVersionString(policy.enforce)}`);
    if (policy.audit.level !== 'privileged' && (has(AUDIT_LEVEL_LABEL) || has(AUDIT_VERSION_LABEL))) parts.push(`audit=${levelVersionString(policy.audit)}`);
    if (policy.warn.level !== 'privileged' && (has(WARN_LEVEL_LABEL) || has(WARN_VERSION_LABEL))) parts.push(`warn=${levelVersionString(policy.warn)}`);
    (a.warnings ??= []).push(`namespace ${goQuote(name)} is exempt from Pod Security, and the policy (${parts.join(', ')}) will be ignored`);
  }

  /**
   * kube's EvaluatePodsInNamespace: the namespace's pods against its new enforce level, one
   * pod per controller first, at most maxPodsToCheck pods and for at most podCheckTimeoutMs;
   * pods failing for the same reasons are counted together under the lexically first name.
   */
  evaluatePodsInNamespace(namespace: string, enforce: LevelVersion): string[] {
    const deadline = performance.now() + this.podCheckTimeoutMs;
    const pods = this.prioritizePods(this.objects.list('pods', namespace));
    const total = pods.length;
    const toCheck = total > this.maxPodsToCheck ? pods.slice(0, this.maxPodsToCheck) : pods;
    let checked = toCheck.length;
    const byWarning = new Map<string, { podName: string; count: number }>();
    for (let i = 0; i < toCheck.length; i++) {
      const pod = toCheck[i];
      const r = aggregate(this.evaluator.evaluate(enforce, pod.metadata ?? {}, pod.spec ?? {}));
      if (!r.allowed) {
        const w = forbiddenReason(r);
        const name: string = pod.metadata?.name ?? '';
        const c = byWarning.get(w);
        if (!c) byWarning.set(w, { podName: name, count: 1 });
        else {
          if (name < c.podName) c.podName = name;
          c.count++;
        }
      }
      if (performance.now() > deadline) {
        checked = i + 1;
        break;
      }
    }
    const out: string[] = [];
    if (checked < total) out.push(`new PodSecurity enforce level only checked against the first ${checked} of ${total} existing pods`);
    if (byWarning.size) out.push(`existing pods in namespace ${goQuote(namespace)} violate the new PodSecurity enforce level ${goQuote(levelVersionString(enforce))}`);
    const podWarnings: string[] = [];
    for (const [w, c] of byWarning) {
      if (c.count === 1) podWarnings.push(`${c.podName}: ${w}`);
      else if (c.count === 2) podWarnings.push(`${c.podName} (and 1 other pod): ${w}`);
      else podWarnings.push(`${c.podName} (and ${c.count - 1} other pods): ${w}`);
    }
    podWarnings.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    return out.concat(podWarnings);
  }

  /** kube's prioritizePods: exempt runtime classes left out; one pod per controller first, the rest of each controller's after. */
  private prioritizePods(pods: any[]): any[] {
    const first: any[] = [];
    const dups: any[] = [];
    const seen = new Set<string>();
    for (const pod of pods) {
      if (this.exemptRuntimeClass(pod.spec?.runtimeClassName)) continue;
      const ref = Array.isArray(pod.metadata?.ownerReferences) ? pod.metadata.ownerReferences.find((r: any) => r?.controller === true) : undefined;
      if (!ref) first.push(pod);
      else if (seen.has(ref.uid)) dups.push(pod);
      else {
        seen.add(ref.uid);
        first.push(pod);
      }
    }
    return dups.length ? first.concat(dups) : first;
  }

  // ---------------------------------------------------------------- pods and templates

  /** kube's ValidatePod. */
  private validatePod(a: Attributes): void {
    if (this.exempt(a)) return;
    const ns = this.namespacePolicy(a.namespace);
    if (ns.errs.length === 0 && fullyPrivileged(ns.policy)) {
      this.metrics.evaluation('allow', ns.policy.enforce, 'enforce', a);
      annotate(a, ENFORCED_POLICY_ANNOTATION, PRIVILEGED_LATEST_TEXT);
      return;
    }
    if (a.operation === 'UPDATE' && a.old && !isSignificantPodUpdate(a.obj, a.old)) return;
    this.evaluatePod(a, ns, a.obj?.metadata ?? {}, a.obj?.spec ?? {}, true);
  }

  /** kube's ValidatePodController: warn and audit only. */
  private validatePodController(a: Attributes): void {
    if (this.exempt(a)) return;
    const ns = this.namespacePolicy(a.namespace);
    if (ns.errs.length === 0 && ns.policy.warn.level === 'privileged' && ns.policy.audit.level === 'privileged') return;
    const t = TEMPLATE_OF[`${a.groupResource.group}/${a.groupResource.resource}`](a.obj);
    if (!t) return;
    this.evaluatePod(a, ns, t.meta, t.spec, false);
  }

  /** Namespace and user exemptions (kube checks them before reading the namespace). */
  private exempt(a: Attributes): boolean {
    if (this.noExemptions) return false;
    const ex = this.config.exemptions;
    if (a.namespace && ex.namespaces.has(a.namespace)) {
      this.metrics.exemption(a);
      annotate(a, EXEMPTION_REASON_ANNOTATION, 'namespace');
      return true;
    }
    const user = a.user?.name;
    if (user && ex.usernames.has(user)) {
      this.metrics.exemption(a);
      annotate(a, EXEMPTION_REASON_ANNOTATION, 'user');
      return true;
    }
    return false;
  }

  private exemptRuntimeClass(rc: unknown): boolean {
    return typeof rc === 'string' && rc !== '' && this.config.exemptions.runtimeClasses.has(rc);
  }

  /** kube's EvaluatePod: enforce (pods only), then audit and warn, reusing an evaluation of the same level and version. */
  private evaluatePod(a: Attributes, ns: NamespacePolicy, meta: any, spec: any, enforce: boolean): void {
    if (this.exemptRuntimeClass(spec?.runtimeClassName)) {
      this.metrics.exemption(a);
      annotate(a, EXEMPTION_REASON_ANNOTATION, 'runtimeClass');
      return;
    }
    const p = ns.policy;
    if (ns.errs.length) {
      annotate(a, 'error', `Failed to parse policy: ${labelErrorsText(ns.errs)}`);
      this.metrics.error(false, a);
    }
    const cache: Array<[LevelVersion, Aggregate]> = [];
    const evaluate = (lv: LevelVersion): Aggregate => {
      for (const [k, v] of cache) if (sameLevelVersion(k, lv)) return v;
      const r = aggregate(this.evaluator.evaluate(lv, meta, spec));
      cache.push([lv, r]);
      return r;
    };
    let refusal: string | undefined;
    if (enforce) {
      annotate(a, ENFORCED_POLICY_ANNOTATION, levelVersionString(p.enforce));
      const r = evaluate(p.enforce);
      if (!r.allowed) refusal = `violates PodSecurity ${goQuote(levelVersionString(p.enforce))}: ${forbiddenDetail(r)}`;
      this.metrics.evaluation(r.allowed ? 'allow' : 'deny', p.enforce, 'enforce', a);
    }
    const audit = evaluate(p.audit);
    if (!audit.allowed) {
      annotate(a, AUDIT_VIOLATIONS_ANNOTATION, `would violate PodSecurity ${goQuote(levelVersionString(p.audit))}: ${forbiddenDetail(audit)}`);
      this.metrics.evaluation('deny', p.audit, 'audit', a);
    }
    if (refusal !== undefined) throw forbidden(a, refusal);
    const warn = evaluate(p.warn);
    if (!warn.allowed) {
      (a.warnings ??= []).push(`would violate PodSecurity ${goQuote(levelVersionString(p.warn))}: ${forbiddenDetail(warn)}`);
      this.metrics.evaluation('deny', p.warn, 'warn', a);
    }
  }

  /**
   * The namespace's policy, parsed once per version of the namespace. A namespace not in
   * the cache (not created yet as seen from here) reads as the defaults, as kube's getter
   * would find it through its client.
   */
  private namespacePolicy(name: string): NamespacePolicy {
    const ns = this.objects.get('namespaces', '', name);
    const labels = ns?.metadata?.labels;
    // (a namespace without any PodSecurity label is the defaults: nothing to parse or keep)
    if (!hasPodSecurityLabel(labels)) return this.defaults;
    const rv: string = ns.metadata?.resourceVersion ?? '';
    const hit = this.policies.get(name);
    if (hit && hit.rv === rv && rv !== '') return hit;
    const entry: NamespacePolicy = { rv, ...policyToEvaluate(labels, this.defaultPolicy) };
    // deleted namespaces leave entries behind: start again rather than grow without bound
    if (this.policies.size >= MAX_CACHED_POLICIES) this.policies.clear();
    this.policies.set(name, entry);
    return entry;
  }

  /** Drops a deleted namespace's cached policy (for callers that see namespace deletions). */
  forgetNamespace(name: string): void {
    this.policies.delete(name);
  }
}

function hasPodSecurityLabel(labels: unknown): labels is Record<string, string> {
  if (!labels || typeof labels !== 'object') return false;
  for (const k in labels) if (k.startsWith(LABEL_PREFIX)) return true;
  return false;
}

function sameErrors(a: LabelError[], b: LabelError[]): boolean {
  return a.length === b.length && a.every((e, i) => e.field === b[i].field && e.value === b[i].value && e.detail === b[i].detail);
}

function annotate(a: Attributes, key: string, value: string): void {
  (a.auditAnnotations ??= {})[AUDIT_KEYS[key]] = value;
}

/**
 * kube's isSignificantPodUpdate: only a change that can alter what is checked (a container
 * added or removed, an image changed, the seccomp annotations) is evaluated again; the rest
 * of a pod's spec cannot change after creation.
 */
export function isSignificantPodUpdate(pod: any, old: any): boolean {
  const spec = pod?.spec ?? {};
  const oldSpec = old?.spec ?? {};
  const ann = pod?.metadata?.annotations ?? {};
  const oldAnn = old?.metadata?.annotations ?? {};
  const arr = (v: any): any[] => (Array.isArray(v) ? v : []);
  const cs = arr(spec.containers);
  const oldCs = arr(oldSpec.containers);
  const ics = arr(spec.initContainers);
  const oldIcs = arr(oldSpec.initContainers);
  if (cs.length !== oldCs.length || ics.length !== oldIcs.length) return true;
  const significant = (c: any, o: any) => {
    if (c?.image !== o?.image) return true;
    const key = `container.seccomp.security.alpha.kubernetes.io/${c?.name ?? ''}`;
    return ann[key] !== oldAnn[key];
  };
  for (let i = 0; i < cs.length; i++) if (significant(cs[i], oldCs[i])) return true;
  for (let i = 0; i < ics.length; i++) if (significant(ics[i], oldIcs[i])) return true;
  const oldEph = arr(oldSpec.ephemeralContainers);
  for (const c of arr(spec.ephemeralContainers)) {
    const o = oldEph.find((x) => x?.name === c?.name);
    if (!o || significant(c, o)) return true;
  }
  return false;
}

