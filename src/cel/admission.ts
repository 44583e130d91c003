// The CEL variables admission expressions see (kube's admission/plugin/cel: compile.go's
// variable set, condition.go's CreateAdmissionRequest and CreateNamespaceObject,
// activation.go), shared by matchConditions and ValidatingAdmissionPolicy.
import type { Attributes } from '../admission/plugin.js';
import { toCel, celView } from './values.js';
import { Authorizer, type AuthorizeFn } from './library/authz.js';
import type { VariableDecls } from './environment.js';
import type { Environment } from '@marcbachmann/cel-js';

/** kube's OptionalVariableDeclarations: which of params and authorizer an expression may use. */
export function admissionVariables(opts: { params?: boolean; authorizer?: boolean; variables?: boolean }): VariableDecls {
  const v: VariableDecls = { object: 'dyn', oldObject: 'dyn', request: 'dyn', namespaceObject: 'dyn' };
  if (opts.params) v.params = 'dyn';
  if (opts.authorizer) v.authorizer = 'Authorizer';
  if (opts.variables) v.variables = 'dyn';
  return v;
}

/** kube's CreateAdmissionRequest: the request as an AdmissionRequest without uid, object and oldObject. */
export function admissionRequest(a: Attributes, match?: { group: string; version: string; resource: string; kind: string }): Record<string, any> {
  const gvk = a.kind ?? { group: a.info.group, version: a.info.version, kind: a.info.kind };
  const gvr = a.resource ?? { group: a.info.group, version: a.info.version, resource: a.info.resource };
  const u = a.user;
  const userInfo: Record<string, any> = {};
  if (u) {
    if (u.name) userInfo.username = u.name;
    if (u.uid) userInfo.uid = u.uid;
    if (u.groups?.length) userInfo.groups = [...u.groups];
    if (u.extra && Object.keys(u.extra).length) userInfo.extra = u.extra;
  }
  const req: Record<string, any> = {
    kind: match ? { group: match.group, version: match.version, kind: match.kind } : { ...gvk },
    resource: match ? { group: match.group, version: match.version, resource: match.resource } : { ...gvr },
    requestKind: { ...gvk },
    requestResource: { ...gvr },
    name: a.name || a.obj?.metadata?.name || '',
    operation: a.operation,
    userInfo,
    dryRun: a.dryRun,
  };
  if (a.subresource) {
    req.subResource = a.subresource;
    req.requestSubResource = a.subresource;
  }
  if (a.namespace) req.namespace = a.namespace;
  if (a.options) req.options = a.options;
  return toCel(req);
}

/** kube's CreateNamespaceObject: the namespace with only the fields policies may read. */
export function namespaceObject(ns: any): any {
  if (!ns) return null;
  const m = ns.metadata ?? {};
  const meta: Record<string, any> = {};
  for (const k of ['name', 'generateName', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'finalizers']) {
    if (m[k] !== undefined) meta[k] = m[k];
  }
  return toCel({ metadata: meta, spec: ns.spec ?? {}, status: ns.status ?? {} });
}

/** The per-request values of the admission variables (object and oldObject null when absent, as kube). */
export function admissionActivation(
  a: Attributes,
  opts: { request: any; namespace?: any; params?: any; authorize?: AuthorizeFn; object?: any; oldObject?: any },
): Record<string, any> {
  return {
    object: opts.object !== undefined ? opts.object : a.obj == null ? null : celView(a.obj),
    oldObject: opts.oldObject !== undefined ? opts.oldObject : a.old == null ? null : celView(a.old),
    request: opts.request,
    namespaceObject: opts.namespace ?? null,
    params: opts.params ?? null,
    authorizer: new Authorizer(a.user, opts.authorize, {
      group: a.resource?.group ?? a.info.group,
      resource: a.resource?.resource ?? a.info.resource,
      subresource: a.subresource,
      namespace: a.namespace,
      name: a.name || a.obj?.metadata?.name || '',
    }),
  };
}

/**
 * Declares kube's typed `request` (kubernetes.AdmissionRequest, compile.go BuildRequestType)
 * and `namespaceObject` (BuildNamespaceType) for type checking: the names of the engine types.
 */
export function declareAdmissionTypes(env: Environment): { request: string; namespace: string } {
  env.registerType('K8sGVK', { fields: { group: 'string', version: 'string', kind: 'string' } } as any);
  env.registerType('K8sGVR', { fields: { group: 'string', version: 'string', resource: 'string' } } as any);
  env.registerType('K8sUserInfo', { fields: { username: 'string', uid: 'string', groups: 'list<string>', extra: 'map<string, list<string>>' } } as any);
  env.registerType('K8sAdmissionRequest', {
    fields: {
      kind: 'K8sGVK',
      resource: 'K8sGVR',
      subResource: 'string',
      requestKind: 'K8sGVK',
      requestResource: 'K8sGVR',
      requestSubResource: 'string',
      name: 'string',
      namespace: 'string',
      operation: 'string',
      userInfo: 'K8sUserInfo',
      dryRun: 'bool',
      options: 'dyn',
    },
  } as any);
  env.registerType('K8sNamespaceMetadata', {
    fields: {
      name: 'string',
      generateName: 'string',
      namespace: 'string',
      labels: 'map<string, string>',
      annotations: 'map<string, string>',
      UID: 'string',
      creationTimestamp: 'dyn',
      deletionGracePeriodSeconds: 'int',
      deletionTimestamp: 'dyn',
      generation: 'int',
      resourceVersion: 'string',
      finalizers: 'list<string>',
    },
  } as any);
  env.registerType('K8sNamespaceSpec', { fields: { finalizers: 'list<string>' } } as any);
  env.registerType('K8sNamespaceStatus', { fields: { conditions: 'list<dyn>', phase: 'string' } } as any);
  env.registerType('K8sNamespace', { fields: { metadata: 'K8sNamespaceMetadata', spec: 'K8sNamespaceSpec', status: 'K8sNamespaceStatus' } } as any);
  return { request: 'K8sAdmissionRequest', namespace: 'K8sNamespace' };
}
