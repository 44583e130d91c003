// YAML request bodies, read as kube-apiserver reads them (sigs.k8s.io/yaml on go-yaml v2).
// Thread ownership: none (pure functions, plus a WeakMap keyed by the decoded objects);
// runs on the front thread, and in workers/yaml/yaml-worker.ts for large bodies
// (yaml-offload.ts), so it imports nothing heavier than the yaml library.
import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Alias, type Document, type Node as YamlNode } from 'yaml';
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

/**
 * The deepest YAML document parseYaml11 parses. go-yaml stops at 10,000 levels; the yaml
 * library recurses per level and overflows the stack near 2,000 (a flow document 5,000 deep
 * took the process down, out of memory while reporting the overflow), and no object the
 * engines take nests past 1,000 (MAX_PATCH_DEPTH) anyway.
 */
export const MAX_YAML_DEPTH = 1000;

/**
 * Whether a YAML text nests deeper than max, over-estimated in one pass without parsing:
 * block levels (a stack of indentation widths, and each `- ` opening a line) plus flow
 * levels (`{` and `[` where a value starts, outside quoted scalars and comments). A bracket
 * inside a plain scalar (`a: b{c`) does not count: it follows no value indicator.
 */
export function yamlNestsDeeperThan(text: string, max: number): boolean {
  // Nesting deeper than max takes more characters than a text this short holds.
  if (text.length <= max) return false;
  const indents: number[] = [];
  let flow = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    // a line: its indentation, then its `- ` sequence entries, then its content
    let indent = 0;
    while (i < n && text.charCodeAt(i) === 32) {
      i++;
      indent++;
    }
    const c0 = text[i];
    if (flow === 0 && c0 !== '\n' && c0 !== '\r' && c0 !== '#' && c0 !== undefined) {
      while (indents.length > 0 && indents[indents.length - 1] >= indent) indents.pop();
      indents.push(indent);
    }
    let dashes = 0;
    while (i + 1 < n && text[i] === '-' && (text[i + 1] === ' ' || text[i + 1] === '\t')) {
      dashes++;
      i += 2;
      while (i < n && text[i] === ' ') i++;
    }
    if (indents.length + dashes + flow > max) return true;
    // the rest of the line
    let prev = '\n'; // the last non-blank character: a bracket after a value indicator opens a level
    while (i < n && text[i] !== '\n') {
      const c = text[i];
      if (c === '"' || c === "'") {
        // a quoted scalar (it may span lines): skipped whole
        i++;
        while (i < n && text[i] !== c) {
          if (c === '"' && text[i] === '\\') i++;
          else if (c === "'" && text[i] === "'" && text[i + 1] === "'") i++;
          i++;
        }
        i++;
        prev = c;
        continue;
      }
      if (c === '#' && (prev === '\n' || text[i - 1] === ' ' || text[i - 1] === '\t')) {
        while (i < n && text[i] !== '\n') i++;
        break;
      }
      if (c === '{' || c === '[') {
        // (a bracket inside a plain scalar opens nothing, nor makes the next one an opener)
        if (prev === '\n' || prev === ':' || prev === ',' || prev === '{' || prev === '[' || prev === '-' || prev === '?') {
          flow++;
          if (indents.length + dashes + flow > max) return true;
          prev = c;
        } else prev = 'x';
      } else if (c === '}' || c === ']') {
        if (flow > 0) flow--;
        prev = c;
      } else if (c !== ' ' && c !== '\t' && c !== '\r') prev = c;
      i++;
    }
    i++;
  }
  return false;
}

/** parseYaml11 on this thread. */
export function parseYaml11Here(text: string): unknown {
  if (yamlNestsDeeperThan(text, MAX_YAML_DEPTH)) throw new Error(`yaml: exceeded max depth of ${MAX_YAML_DEPTH}`);
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
  resolveAliases(doc);
  const out = doc.toJS({ maxAliasCount: -1 });
  rememberYamlDuplicates(out, dups);
  return out;
}

type Slot = (n: unknown) => void;

/**
 * Aliases resolved in one pass, before the yaml library's toJS sees them. Left to it, each
 * alias scans the document's anchors and aliases up to itself (quadratic: 40,000 aliases took
 * 10 s), and each merge key (`<<: *big`) converts its source again, uncounted (5,000 merges of
 * a 5,000-key map took 19 s). Here an alias is looked up in a map of the anchors seen so
 * far, in document order (the last one before it wins, as YAML says); go-yaml v2's budget is
 * applied to the expansion (merges included), stopping as soon as it trips; and only then
 * is each alias replaced in its parent by its anchored node, which toJS then converts at
 * each place, as go-yaml expands it: within the budget, so in bounded time.
 */
function resolveAliases(doc: Document): void {
  const anchors = new Map<string, YamlNode>();
  const targets = new Map<Alias, YamlNode>();
  const slots: Array<[Alias, Slot]> = [];
  const stack: Array<[unknown, Slot]> = [[doc.contents, (n) => (doc.contents = n as any)]];
  while (stack.length) {
    const [n, set] = stack.pop()!;
    if (isAlias(n)) {
      const t = anchors.get(n.source);
      // An alias without an anchor before it stays, for toJS's own error.
      if (t) {
        targets.set(n, t);
        slots.push([n, set]);
      }
      continue;
    }
    const anchor = (n as { anchor?: string } | null)?.anchor;
    if (anchor) anchors.set(anchor, n as YamlNode);
    // Children pushed last first, so they come off the stack in document order.
    if (isMap(n)) {
      for (let i = n.items.length - 1; i >= 0; i--) {
        const pair = n.items[i];
        stack.push([pair.value, (v) => (pair.value = v as any)]);
        stack.push([pair.key, (k) => (pair.key = k as any)]);
      }
    } else if (isSeq(n)) {
      for (let i = n.items.length - 1; i >= 0; i--) stack.push([n.items[i], (v) => (n.items[i] = v)]);
    }
  }
  if (targets.size === 0) return;
  if (excessiveAliasing(doc.contents, targets)) throw new Error('yaml: document contains excessive aliasing');
  for (const [alias, set] of slots) set(targets.get(alias));
}

/** go-yaml v2's share of a document's decoded nodes that may come from alias expansion. */
function allowedAliasRatio(decodeCount: number): number {
  if (decodeCount <= 400_000) return 0.99;
  if (decodeCount >= 4_000_000) return 0.1;
  return 0.99 - 0.89 * ((decodeCount - 400_000) / 3_600_000);
}

/**
 * Walks the document's nodes as go-yaml v2 decodes them (an alias, and a merge key's
 * source, expanded again at each use) and applies its excessive-aliasing rule; stops as soon
 * as the rule trips, so a bomb (or an anchor that contains its own alias) costs little. A
 * document the rule lets through expands to at most about 4M nodes or 1.1 times its own.
 */
function excessiveAliasing(root: unknown, targets: Map<Alias, YamlNode>): boolean {
  const stack: [unknown, boolean][] = [[root, false]];
  let decoded = 0;
  let aliased = 0;
  while (stack.length) {
    const [n, inAlias] = stack.pop()!;
    if (n === null || n === undefined) continue;
    decoded++;
    if (inAlias) aliased++;
    if (aliased > 100 && decoded > 1000 && aliased / decoded > allowedAliasRatio(decoded)) return true;
    if (isAlias(n)) {
      const t = targets.get(n);
      if (t) stack.push([t, true]);
    } else if (isMap(n)) {
      for (const pair of n.items) {
        if (!isPair(pair)) continue;
        stack.push([pair.value, inAlias]);
        stack.push([pair.key, inAlias]);
      }
    } else if (isSeq(n)) {
      for (const x of n.items) stack.push([x, inAlias]);
    }
  }
  return false;
}
