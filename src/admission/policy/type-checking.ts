// kube's ValidatingAdmissionPolicy type checking (apiserver/pkg/admission/plugin/policy/
// validating/typechecking.go): the kinds a policy's matchConstraints name exactly (no
// wildcard group, version or resource; no subresource) are resolved, `object`/`oldObject`
// (and `params`, from paramKind) typed from their schemas, and each validation's expression and
// messageExpression compiled against each kind. What does not compile becomes a warning in
// status.typeChecking.expressionWarnings ("<group>/<version>, Kind=<kind>: <issues>"); the
// policy's behaviour does not change.
//
// Where we differ: variables are dynamically typed here (kube types them from their own
// expressions), and date-time fields are dynamically typed (kube types them as timestamps).
import type { Environment } from '@marcbachmann/cel-js';
import { typeCheck } from '../../cel/environment.js';
import { admissionVariables } from '../../cel/admission.js';
import { catalogData } from '../../api/catalog-data.js';
import { definitionOf } from '../../api/schema.js';
import { Declarer } from '../../cel/schema-types.js';
import { customSchemaOf } from '../../api/custom-resources.js';
import type { ObjectSource } from '../plugin.js';

const MAX_TYPES_TO_CHECK = 10; // kube's maxTypesToCheck

export interface ExpressionWarning {
  fieldRef: string;
  warning: string;
}

type GVK = [string, string, string];
const gvkString = ([g, v, k]: GVK) => `${g}/${v}, Kind=${k}`;

/** kube's RESTMapper.KindsFor over the built-in catalog and the stored CRDs. */
function kindFor(objects: ObjectSource, group: string, version: string, resource: string): string | undefined {
  for (const gv of catalogData as any[]) {
    if ((gv.group ?? '') !== group || gv.version !== version) continue;
    const r = (gv.resources ?? []).find((x: any) => x.resource === resource || x.name === resource);
    if (r) return r.kind;
  }
  for (const crd of objects.list('customresourcedefinitions.apiextensions.k8s.io', '')) {
    if (crd.spec?.group === group && crd.spec?.names?.plural === resource && (crd.spec?.versions ?? []).some((v: any) => v.name === version && v.served)) {
      return crd.spec.names.kind;
    }
  }
  return undefined;
}

/** typesToCheck: the exact kinds, sorted by group, version, kind. */
function typesToCheck(policy: any, objects: ObjectSource): GVK[] {
  const out = new Map<string, GVK>();
  for (const rule of policy.spec?.matchConstraints?.resourceRules ?? []) {
    const groups: string[] = rule.apiGroups ?? [];
    const versions: string[] = rule.apiVersions ?? [];
    const resources = (rule.resources ?? []).filter((r: string) => !/[*/]/.test(r));
    if (!groups.length || groups.some((g) => g.includes('*')) || !versions.length || versions.some((v) => v.includes('*')) || !resources.length) continue;
    for (const g of [...groups].sort())
      for (const v of [...versions].sort())
        for (const r of [...resources].sort()) {
          const k = kindFor(objects, g, v, r);
          if (k) out.set(`${g}/${v}/${k}`, [g, v, k]);
          if (out.size >= MAX_TYPES_TO_CHECK) break;
        }
  }
  return [...out.values()].sort((a, b) => (a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] !== b[1] ? (a[1] < b[1] ? -1 : 1) : a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0));
}

/** The engine type of a kind's object, declared into env (undefined: no schema known). */
function declareKind(env: Environment, prefix: string, [g, v, k]: GVK): string | undefined {
  const d = new Declarer(env, prefix);
  const def = definitionOf(g, v, k);
  if (def) return d.builtin(def);
  const custom = customSchemaOf(g, v, k);
  if (custom?.schema) return d.custom(custom.schema, 'root');
  return undefined;
}

function paramsGVK(policy: any): GVK | undefined {
  const pk = policy.spec?.paramKind;
  if (!pk?.apiVersion || !pk?.kind) return undefined;
  const [g, v] = pk.apiVersion.includes('/') ? pk.apiVersion.split('/') : ['', pk.apiVersion];
  return [g, v, pk.kind];
}

/** kube's TypeChecker.Check: the warnings for status.typeChecking (empty when all compile). */
export function typeCheckPolicy(policy: any, objects: ObjectSource): ExpressionWarning[] {
  const gvks = typesToCheck(policy, objects);
  if (!gvks.length) return [];
  const pg = paramsGVK(policy);
  const hasParams = !!policy.spec?.paramKind;
  const warnings: ExpressionWarning[] = [];
  const check = (expression: string): string => {
    const out: string[] = [];
    for (const gvk of gvks) {
      const key = `vap-typecheck|${gvk.join('/')}|${pg?.join('/') ?? ''}|${policy.metadata?.uid ?? ''}|${policy.metadata?.generation ?? ''}`;
      const issues = typeCheck(expression, key, (env) => {
        const objType = declareKind(env, 'O', gvk) ?? 'dyn';
        const paramType = hasParams ? ((pg && declareKind(env, 'P', pg)) ?? 'dyn') : undefined;
        const vars = admissionVariables({ params: hasParams, authorizer: true, variables: true });
        for (const [name, type] of Object.entries(vars)) {
          env.registerVariable(name, name === 'object' || name === 'oldObject' ? objType : name === 'params' ? paramType! : type);
        }
      });
      if (issues) out.push(`${gvkString(gvk)}: ${issues}\n`);
    }
    return out.join('\n');
  };
  (policy.spec?.validations ?? []).forEach((v: any, i: number) => {
    if (typeof v?.expression === 'string') {
      const w = check(v.expression);
      if (w) warnings.push({ fieldRef: `spec.validations[${i}].expression`, warning: w });
    }
    if (typeof v?.messageExpression === 'string' && v.messageExpression) {
      const w = check(v.messageExpression);
      if (w) warnings.push({ fieldRef: `spec.validations[${i}].messageExpression`, warning: w });
    }
  });
  return warnings;
}
