// The bench's watch fleet counts events in raw watch responses without parsing them: it
// must count each event exactly once however the bytes arrive (reads and HTTP chunks can
// split an event anywhere, its end included), and notice a broken framing.
import { describe, expect, it } from 'vitest';
import { WatchStreamCounter } from '../bench/watch-load.js';

function event(i: number): string {
  return JSON.stringify({ type: 'ADDED', object: { kind: 'ConfigMap', metadata: { name: `w-${i}`, resourceVersion: String(100 + i) }, data: { v: 'x'.repeat(i % 50) } } }) + '\n';
}

/** an HTTP/1.1 chunked response carrying payload in chunks of the given sizes */
function chunked(payload: Buffer, sizes: number[], end = true): Buffer {
  const parts: Buffer[] = [Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n')];
  let off = 0;
  for (let i = 0; off < payload.length; i++) {
    const n = Math.min(sizes[i % sizes.length], payload.length - off);
    parts.push(Buffer.from(`${n.toString(16)}\r\n`), payload.subarray(off, off + n), Buffer.from('\r\n'));
    off += n;
  }
  if (end) parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

/** feeds wire in reads of the given sizes, each copied into one reused buffer as a socket's onread does */
function feedInReads(c: WatchStreamCounter, wire: Buffer, reads: number[]): void {
  const scratch = Buffer.alloc(65536, 0x22); // stale bytes full of quotes, to catch reads past n
  let off = 0;
  for (let i = 0; off < wire.length; i++) {
    const n = Math.min(reads[i % reads.length], wire.length - off);
    wire.copy(scratch, 0, off, off + n);
    c.feed(scratch, n);
    off += n;
  }
}

describe('WatchStreamCounter', () => {
  const payload = Buffer.from('\n' + Array.from({ length: 40 }, (_, i) => event(i)).join(''));

  it('counts every event once, whatever the chunk and read sizes', () => {
    for (const sizes of [[payload.length], [1], [7], [8], [9], [13], [100, 3, 511], [16128]]) {
      for (const reads of [[65536], [1], [2], [7], [8], [15], [16], [17], [333], [4, 1000, 9]]) {
        const c = new WatchStreamCounter();
        feedInReads(c, chunked(payload, sizes), reads);
        expect(c.status).toBe(200);
        expect(c.events, `chunks ${sizes} reads ${reads}`).toBe(40);
        expect(c.ended).toBe(true);
        expect(c.broken).toBe(false);
      }
    }
  });

  it('counts an event split at every offset by a read and by a chunk boundary', () => {
    const one = Buffer.from(event(1) + event(2));
    for (let cut = 1; cut < one.length; cut++) {
      const byChunk = new WatchStreamCounter();
      feedInReads(byChunk, chunked(one, [cut, one.length]), [65536]);
      expect(byChunk.events).toBe(2);
      const wire = chunked(one, [one.length]);
      for (const at of [cut, cut + 40]) {
        const byRead = new WatchStreamCounter();
        feedInReads(byRead, wire, [at, wire.length]);
        expect(byRead.events).toBe(2);
      }
    }
  });

  it('counts neither blank lines nor a line that is not an object', () => {
    const c = new WatchStreamCounter();
    feedInReads(c, chunked(Buffer.from('\n\n' + event(1) + '\n' + '{"type":"ADDED",\n' + event(2)), [5]), [3]);
    expect(c.events).toBe(2);
  });

  it('reads the status of a refused watch', () => {
    const c = new WatchStreamCounter();
    const body = '{"kind":"Status","code":403}';
    feedInReads(c, Buffer.from(`HTTP/1.1 403 Forbidden\r\nContent-Length: ${body.length}\r\n\r\n${body}`), [65536]);
    expect(c.status).toBe(403);
  });

  it('stops on a broken chunk framing', () => {
    const wire = Buffer.concat([chunked(Buffer.from(event(1)), [1000], false), Buffer.from('zz\r\n' + event(2))]);
    const c = new WatchStreamCounter();
    feedInReads(c, wire, [65536]);
    expect(c.events).toBe(1);
    expect(c.broken).toBe(true);
    // a chunk longer than its size line says
    const c2 = new WatchStreamCounter();
    const e = event(3);
    feedInReads(c2, Buffer.from(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${(e.length - 5).toString(16)}\r\n${e}\r\n`), [65536]);
    expect(c2.broken).toBe(true);
  });

  it('an open stream is neither ended nor broken', () => {
    const c = new WatchStreamCounter();
    feedInReads(c, chunked(payload, [500], false), [4096]);
    expect(c.events).toBe(40);
    expect(c.ended).toBe(false);
    expect(c.broken).toBe(false);
  });
});
