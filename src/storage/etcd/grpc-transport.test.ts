// The gRPC transport against a scripted HTTP/2 server: frames split and joined across DATA
// chunks, statuses from trailers and from trailers-only responses (percent-encoded messages),
// HTTP statuses without a gRPC status, the local deadline, a refused connection told apart
// from a lost one, and bidirectional streams.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, createServer, type Socket } from 'node:net';
import http2, { type Http2Server, type ServerHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { decodeGrpcMessage, FrameReader, GrpcChannel, GrpcError, GrpcStatus, Method, statusFromHttp, type FrameSink } from './grpc-transport.js';
import { freePorts } from './test-cluster.js';

const frame = (payload: Buffer | string): Buffer => {
  const p = Buffer.from(payload);
  const h = Buffer.alloc(5);
  h.writeUInt32BE(p.length, 1);
  return Buffer.concat([h, p]);
};

function read(chunks: Buffer[]): { msgs: string[]; reader: FrameReader } {
  const msgs: string[] = [];
  const sink: FrameSink = { message: (m) => msgs.push(m.toString()) };
  const reader = new FrameReader();
  for (const c of chunks) reader.push(c, sink);
  return { msgs, reader };
}

describe('FrameReader', () => {
  it('reads several messages from one chunk, without copying them', () => {
    const chunk = Buffer.concat([frame('one'), frame(''), frame('three')]);
    const views: Buffer[] = [];
    const reader = new FrameReader();
    reader.push(chunk, { message: (m) => views.push(m) });
    expect(views.map(String)).toEqual(['one', '', 'three']);
    expect(views[2].buffer).toBe(chunk.buffer);
    expect(reader.partial).toBe(false);
  });

  it('joins a message split over chunks, its 5-byte prefix split too', () => {
    const all = Buffer.concat([frame('hello world'), frame('x'.repeat(1000)), frame('end')]);
    // every split point, in pieces of every size from 1 to 7 bytes
    for (let size = 1; size <= 7; size++) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < all.length; i += size) chunks.push(all.subarray(i, i + size));
      const { msgs, reader } = read(chunks);
      expect(msgs).toEqual(['hello world', 'x'.repeat(1000), 'end']);
      expect(reader.partial).toBe(false);
    }
  });

  it('says when the input ends inside a message', () => {
    const f = frame('abcdef');
    expect(read([f.subarray(0, 3)]).reader.partial).toBe(true);
    expect(read([f.subarray(0, 8)]).reader.partial).toBe(true);
  });

  it('refuses a compressed message (no encoding was offered)', () => {
    const f = frame('zz');
    f[0] = 1;
    const { msgs, reader } = read([f]);
    expect(msgs).toEqual([]);
    expect(reader.error).toMatch(/compression/);
  });
});

describe('status helpers', () => {
  it('decodes a percent-encoded grpc-message, and leaves a malformed one as it is', () => {
    expect(decodeGrpcMessage('etcdserver%3A%20request%20is%20too%20large')).toBe('etcdserver: request is too large');
    expect(decodeGrpcMessage('caf%C3%A9 100%25')).toBe('café 100%');
    expect(decodeGrpcMessage('50% off')).toBe('50% off');
    expect(decodeGrpcMessage(undefined)).toBe('');
  });

  it('maps HTTP statuses as gRPC does', () => {
    expect(statusFromHttp(400)).toBe(GrpcStatus.INTERNAL);
    expect(statusFromHttp(401)).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(statusFromHttp(403)).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(statusFromHttp(404)).toBe(GrpcStatus.UNIMPLEMENTED);
    expect(statusFromHttp(503)).toBe(GrpcStatus.UNAVAILABLE);
    expect(statusFromHttp(500)).toBe(GrpcStatus.UNKNOWN);
  });
});

type Handler = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void;

describe('GrpcChannel against a scripted server', () => {
  let server: Http2Server;
  let port: number;
  let handler: Handler = () => {};
  const seen: Array<{ headers: IncomingHttpHeaders; rstCode?: number; body: Buffer }> = [];
  let channels: GrpcChannel[] = [];
  const channel = (opts = {}) => {
    const c = new GrpcChannel(`http://127.0.0.1:${port}`, opts);
    channels.push(c);
    return c;
  };
  const ok = (stream: ServerHttp2Stream, ...messages: Buffer[]) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    for (const m of messages) stream.write(m);
    stream.end();
  };

  beforeAll(async () => {
    [port] = await freePorts(1);
    server = http2.createServer();
    server.on('stream', (stream, headers) => {
      const rec: (typeof seen)[number] = { headers, body: Buffer.alloc(0) };
      seen.push(rec);
      stream.on('data', (d: Buffer) => (rec.body = Buffer.concat([rec.body, d])));
      stream.on('close', () => (rec.rstCode = stream.rstCode));
      stream.on('error', () => {});
      handler(stream, headers);
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  });
  afterEach(() => {
    for (const c of channels) c.close();
    channels = [];
    seen.length = 0;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const M = new Method('/etcdserverpb.KV/Range');

  it('sends a unary call as one gRPC frame with the gRPC headers, and joins a response written in pieces', async () => {
    const reply = frame(Buffer.alloc(40_000, 'r'));
    handler = (stream) => {
      stream.once('end', () => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        // the message in odd pieces: the prefix alone, then uneven parts
        stream.write(reply.subarray(0, 3));
        stream.write(reply.subarray(3, 7));
        stream.write(reply.subarray(7, 20_000));
        stream.end(reply.subarray(20_000));
      });
      stream.resume();
    };
    const res = await channel().unary(M, frame('request'), 5000);
    expect(res.equals(Buffer.alloc(40_000, 'r'))).toBe(true);
    const h = seen[0].headers;
    expect(h[':method']).toBe('POST');
    expect(h[':path']).toBe('/etcdserverpb.KV/Range');
    expect(h['content-type']).toBe('application/grpc');
    expect(h.te).toBe('trailers');
    expect(h['grpc-timeout']).toBe('5000m');
    expect(seen[0].body.equals(frame('request'))).toBe(true);
  });

  it('reads the status of a trailers-only response, its message percent-decoded', async () => {
    handler = (stream) =>
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(GrpcStatus.FAILED_PRECONDITION), 'grpc-message': 'etcdserver%3A%20mvcc%3A%20required%20revision%20has%20been%20compacted' },
        { endStream: true },
      );
    const err = await channel().unary(M, frame('x'), 5000).catch((e) => e);
    expect(err).toBeInstanceOf(GrpcError);
    expect(err.code).toBe(GrpcStatus.FAILED_PRECONDITION);
    expect(err.details).toBe('etcdserver: mvcc: required revision has been compacted');
  });

  it('reads an error status from the trailers', async () => {
    handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(GrpcStatus.RESOURCE_EXHAUSTED), 'grpc-message': 'too%20big' }));
      stream.end();
    };
    const err = await channel().unary(M, frame('x'), 5000).catch((e) => e);
    expect([err.code, err.details]).toEqual([GrpcStatus.RESOURCE_EXHAUSTED, 'too big']);
  });

  it('ends a stream that sends a compressed message with INTERNAL, at once', async () => {
    handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      const f = frame('zz');
      f[0] = 1;
      stream.write(f);
    };
    const err = await new Promise<GrpcError | null>((resolve) => channel().stream(new Method('/etcdserverpb.Watch/Watch'), { message: () => {}, end: resolve }));
    expect(err?.code).toBe(GrpcStatus.INTERNAL);
    expect(err?.details).toMatch(/compression/);
  });

  it('maps an HTTP error status without a gRPC status', async () => {
    handler = (stream) => stream.respond({ ':status': 503 }, { endStream: true });
    const err = await channel().unary(M, frame('x'), 5000).catch((e) => e);
    expect(err.code).toBe(GrpcStatus.UNAVAILABLE);
    expect(err.neverSent).toBe(false);
  });

  it('enforces the deadline itself: DEADLINE_EXCEEDED, and the stream cancelled at the server', async () => {
    handler = () => {}; // never answers
    const t0 = Date.now();
    const err = await channel().unary(M, frame('x'), 300).catch((e) => e);
    expect(err.code).toBe(GrpcStatus.DEADLINE_EXCEEDED);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(seen[0].headers['grpc-timeout']).toBe('300m');
    await new Promise((r) => setTimeout(r, 200));
    expect(seen[0].rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
  });

  it('a refused connection is "never sent"; a connection lost with the call in flight is not', async () => {
    const [free] = await freePorts(1);
    const refused = new GrpcChannel(`http://127.0.0.1:${free}`);
    channels.push(refused);
    const e1 = await refused.unary(M, frame('x'), 2000).catch((e) => e);
    expect([e1.code, e1.neverSent]).toEqual([GrpcStatus.UNAVAILABLE, true]);
    expect(e1.details).toMatch(/No connection established.*ECONNREFUSED/);
    // during the backoff that follows, calls fail at once, the same way
    const e2 = await refused.unary(M, frame('x'), 2000).catch((e) => e);
    expect([e2.code, e2.neverSent]).toEqual([GrpcStatus.UNAVAILABLE, true]);

    handler = (stream) => stream.session?.destroy();
    const e3 = await channel().unary(M, frame('x'), 2000).catch((e) => e);
    expect([e3.code, e3.neverSent]).toEqual([GrpcStatus.UNAVAILABLE, false]);
  });

  it('reconnects after a lost session', async () => {
    let n = 0;
    handler = (stream) => (n++ === 0 ? stream.session?.destroy() : ok(stream, frame('again')));
    const ch = channel();
    await expect(ch.unary(M, frame('x'), 2000)).rejects.toBeInstanceOf(GrpcError);
    await ch.waitForReady(2000);
    expect((await ch.unary(M, frame('x'), 2000)).toString()).toBe('again');
  });

  it('streams both ways: messages out, several messages in one chunk, the end with the status', async () => {
    handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      const r = new FrameReader();
      stream.on('data', (d: Buffer) =>
        r.push(d, {
          message: (m) => {
            // two answers per request, in one write
            if (m.toString() === 'bye') stream.end();
            else stream.write(Buffer.concat([frame(`${m}-1`), frame(`${m}-2`)]));
          },
        }),
      );
    };
    const got: string[] = [];
    const ended = new Promise<GrpcError | null>((resolve) => {
      const s = channel().stream(new Method('/etcdserverpb.Watch/Watch'), {
        message: (m) => {
          got.push(m.toString());
          if (got.length === 4) s.write(frame('bye'));
        },
        end: resolve,
      });
      s.write(frame('a'));
      s.write(frame('b'));
    });
    expect(await ended).toBeNull();
    expect(got).toEqual(['a-1', 'a-2', 'b-1', 'b-2']);
    expect(seen[0].headers['grpc-timeout']).toBeUndefined();
  });

  it('cancels a stream: CANCELLED to its owner, RST_STREAM CANCEL to the server', async () => {
    handler = (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
    const ch = channel();
    await ch.waitForReady(2000);
    const ended = new Promise<GrpcError | null>((resolve) => {
      const s = ch.stream(new Method('/etcdserverpb.Watch/Watch'), { message: () => {}, end: resolve });
      s.write(frame('a'));
      setTimeout(() => s.cancel(), 100);
    });
    expect((await ended)?.code).toBe(GrpcStatus.CANCELLED);
    await new Promise((r) => setTimeout(r, 200));
    expect(seen[0].rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
  });

  it('drops a session whose peer stops answering pings while a stream is open', async () => {
    // a TCP relay to the server that goes silent on demand (a partitioned peer)
    let frozen = false;
    const pairs: Socket[] = [];
    const relay = createServer((down) => {
      const up = connect(port, '127.0.0.1');
      pairs.push(down, up);
      down.on('data', (d) => !frozen && up.write(d));
      up.on('data', (d) => !frozen && down.write(d));
      down.on('error', () => {});
      up.on('error', () => {});
    });
    const [relayPort] = await freePorts(1);
    await new Promise<void>((r) => relay.listen(relayPort, '127.0.0.1', r));
    try {
      handler = (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      const ch = new GrpcChannel(`http://127.0.0.1:${relayPort}`, { keepaliveMs: 200, keepaliveTimeoutMs: 200 });
      channels.push(ch);
      await ch.waitForReady(2000);
      let over = false;
      const ended = new Promise<GrpcError | null>((resolve) =>
        ch.stream(new Method('/etcdserverpb.Watch/Watch'), {
          message: () => {},
          end: (e) => {
            over = true;
            resolve(e);
          },
        }),
      );
      // answered pings keep it up
      await new Promise((r) => setTimeout(r, 700));
      expect(over).toBe(false);
      frozen = true;
      const err = await ended;
      expect(err?.code).toBe(GrpcStatus.UNAVAILABLE);
      expect(err?.details).toMatch(/keepalive/);
    } finally {
      for (const s of pairs) s.destroy();
      relay.close();
    }
  });

  it('a stream on a session that is lost ends with UNAVAILABLE', async () => {
    handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      setTimeout(() => stream.session?.destroy(), 50);
    };
    const err = await new Promise<GrpcError | null>((resolve) => channel().stream(new Method('/etcdserverpb.Watch/Watch'), { message: () => {}, end: resolve }));
    expect(err?.code).toBe(GrpcStatus.UNAVAILABLE);
  });
});
