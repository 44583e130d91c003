// Priority-and-fairness configuration upkeep (kube-apiserver's config producer and the
// status half of its APF config controller, in process):
//
//   - at start, every mandatory and suggested FlowSchema and PriorityLevelConfiguration of
//     kube 1.33 is created when missing, and put back to its bootstrap spec when it still
//     says apf.kubernetes.io/autoupdate-spec "true" (a user who set "false" keeps theirs);
//   - a deleted mandatory object (exempt, catch-all) is created again at once;
//   - every FlowSchema's Dangling condition says whether its priority level exists.
//
// Thread ownership: the front thread, driven by the cache layer's committed batches (Cacher.observe) as the
// other in-process controllers are. Writes go through the generic store, so watchers see them.
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import { StatusError } from '../errors.js';
import { entryObject, type ResourceCache, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { nowTimestamp, objectKey, type ResourceTarget, type Store } from '../registry/store.js';
import { ensureBootstrapObject } from './bootstrap-object.js';
import { AUTOUPDATE_ANNOTATION, mandatoryFlowSchemas, mandatoryPriorityLevels, suggestedFlowSchemas, suggestedPriorityLevels } from '../flowcontrol/bootstrap-objects.js';

const GROUP = 'flowcontrol.apiserver.k8s.io';

/** Whether every field of want is in have with the same value (have may hold defaults besides). */
function contains(have: unknown, want: unknown): boolean {
  if (want === null || typeof want !== 'object') return have === want;
  if (have === null || typeof have !== 'object') return false;
  if (Array.isArray(want)) {
    if (!Array.isArray(have) || have.length !== want.length) return false;
    return want.every((w, i) => contains(have[i], w));
  }
  for (const [k, v] of Object.entries(want)) if (!contains((have as any)[k], v)) return false;
  return true;
}

export class FlowControlBootstrap {
  readonly fsT: ResourceTarget;
  readonly plT: ResourceTarget;
  private stopped = false;
  private pendingStatus = new Set<string>();

  constructor(
    private store: Store,
    private cacher: Cacher,
    targets: Targets,
  ) {
    this.fsT = targets.resolve(GROUP, 'v1', 'flowschemas')!;
    this.plT = targets.resolve(GROUP, 'v1', 'prioritylevelconfigurations')!;
  }

  async start(): Promise<void> {
    this.cacher.observe((cache, evs) => this.onEvents(cache, evs));
    // Levels first, so that the schemas are not dangling when they appear.
    for (const o of [...mandatoryPriorityLevels(), ...suggestedPriorityLevels()]) await this.ensure(this.plT, o);
    for (const o of [...mandatoryFlowSchemas(), ...suggestedFlowSchemas()]) await this.ensure(this.fsT, o);
    for (const e of [...this.store.cacheOf(this.fsT).items.values()]) await this.syncStatus(e.name);
  }

  stop(): void {
    this.stopped = true;
  }

  private ensure(t: ResourceTarget, want: any): Promise<void> {
    return ensureBootstrapObject(this.store, t, want, {
      annotation: AUTOUPDATE_ANNOTATION,
      // the bootstrap spec, put back whole unless every field of it is there
      reconcile: (have) => (contains(have.spec, want.spec) ? null : { ...have, spec: structuredClone(want.spec) }),
      label: 'flowcontrol bootstrap',
    });
  }


  private onEvents(cache: ResourceCache, evs: WatchEvent[]): void {
    if (this.stopped) return;
    if (cache.gr === this.fsT.gr) {
      for (const ev of evs) {
        if (ev.type === 'DELETED') {
          const m = mandatoryFlowSchemas().find((o) => o.metadata.name === ev.entry.name);
          if (m) void this.ensure(this.fsT, m);
        } else void this.syncStatus(ev.entry.name);
      }
    } else if (cache.gr === this.plT.gr) {
      let levelsChanged = false;
      for (const ev of evs) {
        if (ev.type === 'DELETED') {
          const m = mandatoryPriorityLevels().find((o) => o.metadata.name === ev.entry.name);
          if (m) void this.ensure(this.plT, m);
        }
        if (ev.type !== 'MODIFIED') levelsChanged = true;
      }
      // A level appearing or going changes the Dangling condition of the schemas naming it.
      if (levelsChanged) for (const e of this.store.cacheOf(this.fsT).items.values()) void this.syncStatus(e.name);
    }
  }

  /** Sets the Dangling condition of one FlowSchema, writing only when it changes. */
  private async syncStatus(name: string): Promise<void> {
    if (this.stopped || this.pendingStatus.has(name)) return;
    const cur = this.store.cacheOf(this.fsT).items.get(objectKey('', name));
    if (!cur) return;
    const obj = entryObject(cur);
    const level: string = obj?.spec?.priorityLevelConfiguration?.name ?? '';
    const dangling = !this.store.cacheOf(this.plT).items.has(objectKey('', level));
    const want = dangling
      ? { status: 'True', reason: 'NotFound', message: `This FlowSchema references the PriorityLevelConfiguration object named ${JSON.stringify(level)} but there is no such object` }
      : { status: 'False', reason: 'Found', message: `This FlowSchema references the PriorityLevelConfiguration object named ${JSON.stringify(level)} and it exists` };
    const have = (obj?.status?.conditions ?? []).find((c: any) => c?.type === 'Dangling');
    if (have && have.status === want.status && have.reason === want.reason && have.message === want.message) return;
    this.pendingStatus.add(name);
    try {
      await this.store.guaranteedUpdate(this.fsT, '', name, { dryRun: false, subresource: 'status' }, (o) => {
        delete o.metadata.resourceVersion;
        const others = (o.status?.conditions ?? []).filter((c: any) => c?.type !== 'Dangling');
        o.status = { ...(o.status ?? {}), conditions: [...others, { type: 'Dangling', ...want, lastTransitionTime: nowTimestamp() }] };
        return o;
      });
    } catch (e) {
      if (!(e instanceof StatusError)) console.warn(`W flowcontrol status: ${name}: ${e}`);
    } finally {
      this.pendingStatus.delete(name);
    }
    // The schema may have changed while the write was on its way (its events found it pending).
    const again = this.store.cacheOf(this.fsT).items.get(objectKey('', name));
    if (again && again.rv !== cur.rv) void this.syncStatus(name);
  }
}
