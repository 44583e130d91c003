// A minimal SPDY/3.1 connection, either side: what kubectl's port-forward (and a SPDY exec)
// speaks to a kubelet through moby/spdystream. The node agent serves it (role 'server': the
// peer opens the streams, src/node/streaming/); the API server speaks it to a node as a
// client when it translates a WebSocket exec or attach (role 'client': streams opened here,
// each waited on until its SYN_REPLY; src/kubelet/stream-translator.ts). Frames: SYN_STREAM,
// SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE and DATA. Header
// blocks are one zlib stream per direction, primed with SPDY/3's dictionary.
//
// Flow control: spdystream neither sends WINDOW_UPDATE nor honours a window, so neither does
// this side; backpressure comes from the carrier (each frame written is acknowledged by the
// carrier's callback, and a stream's writes wait for it).
//
// Header decompression: one streaming inflater per connection, flushed per block; node's
// zlib answers asynchronously, so frames are handled strictly one after another (the ones
// after a header block wait for it). Outgoing blocks are written as stored (uncompressed)
// deflate blocks of one zlib stream, each ended by a sync-flush mark, which any inflater
// reads whatever dictionary it was primed with.
//
// Thread ownership: one connection per carrier, on the thread that owns the carrier (the
// agent's main thread; a front end's thread in the API server).
import { Duplex } from 'node:stream';
import zlib from 'node:zlib';

const WORDS = [
  'options', 'head', 'post', 'put', 'delete', 'trace', 'accept', 'accept-charset', 'accept-encoding', 'accept-language', 'accept-ranges', 'age', 'allow',
  'authorization', 'cache-control', 'connection', 'content-base', 'content-encoding', 'content-language', 'content-length', 'content-location', 'content-md5',
  'content-range', 'content-type', 'date', 'etag', 'expect', 'expires', 'from', 'host', 'if-match', 'if-modified-since', 'if-none-match', 'if-range',
  'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'pragma', 'proxy-authenticate', 'proxy-authorization', 'range', 'referer', 'retry-after',
  'server', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'user-agent', 'vary', 'via', 'warning', 'www-authenticate', 'method', 'get', 'status', '200 OK',
  'version', 'HTTP/1.1', 'url', 'public', 'set-cookie', 'keep-alive', 'origin',
];
const TAIL =
  '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505203 Non-Authoritative Information204 No Content' +
  '301 Moved Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable' +
  'Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,' +
  'application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';

/** SPDY/3's header compression dictionary (1423 bytes): length-prefixed words, then common values. */
export const SPDY_DICTIONARY: Buffer = (() => {
  const parts: Buffer[] = [];
  for (const w of WORDS) {
    const n = Buffer.alloc(4);
    n.writeUInt32BE(w.length);
    parts.push(n, Buffer.from(w, 'latin1'));
  }
  parts.push(Buffer.from(TAIL, 'latin1'));
  return Buffer.concat(parts);
})();

export const enum FrameType {
  SynStream = 1,
  SynReply = 2,
  RstStream = 3,
  Settings = 4,
  Ping = 6,
  GoAway = 7,
  Headers = 8,
  WindowUpdate = 9,
}

export const FLAG_FIN = 0x01;
export const RST_PROTOCOL_ERROR = 1;
export const RST_CANCEL = 5;
const MAX_DATA = 0xffffff;
/** the most one header block may inflate to */
const MAX_HEADER_BLOCK = 1 << 20;

function adler32(b: Buffer): number {
  let a = 1;
  let s = 0;
  for (let i = 0; i < b.length; i++) {
    a = (a + b[i]) % 65521;
    s = (s + a) % 65521;
  }
  return ((s << 16) | a) >>> 0;
}

const SYNC_MARK = Buffer.from([0, 0, 0, 0xff, 0xff]);

/** Encodes header blocks as one zlib stream of stored deflate blocks (synchronous; see the header comment). */
export class HeaderWriter {
  private started = false;

  encode(headers: Record<string, string>): Buffer {
    const entries = Object.entries(headers);
    const parts: Buffer[] = [];
    const u32 = (n: number) => {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(n);
      return b;
    };
    parts.push(u32(entries.length));
    for (const [k, v] of entries) {
      const kb = Buffer.from(k.toLowerCase());
      const vb = Buffer.from(v);
      parts.push(u32(kb.length), kb, u32(vb.length), vb);
    }
    const raw = Buffer.concat(parts);
    const out: Buffer[] = [];
    if (!this.started) {
      this.started = true;
      // CMF 0x78 (deflate, 32 KiB window); FLG with FDICT and the check bits; then DICTID.
      const cmf = 0x78;
      let flg = 0x20;
      flg += 31 - ((cmf * 256 + flg) % 31);
      out.push(Buffer.from([cmf, flg]), u32(adler32(SPDY_DICTIONARY)));
    }
    for (let off = 0; off < raw.length || off === 0; off += 0xffff) {
      const piece = raw.subarray(off, off + 0xffff);
      const h = Buffer.alloc(5);
      h[0] = 0; // not final, stored
      h.writeUInt16LE(piece.length, 1);
      h.writeUInt16LE(~piece.length & 0xffff, 3);
      out.push(h, piece);
      if (raw.length === 0) break;
    }
    // then an empty stored block, as a zlib sync flush ends: Go's inflater hands over what it
    // has decoded only at such a block (or at the stream's end); without it, it reads on past
    // the frame, fails, and keeps failing on every later header block
    out.push(SYNC_MARK);
    return Buffer.concat(out);
  }
}

/** Decodes the peer's header blocks (one zlib stream across the connection, sync-flushed per block). */
export class HeaderReader {
  private inflate = zlib.createInflate({ dictionary: SPDY_DICTIONARY });
  private out: Buffer[] = [];
  private failed: Error | null = null;

  private outBytes = 0;

  constructor() {
    this.inflate.on('data', (c: Buffer) => {
      this.out.push(c);
      this.outBytes += c.length;
      // (a block that inflates past this is an attack, not headers)
      if (this.outBytes > MAX_HEADER_BLOCK) {
        this.failed = new Error('spdy: header block too large');
        this.inflate.destroy();
      }
    });
    this.inflate.on('error', (e) => (this.failed = e));
  }

  /** The block's headers, once inflated (the blocks must be given in the order they came). */
  decode(block: Buffer): Promise<Record<string, string>> {
    return new Promise((resolve, reject) => {
      if (this.failed) return reject(this.failed);
      this.inflate.write(block);
      // (node pushes the inflated bytes before it calls the flush back)
      this.inflate.flush(zlib.constants.Z_SYNC_FLUSH, () => {
        const raw = Buffer.concat(this.out);
        this.out = [];
        this.outBytes = 0;
        if (this.failed) return reject(this.failed);
        try {
          resolve(parseHeaderBlock(raw));
        } catch (e) {
          reject(e);
        }
      });
    });
  }

  close(): void {
    this.inflate.destroy();
  }
}

/** An uncompressed header block: a count, then length-prefixed names and values. */
function parseHeaderBlock(raw: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let p = 0;
  const u32 = () => {
    if (p + 4 > raw.length) throw new Error('spdy: short header block');
    const n = raw.readUInt32BE(p);
    p += 4;
    return n;
  };
  const str = () => {
    const n = u32();
    if (p + n > raw.length) throw new Error('spdy: short header block');
    const v = raw.toString('utf8', p, p + n);
    p += n;
    return v;
  };
  const count = u32();
  for (let i = 0; i < count; i++) {
    const k = str();
    out[k.toLowerCase()] = str();
  }
  return out;
}

/** One SPDY stream as a node Duplex: writes become DATA frames, its end a FIN. */
export class SpdyStream extends Duplex {
  /** the peer sent FIN */
  remoteClosed = false;
  private replied = false;
  /** a stream opened on this side: settles on the peer's SYN_REPLY (or its RST_STREAM, or the connection's end) */
  readonly accepted: Promise<void>;
  private settle?: (err?: Error) => void;

  constructor(
    readonly id: number,
    readonly headers: Record<string, string>,
    private conn: SpdyConnection,
    /** opened by this side (SYN_STREAM sent), not by the peer */
    readonly local = false,
  ) {
    super({ allowHalfOpen: true });
    this.accepted = local
      ? new Promise<void>((resolve, reject) => {
          this.settle = (err) => (err ? reject(err) : resolve());
        })
      : Promise.resolve();
    // (nobody may be waiting on it when the stream fails)
    this.accepted.catch(() => {});
    this.once('close', () => this.settle?.(new Error('spdy: stream closed before its reply')));
  }

  /** the peer's SYN_REPLY to a stream opened here */
  replyReceived(fin: boolean): void {
    this.settle?.();
    this.settle = undefined;
    if (fin) this.deliver(Buffer.alloc(0), true);
  }

  /** Accepts the stream (SYN_REPLY); spdystream's CreateStream waits for it. A stream opened here is not replied to. */
  reply(headers: Record<string, string> = {}, fin = false): void {
    if (this.replied || this.local) return;
    this.replied = true;
    this.conn.sendControl(FrameType.SynReply, fin ? FLAG_FIN : 0, Buffer.concat([u32(this.id), this.conn.headerWriter.encode(headers)]));
  }

  /** RST_STREAM: the stream ends at once, both ways. */
  reset(status = RST_CANCEL): void {
    if (this.destroyed) return;
    this.conn.sendControl(FrameType.RstStream, 0, Buffer.concat([u32(this.id), u32(status)]));
    this.conn.forget(this.id);
    this.destroy();
  }

  override _read(): void {
    // (the peer cannot be held back: spdystream has no flow control)
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.reply();
    let off = 0;
    const next = (err?: Error | null) => {
      if (err) return cb(err);
      if (off >= chunk.length) return cb();
      const piece = chunk.subarray(off, off + MAX_DATA);
      off += piece.length;
      this.conn.sendData(this.id, 0, piece, next);
    };
    next();
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.reply();
    this.conn.sendData(this.id, FLAG_FIN, Buffer.alloc(0), cb);
  }

  /** the peer's DATA */
  deliver(data: Buffer, fin: boolean): void {
    if (data.length) this.push(data);
    if (fin && !this.remoteClosed) {
      this.remoteClosed = true;
      this.push(null);
    }
  }
}

const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};

/**
 * One side of a SPDY/3.1 connection over some carrier: bytes come in through feed(), frames
 * leave through the write function (its callback says the carrier took them). The server
 * takes the streams the peer opens (onStream); the client opens its own (openStream).
 */
export class SpdyConnection {
  readonly headerWriter = new HeaderWriter();
  private headerReader = new HeaderReader();
  private streams = new Map<number, SpdyStream>();
  private buf: Buffer = Buffer.alloc(0);
  /** chunks read since buf, not joined yet, and how many more bytes buf's frame needs */
  private parts: Buffer[] = [];
  private partsBytes = 0;
  private need = 0;
  /** whole frames not handled yet, and whether run() is handling them */
  private queue: Buffer[] = [];
  private busy = false;
  private closed = false;
  /** the carrier's input ended: close once the frames already read are handled */
  private inputEnded = false;
  private lastStreamId = 0;
  /** the next id of a stream or ping opened here: odd for a client, even for a server (SPDY/3 2.3.2) */
  private nextId: number;
  private nextPing: number;

  constructor(
    private write: (frame: Buffer, cb?: (err?: Error | null) => void) => void,
    private onStream: (s: SpdyStream) => void,
    private onClose: () => void,
    readonly role: 'server' | 'client' = 'server',
  ) {
    this.nextId = role === 'client' ? 1 : 2;
    this.nextPing = this.nextId;
  }

  /** Opens a stream (SYN_STREAM); its `accepted` settles on the peer's SYN_REPLY. */
  openStream(headers: Record<string, string>): SpdyStream {
    const id = this.nextId;
    this.nextId += 2;
    const s = new SpdyStream(id, headers, this, true);
    if (this.closed) {
      s.destroy();
      return s;
    }
    this.streams.set(id, s);
    s.on('finish', () => {
      if (s.remoteClosed) this.streams.delete(id);
    });
    // stream id, associated stream 0, priority 0 and slot 0, then the header block
    this.sendControl(FrameType.SynStream, 0, Buffer.concat([u32(id), u32(0), Buffer.from([0, 0]), this.headerWriter.encode(headers)]));
    return s;
  }

  /** A PING of this side (the peer answers with the same frame): keeps idle connections up. */
  ping(): void {
    const id = this.nextPing;
    this.nextPing += 2;
    this.sendControl(FrameType.Ping, 0, u32(id));
  }

  feed(chunk: Buffer): void {
    if (this.closed) return;
    // Chunks of an incomplete frame wait in a list and are joined once the frame is whole:
    // joining on every chunk would copy a 16 MiB frame that comes in small reads once per read.
    this.parts.push(chunk);
    this.partsBytes += chunk.length;
    if (this.partsBytes < this.need) return;
    this.buf = this.parts.length === 1 && this.buf.length === 0 ? chunk : Buffer.concat([this.buf, ...this.parts]);
    this.parts = [];
    this.partsBytes = 0;
    this.need = 0;
    while (this.buf.length >= 8) {
      const len = this.buf.readUIntBE(5, 3);
      if (this.buf.length < 8 + len) {
        this.need = 8 + len - this.buf.length;
        break;
      }
      this.queue.push(this.buf.subarray(0, 8 + len));
      this.buf = this.buf.subarray(8 + len);
    }
    if (!this.busy) void this.run();
  }

  /**
   * Frames are handled one after another, in order: a header block inflates asynchronously
   * (node's zlib), and the frames after it wait for it.
   */
  private async run(): Promise<void> {
    this.busy = true;
    while (this.queue.length && !this.closed) {
      const f = this.queue.shift()!;
      try {
        const pending = this.frame(f);
        if (pending) await pending;
      } catch {
        // a frame that does not parse (or a header block that does not inflate): GOAWAY with PROTOCOL_ERROR
        this.goAway(1);
      }
    }
    this.busy = false;
    if (this.inputEnded) this.close();
  }

  /**
   * The carrier has no more bytes (its end, or its close): the frames already read are still
   * handled (a reply and the data behind it may wait on a header block's inflation), then
   * the connection closes.
   */
  endOfInput(): void {
    this.inputEnded = true;
    if (!this.busy) this.close();
  }

  private frame(f: Buffer): Promise<void> | undefined {
    const flags = f[4];
    const body = f.subarray(8);
    if ((f[0] & 0x80) === 0) {
      const id = f.readUInt32BE(0) & 0x7fffffff;
      const s = this.streams.get(id);
      if (!s) return; // data for a stream reset or never opened: dropped
      s.deliver(Buffer.from(body), (flags & FLAG_FIN) !== 0);
      if (s.remoteClosed && s.writableFinished) this.streams.delete(id);
      return;
    }
    const type = f.readUInt16BE(2);
    switch (type) {
      case FrameType.SynStream: {
        const id = body.readUInt32BE(0) & 0x7fffffff;
        return this.headerReader.decode(body.subarray(10)).then((headers) => {
          if (this.closed) return;
          this.lastStreamId = Math.max(this.lastStreamId, id);
          const s = new SpdyStream(id, headers, this);
          this.streams.set(id, s);
          s.on('finish', () => {
            if (s.remoteClosed) this.streams.delete(id);
          });
          if (flags & FLAG_FIN) s.deliver(Buffer.alloc(0), true);
          this.onStream(s);
        });
      }
      case FrameType.SynReply: {
        // (decoded even when nothing waits: the block is in the shared compression stream)
        const id = body.readUInt32BE(0) & 0x7fffffff;
        return this.headerReader.decode(body.subarray(4)).then(() => {
          const s = this.streams.get(id);
          if (s?.local) s.replyReceived((flags & FLAG_FIN) !== 0);
        });
      }
      case FrameType.Headers:
        // (nothing to act on, but the block is in the shared compression stream)
        return this.headerReader.decode(body.subarray(4)).then(() => undefined);
      case FrameType.RstStream: {
        const id = body.readUInt32BE(0) & 0x7fffffff;
        const s = this.streams.get(id);
        this.streams.delete(id);
        s?.destroy();
        return;
      }
      case FrameType.Ping:
        // The peer's ping (odd ids are a client's, even a server's) is answered with the same
        // frame; the answer to one of ours is only taken.
        if (body.length >= 4 && (body.readUInt32BE(0) % 2 === 1) === (this.role === 'server')) this.write(Buffer.from(f));
        return;
      case FrameType.GoAway:
        this.close();
        return;
      default:
        // SETTINGS, WINDOW_UPDATE and anything newer: nothing to do (no flow control).
        return;
    }
  }

  sendControl(type: FrameType, flags: number, body: Buffer, cb?: (err?: Error | null) => void): void {
    if (this.closed) return cb?.(new Error('spdy: connection closed'));
    const h = Buffer.alloc(8);
    h.writeUInt16BE(0x8003, 0);
    h.writeUInt16BE(type, 2);
    h.writeUInt32BE(body.length, 4);
    h[4] = flags;
    this.write(Buffer.concat([h, body]), cb);
  }

  sendData(id: number, flags: number, data: Buffer, cb: (err?: Error | null) => void): void {
    if (this.closed) return cb(new Error('spdy: connection closed'));
    const h = Buffer.alloc(8);
    h.writeUInt32BE(id & 0x7fffffff, 0);
    h.writeUInt32BE(data.length, 4);
    h[4] = flags;
    this.write(Buffer.concat([h, data]), cb);
  }

  forget(id: number): void {
    this.streams.delete(id);
  }

  /** GOAWAY, then the connection ends. */
  goAway(status = 0): void {
    if (this.closed) return;
    this.sendControl(FrameType.GoAway, 0, Buffer.concat([u32(this.lastStreamId), u32(status)]));
    this.close();
  }

  /** The carrier is gone (or GOAWAY): every stream ends. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    this.headerReader.close();
    for (const s of this.streams.values()) s.destroy();
    this.streams.clear();
    this.onClose();
  }
}
