// YAML request bodies, read as kube-apiserver reads them (sigs.k8s.io/yaml on go-yaml v2).
// Thread ownership: none (pure functions, plus a WeakMap keyed by the decoded objects);
// runs on the front thread, and in workers/yaml/yaml-worker.ts for large bodies
// (yaml-offload.ts), so it imports nothing heavier than the yaml library.
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node as YamlNode } from 'yaml';
import { takeOffloaded } from './yaml-offload.js';

// YAML bodies are read as kube-apiserver reads them (sigs.k8s.io/yaml on go-yaml v2):
// YAML 1.1 scalars (yes/no/on/off/y/n are booleans, 0777 is octal), but timestamps and
// 1:20 sexagesimals stay strings (go-yaml v2 keeps a timestamp-looking plain scalar a
// string, and has no base-60 numbers). A key given twice is not a parse error: the last
// value wins, and the duplicate is reported by field validation (Strict 400, Warn warning,
// Ignore nothing) in go-yaml's strict wording, `line N: key "k" already set in map`.
const YAML_OPTIONS = {
  version: '1.1' as const,
  uniqueKeys: false,
  merge: true,
  customTags: (tags: any[]) => tags.filter((t) => t.tag !== 'tag:yaml.org,2002:timestamp' && t.format !== 'TIME'),
};

/** Duplicate-key messages (possibly none) of each YAML body parseYaml11 decoded, by decoded object (read by field validation). */
const yamlDuplicates = new WeakMap<object, string[]>();

/** go-yaml v2's strict messages for the keys a YAML body repeats in one mapping, e.g. `line 7: key "replicas" already set in map`. */
export function yamlDuplicatesOf(obj: unknown): string[] | undefined {
  return obj !== null && typeof obj === 'object' ? yamlDuplicates.get(obj) : undefined;
}

/**
 * Parses one YAML document the way kube-apiserver does (YAML 1.1, duplicate keys allowed,
 * the last one winning); the duplicates are remembered for yamlDuplicatesOf. Throws the
 * parser's error on malformed YAML.
 */
export function parseYaml11(text: string): unknown {
  // a large body was parsed on a worker thread already (yaml-offload.ts)
  const done = takeOffloaded(text);
  if (done) {
    if ('error' in done) throw new Error(done.error);
    rememberYamlDuplicates(done.value, done.dups);
    return done.value;
  }
  return parseYaml11Here(text);
}

/** Records a decoded YAML body's duplicate-key messages (for one parsed elsewhere). */
export function rememberYamlDuplicates(obj: unknown, dups: string[]): void {
  if (obj !== null && typeof obj === 'object') yamlDuplicates.set(obj, dups);
}

/** parseYaml11 on this thread. */
export function parseYaml11Here(text: string): unknown {
  const lines = new LineCounter();
  const doc = parseDocument(text, { ...YAML_OPTIONS, lineCounter: lines });
  if (doc.errors.length) throw doc.errors[0];
  const dups: string[] = [];
  const walk = (n: unknown): void => {
    if (isMap(n)) {
      const seen = new Set<string>();
      for (const pair of n.items) {
        const k = pair.key as YamlNode | null;
        const v = isScalar(k) ? k.value : k;
        // go-yaml compares resolved keys: yes and true are one key.
        const id = `${typeof v}:${String(v)}`;
        if (seen.has(id)) {
          const line = k?.range ? lines.linePos(k.range[0]).line : 0;
          // Go's %#v of the key: a quoted string, a bare number or bool.
          dups.push(`line ${line}: key ${typeof v === 'string' ? JSON.stringify(v) : String(v)} already set in map`);
        }
        seen.add(id);
        walk(pair.value);
      }
    } else if (isSeq(n)) for (const x of n.items) walk(x);
  };
  walk(doc.contents);
  // go-yaml v2 expands aliases and gives up on a document that is mostly alias expansion
  // (the billion-laughs guard), so do we, before building anything: the yaml library
  // shares an alias's value, but converts a merge key's source again for every map that
  // merges it, so nested merges (`m2: {<<: [*m1, *m1]}`, ...) cost exponential time.
  if (excessiveAliasing(doc)) throw new Error('yaml: document contains excessive aliasing');
  const out = doc.toJS({ maxAliasCount: -1 });
  if (out !== null && typeof out === 'object') yamlDuplicates.set(out, dups);
  return out;
}

/** go-yaml v2's share of a document's decoded nodes that may come from alias expansion. */
function allowedAliasRatio(decodeCount: number): number {
  if (decodeCount <= 400_000) return 0.99;
  if (decodeCount >= 4_000_000) return 0.1;
  return 0.99 - 0.89 * ((decodeCount - 400_000) / 3_600_000);
}

/**
 * How many nodes may come from expanding merge keys (`<<: *a`), which the yaml library
 * converts anew each time. go-yaml's ratio rule alone lets a linear chain of a few hundred
 * merges through, which takes the yaml library seconds; real documents merge a few small maps.
 */
export const MAX_YAML_MERGED_NODES = 5000;

/**
 * Walks the document's nodes as go-yaml v2 decodes them (an alias expanded again each time
 * it is met, merge sources included) and applies go-yaml's excessive-aliasing rule to the
 * counts, plus MAX_YAML_MERGED_NODES; stops as soon as either trips, so a bomb costs little.
 * Iterative, so that deep documents cannot overflow the stack here.
 */
function excessiveAliasing(doc: Document): boolean {
  // Anchors by name, in document order (the yaml library's Alias.resolve searches the whole
  // document on every call): an alias names the last one defined before it.
  const anchors = new Map<string, Array<[number, unknown]>>();
  const scan: unknown[] = [doc.contents];
  while (scan.length) {
    const n = scan.pop() as any;
    if (n === null || typeof n !== 'object') continue;
    if (typeof n.anchor === 'string' && !isAlias(n)) {
      let list = anchors.get(n.anchor);
      if (!list) anchors.set(n.anchor, (list = []));
      list.push([n.range?.[0] ?? 0, n]);
    }
    if (isMap(n)) for (const pair of n.items) scan.push(pair.key, pair.value);
    else if (isSeq(n)) scan.push(...n.items);
  }
  for (const list of anchors.values()) list.sort((a, b) => a[0] - b[0]);
  const resolve = (a: { source: string; range?: [number, number, number] | null }): unknown => {
    const list = anchors.get(a.source);
    if (!list) return undefined;
    const at = a.range?.[0] ?? Infinity;
    // the last anchor before the alias (binary search: one name may be anchored many times)
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid][0] < at) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 ? list[lo - 1][1] : undefined;
  };
  // node, reached through an alias, reached through a merge key
  const stack: Array<[unknown, boolean, boolean]> = [[doc.contents, false, false]];
  let decoded = 0;
  let aliased = 0;
  let merged = 0;
  while (stack.length) {
    const [n, inAlias, inMerge] = stack.pop()!;
    if (n === null || n === undefined) continue;
    decoded++;
    if (inAlias) aliased++;
    if (inMerge && ++merged > MAX_YAML_MERGED_NODES) return true;
    if (aliased > 100 && decoded > 1000 && aliased / decoded > allowedAliasRatio(decoded)) return true;
    if (isAlias(n)) {
      const target = resolve(n);
      if (target) stack.push([target, true, inMerge]);
    } else if (isMap(n)) {
      for (const pair of n.items) {
        const k = pair.key;
        const isMergeKey = isScalar(k) && (typeof k.value === 'symbol' || k.value === '<<');
        stack.push([k, inAlias, inMerge]);
        stack.push([pair.value, inAlias, inMerge || isMergeKey]);
      }
    } else if (isSeq(n)) for (const x of n.items) stack.push([x, inAlias, inMerge]);
  }
  return false;
}
