// The built-in controllers that kube runs in kube-controller-manager (garbage collector,
// namespace deletion, resource quota, service accounts, root CA publisher, PVC/PV
// protection, ClusterRole aggregation, ...), run here only while this replica holds the
// controller Lease (leader-election.ts): built and started when leadership is won, stopped
// when it is lost, and built afresh at the next win (a controller's state is what it read
// from the caches, so a new instance starts from the caches as they are then, as a new
// kube-controller-manager starts from its informers' lists).
//
// Each term's controllers see the cache layer through a view whose observe() records what
// they subscribe, so that ending the term removes every subscription (the controllers'
// own stop() only stops their work queues).
//
// Thread ownership: the main thread (the only one that runs controllers).
import type { Cacher } from '../storage/cacher.js';

export interface LeaderController {
  start(): void | Promise<void>;
  stop(): void;
}

export interface ControllerSpec {
  name: string;
  /** builds this term's instance over the cache view given (undefined: the controller is disabled) */
  make(cacher: Cacher): LeaderController | undefined;
}

interface Term {
  controllers: LeaderController[];
  unsubscribe: Array<() => void>;
  ended: boolean;
}

export class LeaderControllers {
  private term: Term | undefined;

  constructor(
    private readonly cacher: Cacher,
    private readonly specs: ControllerSpec[],
    private readonly log: (m: string) => void = (m) => console.warn(`W ${m}`),
  ) {}

  get running(): boolean {
    return !!this.term;
  }

  /** A new term: every controller built and started in order (each start awaited: the first ones write what later ones read). */
  async start(): Promise<void> {
    if (this.term) return;
    const term: Term = { controllers: [], unsubscribe: [], ended: false };
    this.term = term;
    const real = this.cacher;
    const view = new Proxy(real, {
      get(target, prop) {
        if (prop === 'observe') {
          return (fn: Parameters<Cacher['observe']>[0]) => {
            if (term.ended) return () => undefined;
            const off = target.observe(fn);
            term.unsubscribe.push(off);
            return off;
          };
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    for (const spec of this.specs) {
      if (term.ended) return;
      let c: LeaderController | undefined;
      try {
        c = spec.make(view);
        if (!c) continue;
        term.controllers.push(c);
        await c.start();
      } catch (err) {
        this.log(`controller ${spec.name}: ${(err as Error).message}`);
      }
    }
  }

  /** Ends the term: subscriptions removed, every controller stopped. */
  stop(): void {
    const term = this.term;
    this.term = undefined;
    if (!term) return;
    term.ended = true;
    for (const off of term.unsubscribe) off();
    for (const c of term.controllers) {
      try {
        c.stop();
      } catch (err) {
        this.log(`controller stop: ${(err as Error).message}`);
      }
    }
  }
}
