// The simulated fleet: N virtual nodes (sim-node.ts) in one process, over one pool of
// HTTP/2 connections (h2-pool.ts). Registration is spread over a bounded number of
// concurrent calls so that thousands of nodes join without a stampede; each node then runs
// on its own timers.
//
// Thread ownership: the fleet's main thread; the Fleet owns its nodes and the pool.
import { H2Pool } from './h2-pool.js';
import { SimNode, type SimNodeOptions } from './sim-node.js';
import type { WebhookTarget } from '../../auth/webhook-client.js';

export interface FleetOptions extends SimNodeOptions {
  count: number;
  prefix: string;
  /** the first node's index (several fleets against one server take disjoint ranges) */
  firstIndex: number;
  registerConcurrency: number;
  streamsPerConnection: number;
  /** HTTP/1.1 even where the server offers HTTP/2 */
  forceHttp1: boolean;
}

export class Fleet {
  readonly pool: H2Pool;
  readonly nodes: SimNode[] = [];

  constructor(
    target: WebhookTarget,
    private readonly o: FleetOptions,
  ) {
    this.pool = new H2Pool(target, o.streamsPerConnection);
    for (let i = 0; i < o.count; i++) {
      const index = o.firstIndex + i;
      this.nodes.push(new SimNode(`${o.prefix}${index}`, index, this.pool, o));
    }
  }

  /** Registers every node (at most registerConcurrency at a time) and starts each once registered. */
  async start(onProgress?: (registered: number) => void): Promise<void> {
    await this.pool.init(this.o.forceHttp1);
    let next = 0;
    let done = 0;
    const worker = async () => {
      while (next < this.nodes.length) {
        const n = this.nodes[next++];
        await n.register();
        n.start();
        done++;
        onProgress?.(done);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.o.registerConcurrency, this.nodes.length) }, worker));
  }

  stop(): void {
    for (const n of this.nodes) n.stop();
    this.pool.close();
  }

  /** The fleet's counters, summed over its nodes. */
  stats(): Record<string, number> {
    const out: Record<string, number> = { nodes: this.nodes.length, connections: this.pool.connections, ...this.pool.counts };
    for (const n of this.nodes) for (const [k, v] of Object.entries(n.stats)) out[k] = (out[k] ?? 0) + v;
    for (const [cause, n] of this.pool.failuresBy) out[`failures: ${cause}`] = n;
    return out;
  }
}
