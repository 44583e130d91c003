// kube's authz library (apiserver/pkg/cel/library/authz.go) and its selectors
// (authz_selectors.go): the `authorizer` variable, authorizer.path(p), authorizer.group(g)
// .resource(r).subresource(s).namespace(ns).name(n).fieldSelector(s).labelSelector(s)
// .check(verb), authorizer.serviceAccount(ns, name), and Decision's allowed, reason,
// errored, error, and authorizer.requestResource (the request's own resource). The checks
// run as the request's user through kubeshard's authorizer; with none given (a caller that
// has no authorizer), every check is denied.
import type { Environment } from '@marcbachmann/cel-js';
import { def } from './def.js';
import type { UserInfo } from '../../auth/user.js';
import type { AuthorizationAttributes, Decision } from '../../http/filters/authorization.js';

export type AuthorizeFn = (a: AuthorizationAttributes) => Decision;

export class Authorizer {
  static celTypeName = 'kubernetes.authorization.Authorizer';
  /** kube's `authorizer.requestResource`: a check of the request's own resource, ready for .check(verb) */
  readonly requestResource?: ResourceCheck;
  constructor(
    readonly user: UserInfo | undefined,
    readonly authorize: AuthorizeFn | undefined,
    request?: { group: string; resource: string; subresource: string; namespace: string; name: string },
  ) {
    if (request) this.requestResource = new ResourceCheck(this, request.group, request.resource, request.subresource, request.namespace, request.name);
  }
}

export class PathCheck {
  static celTypeName = 'kubernetes.authorization.PathCheck';
  constructor(
    readonly authz: Authorizer,
    readonly path: string,
  ) {}
}

export class ResourceCheck {
  static celTypeName = 'kubernetes.authorization.ResourceCheck';
  constructor(
    readonly authz: Authorizer,
    readonly group: string,
    readonly resource = '',
    readonly subresource = '',
    readonly namespace = '',
    readonly name = '',
  ) {}
  with(f: Partial<Pick<ResourceCheck, 'resource' | 'subresource' | 'namespace' | 'name'>>): ResourceCheck {
    return new ResourceCheck(this.authz, this.group, f.resource ?? this.resource, f.subresource ?? this.subresource, f.namespace ?? this.namespace, f.name ?? this.name);
  }
}

export class AuthzDecision {
  static celTypeName = 'kubernetes.authorization.Decision';
  constructor(
    readonly allowed: boolean,
    readonly reason: string,
    readonly error: string,
  ) {}
}

function decide(authz: Authorizer, a: Omit<AuthorizationAttributes, 'user'>): AuthzDecision {
  if (!authz.authorize || !authz.user) return new AuthzDecision(false, 'no authorizer', '');
  try {
    const d = authz.authorize({ ...a, user: authz.user });
    return new AuthzDecision(d.allowed, d.reason, '');
  } catch (e: any) {
    return new AuthzDecision(false, '', String(e?.message ?? e));
  }
}

export function registerAuthz(env: Environment): void {
  env.registerType('Authorizer', Authorizer as any);
  env.registerType('PathCheck', PathCheck as any);
  env.registerType('ResourceCheck', ResourceCheck as any);
  env.registerType('Decision', AuthzDecision as any);
  def(env, 'Authorizer.path(string): PathCheck', (a: Authorizer, p: string) => new PathCheck(a, p));
  def(env, 'Authorizer.group(string): ResourceCheck', (a: Authorizer, g: string) => new ResourceCheck(a, g));
  def(env, 'Authorizer.serviceAccount(string, string): Authorizer', (a: Authorizer, ns: string, name: string) =>
    new Authorizer({ name: `system:serviceaccount:${ns}:${name}`, uid: '', groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'] }, a.authorize),
  );
  def(env, 'ResourceCheck.resource(string): ResourceCheck', (c: ResourceCheck, v: string) => c.with({ resource: v }));
  def(env, 'ResourceCheck.subresource(string): ResourceCheck', (c: ResourceCheck, v: string) => c.with({ subresource: v }));
  def(env, 'ResourceCheck.namespace(string): ResourceCheck', (c: ResourceCheck, v: string) => c.with({ namespace: v }));
  def(env, 'ResourceCheck.name(string): ResourceCheck', (c: ResourceCheck, v: string) => c.with({ name: v }));
  // selectors narrow the check; kubeshard's authorizers do not look at selectors, so they pass through
  def(env, 'ResourceCheck.fieldSelector(string): ResourceCheck', (c: ResourceCheck) => c);
  def(env, 'ResourceCheck.labelSelector(string): ResourceCheck', (c: ResourceCheck) => c);
  def(env, 'ResourceCheck.check(string): Decision', (c: ResourceCheck, verb: string) =>
    decide(c.authz, { verb, resourceRequest: true, apiGroup: c.group, resource: c.resource, subresource: c.subresource, namespace: c.namespace, name: c.name, path: '' }),
  );
  def(env, 'PathCheck.check(string): Decision', (c: PathCheck, verb: string) =>
    decide(c.authz, { verb, resourceRequest: false, apiGroup: '', resource: '', subresource: '', namespace: '', name: '', path: c.path }),
  );
  def(env, 'Decision.allowed(): bool', (d: AuthzDecision) => d.allowed);
  def(env, 'Decision.reason(): string', (d: AuthzDecision) => d.reason);
  def(env, 'Decision.errored(): bool', (d: AuthzDecision) => d.error !== '');
  def(env, 'Decision.error(): string', (d: AuthzDecision) => d.error);
}
