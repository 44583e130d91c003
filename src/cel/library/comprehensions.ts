// cel-go's two-variable comprehensions (ext.TwoVarComprehensions, in kube's base environment
// since 1.32): all(i, v, p), exists(i, v, p), existsOne(i, v, p), transformList(i, v, [filter,]
// expr), transformMap(k, v, [filter,] expr), transformMapEntry(k, v, expr), over a list (index,
// element) or a map (key, value). Written as the engine's macros: the iteration variables are
// bound in two nested scopes, the body runs through the evaluator (so it is metered).
import type { Environment } from '@marcbachmann/cel-js';
import { fail } from './def.js';

function ident(node: any, what: string): string {
  if (node?.op !== 'id') fail(`${what}: iteration variable must be an identifier`);
  return node.args;
}

function entries(coll: unknown): Array<[unknown, unknown]> {
  if (Array.isArray(coll)) return coll.map((v, i) => [BigInt(i), v]);
  if (coll instanceof Map) return [...coll];
  if (coll && typeof coll === 'object') return Object.entries(coll);
  return fail('comprehension range must be a list or a map');
}

type Kind = 'all' | 'exists' | 'existsOne' | 'transformList' | 'transformMap' | 'transformMapEntry';

function macro(kind: Kind, withFilter: boolean) {
  return ({ args, receiver }: { args: any[]; receiver: any }) => {
    const iVar = ident(args[0], kind);
    const vVar = ident(args[1], kind);
    const filter = withFilter ? args[2] : undefined;
    const body = withFilter ? args[3] : args[2];
    const m: any = {
      async: false,
      typeCheck(chk: any, mm: any, ctx: any) {
        chk.check(receiver, ctx);
        const dyn = chk.getType('dyn');
        mm.c1 = ctx.forkWithVariable(iVar, dyn);
        mm.c2 = mm.c1.forkWithVariable(vVar, dyn);
        if (filter) chk.check(filter, mm.c2);
        chk.check(body, mm.c2);
        if (kind === 'transformList') return chk.getType('list');
        if (kind === 'transformMap' || kind === 'transformMapEntry') return chk.getType('map');
        return chk.getType('bool');
      },
      evaluate(ev: any, mm: any, ctx: any) {
        const coll = ev.run(receiver, ctx);
        const c1 = mm.c1.reuse(ctx);
        const c2 = mm.c2.reuse(c1);
        const run = (k: unknown, v: unknown, node: any) => {
          c1.setIterValue(k, ev);
          c2.setIterValue(v, ev);
          return ev.run(node, c2);
        };
        let err: unknown;
        switch (kind) {
          case 'all':
          case 'exists': {
            const want = kind === 'exists';
            for (const [k, v] of entries(coll)) {
              try {
                if (run(k, v, body) === want) return want;
              } catch (e) {
                err ??= e; // CEL's logical and/or: a decisive element wins over an error
              }
            }
            if (err) throw err;
            return !want;
          }
          case 'existsOne': {
            let n = 0;
            for (const [k, v] of entries(coll)) if (run(k, v, body) === true) n++;
            return n === 1;
          }
          case 'transformList': {
            const out: unknown[] = [];
            for (const [k, v] of entries(coll)) if (!filter || run(k, v, filter) === true) out.push(run(k, v, body));
            return out;
          }
          case 'transformMap': {
            const out = new Map<unknown, unknown>();
            for (const [k, v] of entries(coll)) if (!filter || run(k, v, filter) === true) out.set(k, run(k, v, body));
            return out;
          }
          case 'transformMapEntry': {
            const out = new Map<unknown, unknown>();
            for (const [k, v] of entries(coll)) {
              const e = run(k, v, body);
              for (const [ek, evv] of entries(e)) {
                if (out.has(ek)) fail(`insert failed: key ${String(ek)} already exists`);
                out.set(ek, evv);
              }
            }
            return out;
          }
        }
      },
    };
    return m;
  };
}

export function registerComprehensions(env: Environment): void {
  for (const recv of ['list', 'map']) {
    env.registerFunction(`${recv}.all(ast, ast, ast): bool`, macro('all', false) as any);
    env.registerFunction(`${recv}.exists(ast, ast, ast): bool`, macro('exists', false) as any);
    env.registerFunction(`${recv}.existsOne(ast, ast, ast): bool`, macro('existsOne', false) as any);
    env.registerFunction(`${recv}.transformList(ast, ast, ast): list`, macro('transformList', false) as any);
    env.registerFunction(`${recv}.transformList(ast, ast, ast, ast): list`, macro('transformList', true) as any);
    env.registerFunction(`${recv}.transformMap(ast, ast, ast): map`, macro('transformMap', false) as any);
    env.registerFunction(`${recv}.transformMap(ast, ast, ast, ast): map`, macro('transformMap', true) as any);
    env.registerFunction(`${recv}.transformMapEntry(ast, ast, ast): map`, macro('transformMapEntry', false) as any);
  }
}
