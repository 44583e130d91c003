// The ABAC authorization mode (kube's pkg/auth/authorizer/abac): --authorization-policy-file
// holds one Policy per line (abac.authorization.kubernetes.io/v1beta1, or the unversioned v0
// form), blank lines and # comments skipped. A request is allowed when some policy matches its
// subject (user and/or group, "*" for any), its verb (readonly: get, list, watch only) and
// its resource (apiGroup, resource, namespace, each "*" or equal) or its path
// (nonResourcePath, "*", equal, or a prefix ending in "*"); otherwise no opinion.
// Loaded once at start, as kube does. Stateless after loading.
import { readFileSync } from 'node:fs';
import { registerAuthorizerMode, type AuthorizerMode, type AuthorizerResult } from '../authorizer.js';
import type { AuthorizationAttributes, Rules } from '../attributes.js';
import type { UserInfo } from '../user.js';

export interface AbacPolicy {
  user: string;
  group: string;
  readonly: boolean;
  apiGroup: string;
  resource: string;
  namespace: string;
  nonResourcePath: string;
}

const V1BETA1 = 'abac.authorization.kubernetes.io/v1beta1';
const V0 = 'abac.authorization.kubernetes.io/v0';

function str(x: unknown): string {
  return typeof x === 'string' ? x : '';
}

/** One line's Policy; v0 (no apiVersion, or v0) widens its empty fields to "*" as kube's conversion does. */
function policyOf(obj: any): AbacPolicy {
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new Error('not a Policy object');
  const apiVersion = str(obj.apiVersion);
  if (apiVersion === V1BETA1) {
    if (obj.kind !== 'Policy') throw new Error(`no kind "${str(obj.kind)}" is registered for version "${V1BETA1}"`);
    const s = obj.spec ?? {};
    return { user: str(s.user), group: str(s.group), readonly: s.readonly === true, apiGroup: str(s.apiGroup), resource: str(s.resource), namespace: str(s.namespace), nonResourcePath: str(s.nonResourcePath) };
  }
  if (apiVersion === '' || apiVersion === V0) {
    // v0: an empty subject is everyone; empty resource and namespace are all; any group and path
    const user = str(obj.user);
    const group = str(obj.group);
    return {
      user: user === '' && group === '' ? '*' : user,
      group,
      readonly: obj.readonly === true,
      apiGroup: '*',
      resource: str(obj.resource) || '*',
      namespace: str(obj.namespace) || '*',
      nonResourcePath: '*',
    };
  }
  throw new Error(`no kind "${str(obj.kind)}" is registered for version "${apiVersion}"`);
}

export function parsePolicies(text: string, source = 'policy file'): AbacPolicy[] {
  const out: AbacPolicy[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    try {
      out.push(policyOf(JSON.parse(line)));
    } catch (e: any) {
      throw new Error(`error reading policy file ${source}, line ${i + 1}: ${line}: ${e?.message ?? e}`);
    }
  });
  return out;
}

function subjectMatches(p: AbacPolicy, u: UserInfo | undefined): boolean {
  if (!u) return false;
  let matched = false;
  if (p.user) {
    if (p.user !== '*' && p.user !== u.name) return false;
    matched = true;
  }
  if (p.group) {
    if (p.group !== '*' && !u.groups.includes(p.group)) return false;
    matched = true;
  }
  return matched;
}

const readOnlyVerb = (v: string) => v === 'get' || v === 'list' || v === 'watch';
const field = (want: string, got: string) => want === '*' || want === got;

export function policyMatches(p: AbacPolicy, a: AuthorizationAttributes): boolean {
  if (!subjectMatches(p, a.user)) return false;
  if (p.readonly && !readOnlyVerb(a.verb)) return false;
  if (a.resourceRequest) return field(p.namespace, a.namespace) && field(p.resource, a.resource) && field(p.apiGroup, a.apiGroup);
  const np = p.nonResourcePath;
  if (np === '*' || np === a.path) return true;
  return np.endsWith('*') && a.path.startsWith(np.replace(/\*+$/, ''));
}

export class AbacAuthorizer implements AuthorizerMode {
  readonly name = 'ABAC';
  constructor(readonly policies: AbacPolicy[]) {}

  static fromFile(path: string): AbacAuthorizer {
    return new AbacAuthorizer(parsePolicies(readFileSync(path, 'utf8'), path));
  }

  authorize(a: AuthorizationAttributes): AuthorizerResult {
    for (const p of this.policies) if (policyMatches(p, a)) return { decision: 'Allow', reason: '' };
    return { decision: 'NoOpinion', reason: 'No policy matched.' };
  }

  /** kube's ABAC RulesFor: the rules of the policies whose subject is the user */
  rulesFor(user: UserInfo, namespace: string): Rules {
    const out: Rules = { resourceRules: [], nonResourceRules: [], incomplete: false };
    for (const p of this.policies) {
      if (!subjectMatches(p, user)) continue;
      const verbs = p.readonly ? ['get', 'list', 'watch'] : ['*'];
      if (p.namespace === '*' || p.namespace === namespace) {
        if (p.resource) out.resourceRules.push({ verbs, apiGroups: [p.apiGroup], resources: [p.resource] });
      }
      if (p.nonResourcePath) out.nonResourceRules.push({ verbs, nonResourceURLs: [p.nonResourcePath] });
    }
    return out;
  }
}

registerAuthorizerMode('ABAC', (ctx) => AbacAuthorizer.fromFile(ctx.options.authorizationPolicyFile));
