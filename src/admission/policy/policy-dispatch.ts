// What ValidatingAdmissionPolicy and MutatingAdmissionPolicy share of kube's generic policy
// dispatcher (apiserver/pkg/admission/plugin/policy/generic/policy_dispatcher.go): the
// bindings grouped under their policy in a stable order, the param objects a binding refers
// to (CollectParams), the resource a paramKind names, and the per-request CEL values
// (request, namespaceObject, object, oldObject) made once and shared by every invocation.
//
// Thread ownership: none of its own; it reads the front thread's caches (ObjectSource).
import type { Attributes, ObjectSource } from '../plugin.js';
import { selectorMatches } from '../../registry/label-selector.js';
import { admissionRequest, namespaceObject } from '../../cel/admission.js';
import { celView } from '../../cel/values.js';

/** How a paramKind names its resource: kube's RESTMapper, which the plugin is given or guesses. */
export type KindResolver = (apiVersion: string, kind: string) => { gr: string; namespaced: boolean } | undefined;

/** The bindings by the policy they name, policies by name, each policy's bindings by name (kube's evaluation order). */
export function bindingsByPolicy(bindings: any[]): Array<[string, any[]]> {
  const byPolicy = new Map<string, any[]>();
  for (const b of bindings) {
    const pn = b.spec?.policyName;
    if (!pn) continue;
    let l = byPolicy.get(pn);
    if (!l) byPolicy.set(pn, (l = []));
    l.push(b);
  }
  const byName = (x: any, y: any) => (x.metadata?.name < y.metadata?.name ? -1 : x.metadata?.name > y.metadata?.name ? 1 : 0);
  return [...byPolicy].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0)).map(([p, l]) => [p, l.sort(byName)]);
}

/** kube's CollectParams: the param objects a binding refers to ([null] when the policy takes none, or the binding names none). */
export function collectParams(objects: ObjectSource, resolveKind: KindResolver, paramKind: any, paramRef: any, requestNamespace: string): any[] {
  if (!paramKind || !paramRef) return [null];
  const target = resolveKind(paramKind.apiVersion ?? '', paramKind.kind ?? '');
  if (!target) throw new Error(`paramKind kind \`&ParamKind{APIVersion:${paramKind.apiVersion ?? ''},Kind:${paramKind.kind ?? ''},}\` not known`);
  let ns = '';
  if (target.namespaced) {
    ns = paramRef.namespace || requestNamespace;
    if (!ns) throw new Error('cannot use namespaced paramRef in policy binding that matches cluster-scoped resources');
  } else if (paramRef.namespace) {
    throw new Error('paramRef.namespace must not be provided for a cluster-scoped `paramKind`');
  }
  let params: any[];
  if (paramRef.name) {
    if (paramRef.selector) throw new Error('paramRef.name and paramRef.selector are mutually exclusive');
    const p = objects.get(target.gr, ns, paramRef.name);
    params = p ? [p] : [];
  } else if (paramRef.selector) {
    params = objects.list(target.gr, ns).filter((p) => selectorMatches(paramRef.selector, p.metadata?.labels ?? {}));
  } else throw new Error('one of name or selector must be provided');
  if (params.length === 0 && paramRef.parameterNotFoundAction === 'Deny') {
    throw new Error('no params found for policy binding with `Deny` parameterNotFoundAction');
  }
  return params;
}

/**
 * The request's CEL values, each made on first use and then shared by every policy and
 * binding (object and oldObject are views: see values.ts celView). `refreshObject` drops the
 * object's view after a mutation replaced what it showed.
 */
export class RequestValues {
  private req: any;
  private ns: any;
  private obj: any;
  private oldObj: any;
  constructor(
    private readonly a: Attributes,
    private readonly objects: ObjectSource,
  ) {}

  get request(): any {
    return (this.req ??= admissionRequest(this.a));
  }

  /** kube's namespaceObject: null for cluster-scoped requests and for a Namespace itself */
  get namespace(): any {
    if (this.ns === undefined) {
      const a = this.a;
      const nsName = a.info.group === '' && a.info.resource === 'namespaces' ? '' : a.namespace;
      this.ns = nsName ? namespaceObject(this.objects.get('namespaces', '', nsName)) : null;
    }
    return this.ns;
  }

  get object(): any {
    return (this.obj ??= this.a.obj == null ? null : celView(this.a.obj));
  }

  get oldObject(): any {
    return (this.oldObj ??= this.a.old == null ? null : celView(this.a.old));
  }

  refreshObject(): void {
    this.obj = undefined;
  }
}

const CLUSTER_KINDS = new Set([
  'Namespace', 'Node', 'PersistentVolume', 'ClusterRole', 'ClusterRoleBinding', 'StorageClass', 'CustomResourceDefinition', 'PriorityClass',
  'APIService', 'CSIDriver', 'CSINode', 'VolumeAttachment', 'IngressClass', 'RuntimeClass', 'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding', 'ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration', 'FlowSchema',
  'PriorityLevelConfiguration', 'CertificateSigningRequest', 'ServiceCIDR', 'IPAddress', 'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
]);

/** The resource of a kind: a CRD's names when one defines it, else kube's plural of a built-in kind. */
export function guessKind(objects: ObjectSource, apiVersion: string, kind: string): { gr: string; namespaced: boolean } | undefined {
  if (!kind) return undefined;
  const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
  for (const crd of objects.list('customresourcedefinitions.apiextensions.k8s.io', '')) {
    if (crd.spec?.group === group && crd.spec?.names?.kind === kind) {
      return { gr: `${crd.spec.names.plural}.${group}`, namespaced: crd.spec.scope !== 'Cluster' };
    }
  }
  const lower = kind.toLowerCase();
  const plural = /(s|x|ch|sh)$/.test(lower) ? `${lower}es` : /[^aeiou]y$/.test(lower) ? `${lower.slice(0, -1)}ies` : lower === 'endpoints' ? lower : `${lower}s`;
  return { gr: group ? `${plural}.${group}` : plural, namespaced: !CLUSTER_KINDS.has(kind) };
}

/** The policies of one kind compiled once per object (a new resourceVersion compiles again). */
export class CompiledPolicies<T extends { resourceVersion: string; policy: any }> {
  private readonly compiled = new Map<string, T>();
  constructor(
    private readonly objects: ObjectSource,
    private readonly gr: string,
    private readonly compileOne: (policy: any) => T,
  ) {}

  get(name: string): T | undefined {
    const p = this.objects.get(this.gr, '', name);
    if (!p) return undefined;
    const c = this.compiled.get(name);
    if (c && c.resourceVersion === p.metadata?.resourceVersion && c.policy === p) return c;
    const fresh = this.compileOne(p);
    this.compiled.set(name, fresh);
    if (this.compiled.size > 10_000) this.compiled.clear();
    return fresh;
  }
}
