// The pods of each node (kube's spec.nodeName pod indexer), kept from the pods cache by
// the controllers that work per node (node lifecycle, taint eviction). Each pod event
// costs O(1): the node name is read from the entry's selectable fields, which the cache
// layer has at commit; an entry loaded at start-up is parsed once for them, its parse not
// kept.
//
// Thread ownership: the main thread (leader controllers), fed by Cacher.observe.
import type { CacheEntry, WatchEvent } from '../../workers/watch/watch-cache.js';
import { selectableFields } from '../request/field-labels.js';

/** The pod's selectable fields (spec.nodeName, status.phase, ...), without keeping a parse of the object on the entry. */
export function podFields(e: CacheEntry): Record<string, string> {
  if (e.sel) return e.sel.fields;
  const obj = e.obj ?? JSON.parse(e.json.toString('utf8'));
  e.sel = { labels: obj?.metadata?.labels, fields: selectableFields('pods', obj) };
  return e.sel.fields;
}

/** The pod's spec.nodeName ('' when unbound). */
export function podNodeName(e: CacheEntry): string {
  return podFields(e)['spec.nodeName'] ?? '';
}

/** The entry's object: the cache's memoized parse when there is one, else a parse not kept. */
export function peekObject(e: CacheEntry): any {
  return e.obj ?? JSON.parse(e.json.toString('utf8'));
}

export class PodsByNode {
  private byNode = new Map<string, Set<string>>();
  private nodeOf = new Map<string, string>();

  /** Indexes one pod as it is in the cache (a start-up load). */
  add(e: CacheEntry): void {
    this.set(e.key, podNodeName(e));
  }

  /** Applies one event; answers the pod's node before and after (either may be ''). */
  apply(ev: WatchEvent): { before: string; after: string } {
    const before = this.nodeOf.get(ev.entry.key) ?? '';
    const after = ev.type === 'DELETED' ? '' : podNodeName(ev.entry);
    if (before !== after) this.set(ev.entry.key, after);
    return { before, after };
  }

  /** keys ("namespace/name") of the pods bound to node */
  podsOn(node: string): string[] {
    const s = this.byNode.get(node);
    return s ? [...s] : [];
  }

  private set(key: string, node: string): void {
    const was = this.nodeOf.get(key);
    if (was) {
      const s = this.byNode.get(was);
      s?.delete(key);
      if (s && s.size === 0) this.byNode.delete(was);
    }
    if (!node) {
      this.nodeOf.delete(key);
      return;
    }
    this.nodeOf.set(key, node);
    let s = this.byNode.get(node);
    if (!s) this.byNode.set(node, (s = new Set()));
    s.add(key);
  }
}

/** How long one slice of a start-up load holds the thread. */
const SLICE_MS = 5;

/**
 * Runs fn over a cache's entries in slices of a few ms, one per turn of the event loop (as
 * the garbage collector's start-up does), then done(): a leader's start does not hold the
 * thread for the whole of a large cache. The iterator is live: an entry changed meanwhile
 * is read as it is when its turn comes (and the change was seen by the observer already).
 */
export function inSlices(it: Iterator<CacheEntry>, fn: (e: CacheEntry) => void, stopped: () => boolean, done: () => void): void {
  const slice = () => {
    if (stopped()) return;
    const until = performance.now() + SLICE_MS;
    let n = 0;
    for (;;) {
      if ((++n & 255) === 0 && performance.now() >= until) {
        setImmediate(slice);
        return;
      }
      const r = it.next();
      if (r.done) break;
      fn(r.value);
    }
    done();
  };
  slice();
}
