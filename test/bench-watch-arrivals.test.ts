// The watch bench's latency as the issue defines it: each create carries a sequence number
// (rate-writer's WriteClock), sampled raw watches note when each sequenced event arrives
// (noteArrivals, on the bytes of a read), and the latency is taken from the create's
// acknowledgement (or its send) to that arrival (latenciesOf, timedLatenciesOf).
import { describe, expect, it } from 'vitest';
import { latenciesOf, noteArrivals, timedLatenciesOf } from '../bench/watch-load.js';
import { SEQ_ANNOTATION, newWriteClock } from '../bench/rate-writer.js';

const event = (seq: number) => JSON.stringify({ type: 'ADDED', object: { kind: 'ConfigMap', metadata: { name: `w-${seq}`, annotations: { 'bench/sent': '1', [SEQ_ANNOTATION]: String(seq) } } } }) + '\n';

describe('watch bench arrivals', () => {
  it('notes the sequence number of every event a read carries, chunk framing and all', () => {
    const body = event(7) + event(8) + event(1234);
    const wire = Buffer.from(`${body.length.toString(16)}\r\n${body}\r\n`);
    // a read buffer reused by the socket: bytes past n are stale and must not count
    const buf = Buffer.alloc(wire.length + 64, 0x39);
    wire.copy(buf);
    const out: number[] = [];
    noteArrivals(buf, wire.length, 1000.5, out);
    expect(out).toEqual([7, 1000.5, 8, 1000.5, 1234, 1000.5]);
  });

  it('misses a mark cut by the end of a read rather than noting a wrong number', () => {
    const text = Buffer.from(event(4567));
    const cut = text.indexOf('4567') + 2; // "45" in this read, "67" in the next
    const out: number[] = [];
    noteArrivals(text, cut, 1, out);
    expect(out).toEqual([]);
  });

  it('measures from the acknowledgement or the send, leaving out creates without one', () => {
    const clock = newWriteClock(16);
    const sent = new Float64Array(clock.sent);
    const acked = new Float64Array(clock.acked);
    sent[0] = 100;
    acked[0] = 110;
    sent[1] = 200;
    acked[1] = 230;
    sent[2] = 300; // never acknowledged (an error, or still in flight)
    const arrivals = Float64Array.from([0, 115, 1, 240, 2, 350, 99, 400]);
    expect(latenciesOf(arrivals, clock, 'ack')).toEqual([5, 10]);
    expect(latenciesOf(arrivals, clock, 'send')).toEqual([15, 40, 50]);
    expect(timedLatenciesOf(arrivals, clock, 'ack')).toEqual({ at: [115, 240], ms: [5, 10] });
  });
});
