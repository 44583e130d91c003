// CEL for JWT authenticators (kube's apiserver/pkg/authentication/cel): claim validation
// rules, claim mappings and extra values see `claims` (the token's payload); user
// validation rules see `user` (username, uid, groups, extra). Programs compile once, when
// the configuration loads, and a compile error refuses the configuration.
//
// Thread ownership: the front thread (the CEL compile cache and cost meter live there).
import { compile, type Program, CelEvalError } from '../../cel/environment.js';
import { toCel, fromCel } from '../../cel/values.js';

export const CLAIMS_VARS = { claims: 'map<string, dyn>' };
export const USER_VARS = { user: 'map<string, dyn>' };

/** Compiles an expression, or returns kube's compile error detail. */
export function compileClaimsExpression(expression: string, vars: Record<string, string>): { program?: Program; error?: string } {
  const r = compile(expression, vars);
  return r.program ? { program: r.program } : { error: r.error };
}

/** Runs a program; throws Error with kube's "expression '...' resulted in error: ..." on failure. */
export function evalExpression(p: Program, activation: Record<string, any>): any {
  try {
    return p.eval(activation).value;
  } catch (e) {
    if (e instanceof CelEvalError) throw new Error(`expression '${p.expression}' resulted in error: ${e.message}`);
    throw e;
  }
}

export function claimsActivation(claims: Record<string, unknown>): Record<string, any> {
  return { claims: toCel(claims) };
}

export function userActivation(u: { name: string; uid: string; groups: string[]; extra?: Record<string, string[]> }): Record<string, any> {
  return { user: toCel({ username: u.name, uid: u.uid, groups: u.groups, extra: u.extra ?? {} }) };
}

/** kube's convertCELValueToStringList: a string or a list of strings; empty ones dropped. */
export function toStringList(v: any): string[] | undefined {
  const j = fromCel(v);
  if (j === null || j === undefined) return undefined;
  if (typeof j === 'string') return j === '' ? undefined : [j];
  if (Array.isArray(j)) {
    const out: string[] = [];
    for (const x of j) {
      if (typeof x !== 'string') throw new Error('expression must return a string or a list of strings');
      if (x !== '') out.push(x);
    }
    return out.length ? out : undefined;
  }
  throw new Error('expression must return a string or a list of strings');
}
