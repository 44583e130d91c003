// kube's regex library (apiserver/pkg/cel/library/regex.go: find, findAll) and CEL's
// standard matches(), all on re2js: RE2 semantics and linear-time matching, never the
// backtracking JS RegExp on a user's pattern. Compiled patterns are kept (kube precompiles
// constant patterns; we keep the last few hundred of any kind).
//
// Thread ownership: the front thread (the compiled-pattern cache).
import type { Environment } from '@marcbachmann/cel-js';
import { RE2JS } from 're2js';
import { charge, sizeCost } from '../cost.js';
import { def, fail } from './def.js';

const compiled = new Map<string, RE2JS>();

export function re2(pattern: string): RE2JS {
  let re = compiled.get(pattern);
  if (re) return re;
  try {
    re = RE2JS.compile(pattern);
  } catch (e: any) {
    fail(`given regex is invalid: ${e?.message ?? e}`);
  }
  if (compiled.size >= 500) compiled.clear();
  compiled.set(pattern, re);
  return re;
}

/** The engine's own matches() uses JS RegExp; each call to it is renamed to ours at compile time. */
const MATCHES = 'matchesRE2';

export function registerRegex(env: Environment): void {
  def(env, `string.${MATCHES}(string): bool`, (s: string, p: string) => {
    charge(sizeCost(s.length) + sizeCost(p.length));
    return re2(p).matcher(s).find();
  });
  def(env, `${MATCHES}(string, string): bool`, (s: string, p: string) => {
    charge(sizeCost(s.length) + sizeCost(p.length));
    return re2(p).matcher(s).find();
  });
  def(env, 'string.find(string): string', (s: string, p: string) => {
    charge(sizeCost(s.length) + sizeCost(p.length));
    const m = re2(p).matcher(s);
    return m.find() ? (m.group() ?? '') : '';
  });
  def(env, 'string.findAll(string): list<string>', (s: string, p: string) => findAll(s, p, -1n));
  def(env, 'string.findAll(string, int): list<string>', (s: string, p: string, n: bigint) => findAll(s, p, n));
}

function findAll(s: string, p: string, n: bigint): string[] {
  charge(sizeCost(s.length) + sizeCost(p.length));
  const out: string[] = [];
  if (n === 0n) return out;
  const m = re2(p).matcher(s);
  while (m.find()) {
    out.push(m.group() ?? '');
    if (n > 0n && BigInt(out.length) >= n) break;
  }
  return out;
}

/** Renames matches() calls in a parsed expression to the RE2 implementation (before type checking). */
export function rewriteMatches(node: any): void {
  if (!node || typeof node !== 'object') return;
  if ((node.op === 'rcall' || node.op === 'call') && node.args?.[0] === 'matches') node.args[0] = MATCHES;
  const a = node.args;
  if (Array.isArray(a)) {
    for (const x of a) {
      if (Array.isArray(x)) for (const y of x) rewriteMatches(Array.isArray(y) ? null : y);
      else rewriteMatches(x);
    }
    if (node.op === 'map') for (const pair of a) if (Array.isArray(pair)) pair.forEach(rewriteMatches);
  } else if (a && typeof a === 'object') {
    if (a.op) rewriteMatches(a);
    else for (const v of Object.values(a)) rewriteMatches(v);
  }
}
