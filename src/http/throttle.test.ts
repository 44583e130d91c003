import { describe, it, expect, vi, afterEach } from 'vitest';
import { ThrottledSink } from './throttle.js';
import type { ResponseSink } from './types.js';

afterEach(() => vi.useRealTimers());

function inner() {
  const written: number[] = [];
  let ended = false;
  const res = {
    aborted: false,
    startStream: () => {},
    write: (b: Uint8Array) => (written.push(b.byteLength), true),
    end: () => (ended = true),
    onDone: () => {},
    onDrain: () => {},
    bufferedBytes: () => 0,
  } as unknown as ResponseSink;
  return { res, written, ended: () => ended };
}

describe('--max-connection-bytes-per-sec', () => {
  it('holds a stream to its rate: what the bucket does not cover waits, write() says so, drain follows', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const i = inner();
    const t = new ThrottledSink(i.res, 100);
    t.startStream(200, []);
    expect(t.write(Buffer.alloc(100))).toBe(true);
    expect(t.write(Buffer.alloc(60))).toBe(false);
    expect(t.write(Buffer.alloc(60))).toBe(false);
    expect(t.bufferedBytes()).toBe(120);
    let drained = 0;
    t.onDrain(() => drained++);
    t.end();
    expect(i.written).toEqual([100]);
    vi.advanceTimersByTime(600);
    expect(i.written).toEqual([100, 60]);
    expect(i.ended()).toBe(false);
    vi.advanceTimersByTime(600);
    expect(i.written).toEqual([100, 60, 60]);
    expect(i.ended()).toBe(true);
    expect(drained).toBe(0);
  });

  it('never holds back a plain response', () => {
    const i = inner();
    const sent: number[] = [];
    (i.res as any).send = (s: number) => sent.push(s);
    const t = new ThrottledSink(i.res, 1);
    t.send(200, [], Buffer.alloc(10_000));
    expect(sent).toEqual([200]);
  });
});
