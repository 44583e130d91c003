// A ResponseSink that keeps what is written, for the unit tests of the fan-out and the
// watch cache (the real sinks are the transports in src/http).
import type { ResponseSink } from '../../src/http/types.js';

export type MemorySink = ResponseSink & { writes: Buffer[]; ended: boolean; buffered: number; text(): string };

export function memorySink(writeQuantum?: number): MemorySink {
  const s: any = {
    aborted: false,
    writes: [] as Buffer[],
    ended: false,
    buffered: 0,
    writeQuantum,
    send() {},
    startStream() {},
    write(c: string | Uint8Array) {
      // the written bytes themselves (not a copy): tests check which chunks are shared
      s.writes.push(typeof c === 'string' ? Buffer.from(c) : Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength));
      return true;
    },
    end() {
      s.ended = true;
    },
    cork(fn: () => void) {
      fn();
    },
    onAborted() {},
    onDone() {},
    onDrain() {},
    bufferedBytes: () => s.buffered,
    close() {},
    text: () => Buffer.concat(s.writes).toString(),
  };
  return s;
}
