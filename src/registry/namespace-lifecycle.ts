// Namespaces: the ones every cluster starts with, and deletion. Deleting a namespace
// marks it Terminating (deletionTimestamp set, spec.finalizers ["kubernetes"]); the
// lifecycle then deletes everything in it, and removes the namespace once it is empty,
// as kube-apiserver with the namespace controller does.
import { errors } from '../errors.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import type { Catalog } from '../api/catalog.js';
import type { Targets } from '../api/targets.js';
import { nowTimestamp, objectKey, type DeleteOptions, type ResourceTarget, type Store } from './store.js';
import { encodeForCommit } from '../codec/json.js';

export const INITIAL_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
const UNDELETABLE = new Set(['default', 'kube-system', 'kube-public']);

export class NamespaceLifecycle {
  private running = new Set<string>();
  constructor(
    private store: Store,
    private catalog: Catalog,
    private targets: Targets,
  ) {}

  private nsTarget(): ResourceTarget {
    return this.targets.resolve('', 'v1', 'namespaces')!;
  }

  /** Creates the initial namespaces that are missing; resumes any deletion a restart cut short. */
  async bootstrap(): Promise<void> {
    const t = this.nsTarget();
    const cache = this.store.cacheOf(t);
    for (const name of INITIAL_NAMESPACES) {
      if (cache.items.has(objectKey('', name))) continue;
      await this.store.create(t, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, { dryRun: false });
    }
    for (const e of cache.items.values()) {
      if (entryObject(e)?.metadata?.deletionTimestamp) this.finalize(e.name);
    }
  }

  async delete(t: ResourceTarget, name: string, opts: DeleteOptions): Promise<Buffer> {
    if (UNDELETABLE.has(name)) {
      throw errors.forbidden(t.groupResource, name, `namespaces "${name}" is forbidden: this namespace may not be deleted`);
    }
    const cur = this.store.cacheOf(t).items.get(objectKey('', name));
    if (!cur) throw errors.notFound(t.groupResource, name);
    if (entryObject(cur).metadata.deletionTimestamp) return cur.json;
    const r = await this.store.guaranteedUpdate(t, '', name, { dryRun: opts.dryRun, subresource: '' }, (obj) => {
      if (opts.preconditions?.uid && opts.preconditions.uid !== obj.metadata.uid) {
        throw errors.conflict(t.groupResource, name, `Precondition failed: UID in precondition: ${opts.preconditions.uid}, UID in object meta: ${obj.metadata.uid}`);
      }
      obj.metadata.deletionTimestamp = nowTimestamp();
      obj.metadata.deletionGracePeriodSeconds = 0;
      return obj;
    });
    if (!opts.dryRun) await this.markTerminating(name);
    this.finalize(name);
    return this.store.cacheOf(t).items.get(objectKey('', name))?.json ?? r.json;
  }

  /** Sets status.phase Terminating: a status change the main resource would otherwise ignore. */
  private async markTerminating(name: string): Promise<void> {
    const t = this.nsTarget();
    await this.store.guaranteedUpdate(t, '', name, { dryRun: false, subresource: 'status' }, (obj) => {
      obj.status = { ...(obj.status ?? {}), phase: 'Terminating' };
      return obj;
    });
  }

  /** Deletes the namespace's contents, then the namespace. Runs in the background. */
  private finalize(name: string): void {
    if (this.running.has(name)) return;
    this.running.add(name);
    const run = async () => {
      try {
        for (let round = 0; ; round++) {
          let remaining = 0;
          for (const gv of this.catalog.servedGroupVersions()) {
            for (const info of gv.resources) {
              if (!info.namespaced || !info.verbs.includes('delete')) continue;
              if (this.catalog.preferredVersion(info.group) !== info.version) continue;
              const target = this.targets.resolve(info.group, info.version, info.resource);
              if (!target) continue;
              const items = this.store.cacheOf(target).list(name);
              remaining += items.length;
              await Promise.all(
                items.map((e) =>
                  this.store.delete(target, name, e.name, { dryRun: false }).catch(() => undefined),
                ),
              );
            }
          }
          if (remaining === 0) break;
          await new Promise((r) => setTimeout(r, Math.min(1000, 50 * (round + 1))));
        }
        // Empty: drop the finalizer and the namespace with it.
        const t = this.nsTarget();
        const cur = this.store.cacheOf(t).items.get(objectKey('', name));
        if (cur) {
          const obj = structuredClone(entryObject(cur));
          obj.spec = { ...(obj.spec ?? {}), finalizers: [] };
          delete obj.metadata.resourceVersion;
          const { head, tail, ordered } = encodeForCommit(obj);
          await this.store.coord.write({ type: 'DELETED', gr: t.gr, key: cur.key, expect: cur.rv, head, tail }, ordered).catch(() => undefined);
        }
      } finally {
        this.running.delete(name);
      }
    };
    void run();
  }
}
