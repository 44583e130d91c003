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

describe('SpdyConnection as a client (the API server towards a SPDY-only node)', () => {
  /** A client and a server joined back to back, each frame handed over on the next tick (as a socket would). */
  function pair(onServerStream: (s: SpdyStream) => void) {
    let server!: SpdyConnection;
    const toServer: Buffer[] = [];
    const toClient: Buffer[] = [];
    const client = new SpdyConnection(
      (f, cb) => {
        toServer.push(f);
        setImmediate(() => server.feed(toServer.shift()!));
        cb?.();
      },
      (s) => s.reset(),
      () => {},
      'client',
    );
    server = new SpdyConnection(
      (f, cb) => {
        toClient.push(f);
        setImmediate(() => client.feed(toClient.shift()!));
        cb?.();
      },
      onServerStream,
      () => {},
    );
    return { client, server, toServer, toClient };
  }

  it('opens odd-numbered streams with their headers, waits for each reply, carries data and half-closes', async () => {
    const seen: SpdyStream[] = [];
    const { client } = pair((s) => {
      seen.push(s);
      s.reply();
      if (s.headers.streamtype === 'stdin') {
        const got: Buffer[] = [];
        s.on('data', (d: Buffer) => got.push(d));
        // the client's FIN: what came is echoed on the stream, then its own FIN
        s.on('end', () => s.end(Buffer.concat(got).toString().toUpperCase()));
      }
    });
    const err = client.openStream({ streamtype: 'error' });
    await err.accepted;
    const stdin = client.openStream({ streamtype: 'stdin' });
    await stdin.accepted;
    expect(seen.map((s) => [s.id, s.headers.streamtype])).toEqual([
      [1, 'error'],
      [3, 'stdin'],
    ]);
    const back: Buffer[] = [];
    stdin.on('data', (d: Buffer) => back.push(d));
    const ended = new Promise((res) => stdin.once('end', res));
    stdin.write('half ');
    stdin.end('closed');
    await ended;
    expect(Buffer.concat(back).toString()).toBe('HALF CLOSED');
  });

  it('a stream the peer resets, or a connection that ends, fails the wait for its reply', async () => {
    const { client } = pair((s) => s.reset());
    const s = client.openStream({ streamtype: 'error' });
    await expect(s.accepted).rejects.toThrow();
    const { client: c2 } = pair(() => {});
    const t = c2.openStream({ streamtype: 'error' });
    c2.close();
    await expect(t.accepted).rejects.toThrow();
  });

  it('its own pings go out odd and are not answered back; the peer\'s are', async () => {
    const { client, server, toServer } = pair(() => {});
    const sent: Buffer[] = [];
    const tap = (client as unknown as { write: (f: Buffer, cb?: () => void) => void }).write;
    (client as unknown as { write: (f: Buffer, cb?: () => void) => void }).write = (f, cb) => {
      sent.push(f);
      tap(f, cb);
    };
    client.ping();
    await new Promise((r) => setTimeout(r, 20));
    // the client's ping (id 1), the server's echo taken without an answer: one frame only
    expect(sent.length).toBe(1);
    expect(sent[0].readUInt16BE(2)).toBe(6);
    expect(sent[0].readUInt32BE(8)).toBe(1);
    // a server's ping (even id) is echoed by the client
    server.sendControl(6, 0, Buffer.from([0, 0, 0, 2]));
    await new Promise((r) => setTimeout(r, 20));
    expect(sent.length).toBe(2);
    expect(sent[1].readUInt32BE(8)).toBe(2);
    void toServer;
  });

  it('frames read before the carrier ends are handled before the streams close', async () => {
    const client = new SpdyConnection(() => {}, () => {}, () => {}, 'client');
    const s = client.openStream({ streamtype: 'error' });
    const got: Buffer[] = [];
    s.on('data', (d: Buffer) => got.push(d));
    const ended = new Promise((res) => s.once('end', res));
    // the node's reply (a header block, inflated asynchronously), its data with FIN, then its close
    const reply = control(2, 0, Buffer.concat([Buffer.from([0, 0, 0, 1]), new HeaderWriter().encode({})]));
    client.feed(Buffer.concat([reply, data(1, 1, Buffer.from('last words'))]));
    client.endOfInput();
    await s.accepted;
    await ended;
    expect(Buffer.concat(got).toString()).toBe('last words');
  });
});
