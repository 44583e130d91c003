// kube's Service allocator repair loops (the ClusterIP and NodePort repair controllers,
// every 3 minutes), run by the replica that leads (controllers/leader-controllers.ts): what
// a crash left behind is put right, an address held without its IPAddress, an IPAddress
// whose Service is gone, and (shared storage) NodePorts claimed in the RangeAllocation for
// a Service never stored, or held by a Service and missing there.
//
// Thread ownership: the main thread.
import type { Cacher } from '../../storage/cacher.js';
import { entryObject } from '../../../workers/watch/watch-cache.js';
import type { ServiceAllocator } from './service-allocator.js';

/** kube's repair interval */
export const REPAIR_INTERVAL_MS = 3 * 60_000;

export class ServiceRepair {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly allocator: ServiceAllocator,
    private readonly cacher: Cacher,
    private readonly intervalMs = REPAIR_INTERVAL_MS,
  ) {}

  /** The first pass (awaited: start-up repairs before it serves, as before), then one every interval. */
  async start(): Promise<void> {
    await this.pass();
    const next = () => {
      this.timer = setTimeout(() => {
        if (this.stopped) return;
        void this.pass().finally(next);
      }, this.intervalMs);
      this.timer.unref?.();
    };
    next();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async pass(): Promise<void> {
    try {
      await this.allocator.repair();
      await this.allocator.repairNodePorts(Array.from(this.cacher.cache('services').items.values(), (e) => entryObject(e)));
    } catch (e) {
      console.warn(`W service allocator repair: ${(e as Error).message}`);
    }
  }
}
