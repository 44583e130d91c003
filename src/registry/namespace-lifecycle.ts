// Namespaces: the ones every cluster starts with, and deletion (kube-apiserver's namespace
// REST plus the namespace controller). Deleting a namespace marks it (deletionTimestamp,
// status.phase Terminating; spec.finalizers keeps "kubernetes"); the lifecycle then deletes
// everything in it, reporting progress in status.conditions as kube does, removes the
// "kubernetes" finalizer once it is empty (what namespaces/finalize does), and the
// namespace goes when no finalizer is left. Creates in a terminating namespace are refused
// by the NamespaceLifecycle admission plugin (src/admission/namespace-lifecycle.ts, 403).
//
// The deletion of contents (kube's namespace controller, a kube-controller-manager loop) runs
// only while this replica leads (controller(): a term of leader-controllers.ts): it follows
// the namespaces marked for deletion through the caches, whichever replica or front thread
// marked them, and resumes those a dead leader left unfinished.
//
// Thread ownership: the front thread (the controller: the main thread); one background run
// per terminating namespace.
import { errors, StatusError } from '../errors.js';
import { entryObject, type CacheEntry } from '../../workers/watch/watch-cache.js';
import type { Catalog } from '../api/catalog.js';
import type { Targets } from '../api/targets.js';
import { nowTimestamp, objectKey, type DeleteOptions, type ResourceTarget, type Store } from './store.js';
import { orderedObject } from '../codec/json.js';
import { checkPreconditions } from './deletion.js';
import { WriteRejected, type ChangeType as EventType } from '../storage/interface.js';
import type { Cacher } from '../storage/cacher.js';
import type { LeaderController } from '../controllers/leader-controllers.js';
import type { AdmissionHooks } from '../admission/request.js';

export const INITIAL_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
/** kube's immortal namespaces (NamespaceLifecycle refuses their deletion) */
export const UNDELETABLE = new Set(['default', 'kube-system', 'kube-public']);
export const FINALIZER_KUBERNETES = 'kubernetes';

interface Progress {
  /** "<resource>.<group>" -> objects left */
  remaining: Map<string, number>;
  /** finalizer -> objects that still carry it */
  finalizers: Map<string, number>;
  failures: string[];
}

export class NamespaceLifecycle {
  /** namespace -> the controller term whose run is finalizing it */
  private running = new Map<string, number>();
  private stopped = false;
  /** the namespace controller's term (0: not leading) */
  private term = 0;
  private terms = 0;
  constructor(
    private store: Store,
    private catalog: Catalog,
    private targets: Targets,
  ) {}

  private nsTarget(): ResourceTarget {
    return this.targets.resolve('', 'v1', 'namespaces')!;
  }

  /**
   * Creates the initial namespaces that are missing (every replica does at start: one that
   * another replica created meanwhile is fine).
   */
  async bootstrap(): Promise<void> {
    const t = this.nsTarget();
    const cache = this.store.cacheOf(t);
    for (const name of INITIAL_NAMESPACES) {
      if (cache.items.has(objectKey('', name))) continue;
      try {
        await this.store.create(t, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, { dryRun: false });
      } catch (e) {
        if (!(e instanceof StatusError && e.code === 409)) throw e;
      }
    }
  }

  /**
   * The namespace controller for one leadership term: finalizes every namespace marked for
   * deletion (those a restart or a dead leader left, then each one marked later).
   */
  controller(cacher: Cacher): LeaderController {
    return {
      start: () => {
        this.term = ++this.terms;
        const t = this.nsTarget();
        cacher.observe((cache, evs) => {
          if (cache.gr !== t.gr) return;
          for (const ev of evs) if (ev.type !== 'DELETED' && entryObject(ev.entry)?.metadata?.deletionTimestamp) this.finalize(ev.entry.name);
        });
        for (const e of this.store.cacheOf(t).items.values()) if (entryObject(e)?.metadata?.deletionTimestamp) this.finalize(e.name);
      },
      stop: () => {
        this.term = 0;
      },
    };
  }

  stop(): void {
    this.stopped = true;
  }

  /** Writes a namespace as it is (spec and status included), with the precondition that it is still `cur`. */
  private async write(cur: CacheEntry, obj: any, type: EventType): Promise<Buffer> {
    const t = this.nsTarget();
    delete obj.metadata.resourceVersion;
    const r = await this.store.storage.write({ type, gr: t.gr, key: cur.key, expect: cur.rv, obj }, obj);
    return r.json;
  }

  /**
   * Rewrites a namespace with `change` applied to a copy, retrying on a lost race; deletes it
   * when it is marked for deletion and no finalizer is left. Returns the last state.
   */
  private async modify(name: string, change: (obj: any) => void, dryRun = false, admission?: AdmissionHooks): Promise<Buffer> {
    const t = this.nsTarget();
    for (let attempt = 0; ; attempt++) {
      const cur = this.store.cacheOf(t).items.get(objectKey('', name));
      if (!cur) throw errors.notFound(t.groupResource, name);
      const obj = structuredClone(entryObject(cur));
      change(obj);
      if (admission) {
        const old = entryObject(cur);
        const admitted = admission.admit(obj, old);
        if (admitted) await admitted;
        const validated = admission.validate(obj, old);
        if (validated) await validated;
      }
      const gone = !!obj.metadata.deletionTimestamp && !(obj.spec?.finalizers ?? []).length && !(obj.metadata.finalizers ?? []).length;
      if (dryRun) return Buffer.from(JSON.stringify(orderedObject(obj)));
      if (!gone && JSON.stringify(obj) === JSON.stringify(entryObject(cur))) return cur.json;
      try {
        return await this.write(cur, obj, gone ? 'DELETED' : 'MODIFIED');
      } catch (e) {
        if (e instanceof WriteRejected && e.failure !== 'notfound' && attempt < 8) continue;
        if (e instanceof WriteRejected && e.failure === 'notfound') throw errors.notFound(t.groupResource, name);
        throw e;
      }
    }
  }

  /**
   * `admission`: the request's DELETE admission, run after the preconditions (kube's
   * deleteValidation; the NamespaceLifecycle plugin refuses the immortal namespaces there).
   */
  async delete(t: ResourceTarget, name: string, opts: DeleteOptions, admission?: AdmissionHooks): Promise<Buffer> {
    const cur = this.store.cacheOf(t).items.get(objectKey('', name));
    if (!cur) throw errors.notFound(t.groupResource, name);
    const old = entryObject(cur);
    checkPreconditions(t, name, old, cur.rv, opts.preconditions);
    if (admission) {
      const admitted = admission.admit(null, old);
      if (admitted) await admitted;
      const validated = admission.validate(null, old);
      if (validated) await validated;
    }
    const json = await this.modify(
      name,
      (obj) => {
        if (obj.metadata.deletionTimestamp) return;
        obj.metadata.deletionTimestamp = nowTimestamp();
        obj.metadata.deletionGracePeriodSeconds = 0;
        obj.status = { ...(obj.status ?? {}), phase: 'Terminating' };
      },
      opts.dryRun,
    );
    // (the namespace controller sees the mark through the caches and deletes the contents)
    if (!opts.dryRun) this.finalize(name);
    return json;
  }

  /** namespaces/finalize: replaces spec.finalizers only; a marked namespace with none left goes. */
  async finalizeSubresource(name: string, body: any, dryRun: boolean, admission?: AdmissionHooks): Promise<Buffer> {
    const fins = body?.spec?.finalizers;
    if (fins !== undefined && !Array.isArray(fins)) throw errors.badRequest('spec.finalizers must be a list');
    return this.modify(
      name,
      (obj) => {
        obj.spec = { ...(obj.spec ?? {}) };
        if (fins && fins.length) obj.spec.finalizers = [...fins];
        else delete obj.spec.finalizers;
      },
      dryRun,
      admission,
    );
  }

  /** Deletes the namespace's contents, then drops the `kubernetes` finalizer. Runs in the background. */
  private finalize(name: string): void {
    const term = this.term;
    if (term === 0 || this.running.get(name) === term) return;
    this.running.set(name, term);
    const live = () => !this.stopped && this.term === term;
    const run = async () => {
      try {
        let lastConditions = '';
        for (let round = 0; live(); round++) {
          const p = await this.deleteContents(name);
          const conditions = this.conditions(p);
          const key = JSON.stringify(conditions.map((c) => [c.type, c.status, c.message]));
          if (key !== lastConditions) {
            lastConditions = key;
            await this.modify(name, (obj) => {
              const before = new Map<string, any>((obj.status?.conditions ?? []).map((c: any) => [c.type, c]));
              obj.status = {
                ...(obj.status ?? {}),
                phase: 'Terminating',
                conditions: conditions.map((c) => {
                  const was = before.get(c.type);
                  return was && was.status === c.status ? { ...c, lastTransitionTime: was.lastTransitionTime } : c;
                }),
              };
            });
          }
          if (p.remaining.size === 0) break;
          await new Promise((r) => setTimeout(r, Math.min(1000, 50 * (round + 1))));
        }
        if (!live()) return;
        // Empty: the `kubernetes` finalizer goes; the namespace goes with it when it was the last.
        await this.modify(name, (obj) => {
          const left = (obj.spec?.finalizers ?? []).filter((f: string) => f !== FINALIZER_KUBERNETES);
          obj.spec = { ...(obj.spec ?? {}) };
          if (left.length) obj.spec.finalizers = left;
          else delete obj.spec.finalizers;
        });
      } catch {
        // The namespace went away under us, or a write failed (another replica's write won
        // a race, storage was briefly unavailable): tried again while this replica leads.
        if (live()) {
          setTimeout(() => {
            const e = this.store.cacheOf(this.nsTarget()).items.get(objectKey('', name));
            if (e && entryObject(e)?.metadata?.deletionTimestamp) this.finalize(name);
          }, 1000).unref?.();
        }
      } finally {
        if (this.running.get(name) === term) this.running.delete(name);
      }
    };
    void run();
  }

  /** One pass over every namespaced type: deletes what is there, counts what is left. */
  private async deleteContents(name: string): Promise<Progress> {
    const p: Progress = { remaining: new Map(), finalizers: new Map(), failures: [] };
    for (const gv of this.catalog.servedGroupVersions()) {
      for (const info of gv.resources) {
        if (!info.namespaced || !info.verbs.includes('delete')) continue;
        if (this.catalog.preferredVersion(info.group) !== info.version) continue;
        const target = this.targets.resolve(info.group, info.version, info.resource);
        if (!target) continue;
        const items = this.store.cacheOf(target).list(name);
        if (items.length === 0) continue;
        await Promise.all(
          items.map((e) =>
            this.store.delete(target, name, e.name, { dryRun: false, propagationPolicy: 'Background' }).catch((err) => {
              if (err?.code !== 404) p.failures.push(String(err?.message ?? err));
            }),
          ),
        );
        const left = this.store.cacheOf(target).list(name);
        if (left.length) {
          p.remaining.set(`${info.resource}.${info.group}`, left.length);
          for (const e of left) for (const f of entryObject(e)?.metadata?.finalizers ?? []) p.finalizers.set(f, (p.finalizers.get(f) ?? 0) + 1);
        }
      }
    }
    return p;
  }

  /** status.conditions as kube's namespace controller reports them. */
  private conditions(p: Progress): Array<{ type: string; status: string; lastTransitionTime: string; reason: string; message: string }> {
    const now = nowTimestamp();
    const c = (type: string, on: boolean, reason: string, message: string) => ({ type, status: on ? 'True' : 'False', lastTransitionTime: now, reason, message });
    const remaining = [...p.remaining].sort(([a], [b]) => (a < b ? -1 : 1)).map(([gr, n]) => `${gr} has ${n} resource instances`);
    const fins = [...p.finalizers].sort(([a], [b]) => (a < b ? -1 : 1)).map(([f, n]) => `${f} in ${n} resource instances`);
    return [
      c('NamespaceDeletionDiscoveryFailure', false, 'ResourcesDiscovered', 'All resources successfully discovered'),
      c('NamespaceDeletionGroupVersionParsingFailure', false, 'ParsedGroupVersions', 'All legacy kube types successfully parsed'),
      p.failures.length
        ? c('NamespaceDeletionContentFailure', true, 'ContentDeletionFailed', `Failed to delete all resource types, ${p.failures.length} remaining: ${p.failures.join(', ')}`)
        : c('NamespaceDeletionContentFailure', false, 'ContentDeleted', 'All content successfully deleted, may be waiting on finalization'),
      remaining.length
        ? c('NamespaceContentRemaining', true, 'SomeResourcesRemain', `Some resources are remaining: ${remaining.join(', ')}`)
        : c('NamespaceContentRemaining', false, 'ContentRemoved', 'All content successfully removed'),
      fins.length
        ? c('NamespaceFinalizersRemaining', true, 'SomeFinalizersRemain', `Some content in the namespace has finalizers remaining: ${fins.join(', ')}`)
        : c('NamespaceFinalizersRemaining', false, 'ContentHasNoFinalizers', 'All content-preserving finalizers finished'),
    ];
  }
}
