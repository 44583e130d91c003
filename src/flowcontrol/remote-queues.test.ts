import { describe, it, expect, afterEach } from 'vitest';
import { MessageChannel } from 'node:worker_threads';
import { LevelState, totalWork } from './priority-levels.js';
import { levelFromObject } from './classifier.js';
import { FlowStatsRegistry } from './flow-stats.js';
import { QueueHost, RemoteQueues, type Outcome } from './remote-queues.js';

const level = () => levelFromObject({ metadata: { name: 'l' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 10, limitResponse: { type: 'Queue', queuing: { queues: 4, handSize: 2, queueLengthLimit: 2 } } } } });
const tick = () => new Promise((r) => setTimeout(r, 10));

let host: QueueHost | undefined;
afterEach(() => host?.close());

/** A level of one seat on the "main thread", and a "front thread" that queues there over a port. */
function setup() {
  const st = new LevelState(level());
  st.limit = 1;
  const stats = new FlowStatsRegistry();
  const ch = new MessageChannel();
  host = new QueueHost(ch.port1, (name) => (name === 'l' ? st : undefined), (l, s) => stats.of(l, s));
  const remote = new RemoteQueues(ch.port2);
  const ask = (hash: number, level = 'l') => {
    const outcomes: Outcome[] = [];
    const id = remote.enqueue({ level, schema: 's', hash, seats: 1, initialSeats: 1, latencyMs: 0, work: totalWork(1, 0, 0), kind: 0 }, (o) => outcomes.push(o));
    return { id, outcomes };
  };
  return { st, stats, remote, ask };
}

describe('the main thread keeps the queues of every front thread', () => {
  it('a request queued from another thread is granted when the seat frees, and its finish gives the seat back', async () => {
    const { st, remote, ask } = setup();
    const first = st.tryTake(1, 0)!;
    const a = ask(1);
    await tick();
    expect(a.outcomes).toEqual([]);
    expect(st.waitingRequests).toBe(1);
    st.finish(first);
    await tick();
    expect(a.outcomes).toEqual([{ granted: true }]);
    expect([st.executing, st.waitingRequests]).toEqual([1, 0]);
    remote.finish(a.id);
    await tick();
    expect(st.executing).toBe(0);
  });

  it("a full queue refuses at once; a level the main thread does not know is queued on the request's own thread", async () => {
    const { st, stats, ask } = setup();
    st.tryTake(1, 0);
    // one flow's hand: the waiters fill the shorter of its two queues, then the other
    const waits = [ask(7), ask(7), ask(7), ask(7)];
    await tick();
    const refused = ask(7);
    const unknown = ask(7, 'other');
    await tick();
    expect(waits.map((w) => w.outcomes.length)).toEqual([0, 0, 0, 0]);
    expect(refused.outcomes).toEqual([{ granted: false, reason: 'queue-full' }]);
    expect(unknown.outcomes).toEqual([{ local: true }]);
    expect(stats.of('l', 's').queueLength.count).toBe(4);
  });

  it('a cancel leaves the queue; a grant that crossed a cancel is finished at once', async () => {
    const { st, remote, ask } = setup();
    const first = st.tryTake(1, 0)!;
    const a = ask(1);
    const b = ask(2);
    await tick();
    remote.cancel(a.id);
    await tick();
    expect(st.waitingRequests).toBe(1);
    // b is granted on the main thread while its thread cancels: the grant and the cancel cross
    st.finish(first);
    remote.cancel(b.id);
    await tick();
    expect(b.outcomes).toEqual([]);
    expect([st.executing, st.waitingRequests]).toEqual([0, 0]);
  });

  it("the thread's end takes its waiters out and gives back the seats granted to it", async () => {
    const { st, ask } = setup();
    const first = st.tryTake(1, 0)!;
    ask(1);
    ask(2);
    await tick();
    st.finish(first);
    await tick();
    expect([st.executing, st.waitingRequests]).toEqual([1, 1]);
    host!.close();
    host = undefined;
    expect([st.executing, st.waitingRequests]).toEqual([0, 0]);
  });
});
