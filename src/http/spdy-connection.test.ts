import { describe, expect, it } from 'vitest';
import zlib from 'node:zlib';
import { HeaderReader, HeaderWriter, SPDY_DICTIONARY, SpdyConnection, type SpdyStream } from './spdy-connection.js';

/** A header block as Go's framer writes one: count, then length-prefixed names and values. */
function rawBlock(h: Record<string, string>): Buffer {
  const parts: Buffer[] = [];
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  parts.push(u32(Object.keys(h).length));
  for (const [k, v] of Object.entries(h)) parts.push(u32(k.length), Buffer.from(k), u32(v.length), Buffer.from(v));
  return Buffer.concat(parts);
}

/** A client's compressor: one zlib stream with the dictionary, sync-flushed per block (as Go's). */
function clientCompressor(): (h: Record<string, string>) => Promise<Buffer> {
  const d = zlib.createDeflate({ dictionary: SPDY_DICTIONARY });
  return (h) =>
    new Promise((res) => {
      const out: Buffer[] = [];
      const onData = (c: Buffer) => out.push(c);
      d.on('data', onData);
      d.write(rawBlock(h));
      d.flush(zlib.constants.Z_SYNC_FLUSH, () => {
        d.off('data', onData);
        res(Buffer.concat(out));
      });
    });
}

function control(type: number, flags: number, body: Buffer): Buffer {
  const h = Buffer.alloc(8);
  h.writeUInt16BE(0x8003, 0);
  h.writeUInt16BE(type, 2);
  h.writeUInt32BE(body.length, 4);
  h[4] = flags;
  return Buffer.concat([h, body]);
}

function data(id: number, flags: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(8);
  h.writeUInt32BE(id, 0);
  h.writeUInt32BE(payload.length, 4);
  h[4] = flags;
  return Buffer.concat([h, payload]);
}

describe('SPDY/3.1 header blocks', () => {
  it('the dictionary is SPDY/3\'s (1423 bytes)', () => {
    expect(SPDY_DICTIONARY.length).toBe(1423);
  });

  it('reads blocks of one shared compressed stream, each after the one before', async () => {
    const compress = clientCompressor();
    const r = new HeaderReader();
    expect(await r.decode(await compress({ streamtype: 'error', port: '80', requestid: '0' }))).toEqual({ streamtype: 'error', port: '80', requestid: '0' });
    expect(await r.decode(await compress({ streamtype: 'data', port: '80', requestid: '0' }))).toEqual({ streamtype: 'data', port: '80', requestid: '0' });
    // (the writer's blocks read back too)
    const w = new HeaderWriter();
    const r2 = new HeaderReader();
    expect(await r2.decode(w.encode({ a: 'b' }))).toEqual({ a: 'b' });
    expect(await r2.decode(w.encode({ c: 'd', e: '' }))).toEqual({ c: 'd', e: '' });
  });

  it('writes blocks any inflater primed with the dictionary reads, each ending in a sync mark', () => {
    const w = new HeaderWriter();
    const a = w.encode({});
    const b = w.encode({ 'x-a': 'b' });
    expect(b.subarray(-5)).toEqual(Buffer.from([0, 0, 0, 0xff, 0xff]));
    const all = zlib.inflateSync(Buffer.concat([a, b]), { dictionary: SPDY_DICTIONARY, finishFlush: zlib.constants.Z_SYNC_FLUSH });
    expect(all).toEqual(Buffer.concat([rawBlock({}), rawBlock({ 'x-a': 'b' })]));
  });
});

describe('SpdyConnection', () => {
  it('opens streams, replies, carries data both ways with FIN, answers pings', async () => {
    const out: Buffer[] = [];
    const streams: SpdyStream[] = [];
    const conn = new SpdyConnection(
      (f, cb) => {
        out.push(f);
        cb?.();
      },
      (s) => {
        s.reply();
        streams.push(s);
      },
      () => {},
    );
    const compress = clientCompressor();
    const syn = Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), await compress({ streamtype: 'data' })]);
    const bytes = Buffer.concat([control(1, 0, syn), data(1, 1, Buffer.from('hello')), control(6, 0, Buffer.from([0, 0, 0, 7]))]);
    // fed a byte at a time, as a tunnel may cut it
    for (let i = 0; i < bytes.length; i++) conn.feed(bytes.subarray(i, i + 1));
    // (header blocks inflate asynchronously: the stream opens once its block is read)
    while (streams.length === 0) await new Promise((r) => setImmediate(r));
    expect(streams.length).toBe(1);
    expect(streams[0].headers.streamtype).toBe('data');
    const got: Buffer[] = [];
    streams[0].on('data', (d: Buffer) => got.push(d));
    await new Promise((r) => streams[0].once('end', r));
    expect(Buffer.concat(got).toString()).toBe('hello');
    await new Promise<void>((r) => streams[0].end('world', () => r()));
    const types = out.map((f) => (f[0] & 0x80 ? `c${f.readUInt16BE(2)}` : `d${f[4]}`));
    expect(types).toEqual(['c2', 'c6', 'd0', 'd1']);
    expect(out[2].subarray(8).toString()).toBe('world');
  });
});
