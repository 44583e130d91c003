// The watch load generator: tens of thousands of watches from one process. Each watch is
// a raw TLS socket with a hand-written HTTP/1.1 request. Its response is read as HTTP/1.1
// reads it (status line, headers, then the chunked transfer coding, chunk by chunk), and
// its events are counted without parsing them: the lines of chunk data that end an object.
// A few "sampler" watches do parse their events, to measure latency from the writer's
// send time (an annotation) to arrival, and count the frames that do not parse.
//
// Threads: the raw watches are spread over worker threads (two by default: the machine's
// two cores), each reading its sockets on its own event loop; the counts live in a
// SharedArrayBuffer the calling thread reads. The samplers stay on the calling thread,
// which has little else to do, so their latencies are not those of a busy reader. Each
// socket decrypts straight into its thread's one read buffer (net's `onread`): no Buffer,
// no stream machinery per read, so the fleet's cost per event is mostly TLS and syscalls.
import tls from 'node:tls';
import https from 'node:https';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { GO_TLS13_CIPHERS, authHeaders, authLine, type Target } from './lib.js';
import { SEQ_ANNOTATION, nowMs, type WriteClock } from './rate-writer.js';

const NL = 0x0a;
/**
 * TLS 1.3 cipher suites in the order Go's crypto/tls offers them on hardware with AES
 * instructions: kubectl, client-go and every controller negotiate AES-128-GCM. (Node's
 * default order asks for AES-256-GCM first, which costs both ends more per byte.)
 */
const CLOSE_BRACE = 0x7d;

export interface WatchFleet {
  /** events counted over all raw watches */
  events(): number;
  open(): number;
  failed(): number;
  /** sampler lines that were not one JSON event, and raw watches whose chunked framing broke (should stay 0) */
  malformed(): number;
  /** reads (decrypted pieces handed to the fleet) over all raw watches: events / reads is how many events a read carries */
  reads(): number;
  /**
   * latencies (ms) seen by the samplers since the last call (or the last takeTimedLatencies),
   * from the writer's send time (its annotation)
   */
  takeLatencies(): number[];
  /** the same, each with its arrival time (Date.now() ms): at[i] is when ms[i] was seen */
  takeTimedLatencies(): { at: number[]; ms: number[] };
  /**
   * Arrivals of sequenced creates (rate-writer's WriteClock) since the last call, as pairs
   * (sequence number, arrival ms): seen by the sampled raw watches on the fleet's reading
   * threads (one in sampleEvery: spread over the fleet, so over the fan-out's order, and
   * read by threads as busy as the rest of the fleet), and apart by the calling thread's
   * samplers (idle readers, opened after the fleet).
   */
  takeArrivals(): Promise<{ fleet: Float64Array; samplers: Float64Array }>;
  close(): Promise<void>;
  /**
   * The process the raw watches run in when it is not this one (the native fleet,
   * bench/native-watch.ts): its CPU is the client's too. Undefined for the JS fleet.
   */
  pid?: number;
}

const enum Phase {
  /** status line and headers, up to the empty line */
  Head,
  /** a chunk-size line (hex digits, maybe extensions, CRLF) */
  Size,
  /** the chunk's data */
  Data,
  /** the CRLF after a chunk's data */
  DataEnd,
  /** the last chunk was read: trailers (ignored) up to the close */
  Done,
  /** a body without the chunked coding: data up to the close */
  Identity,
  /** the framing broke: nothing more is read */
  Broken,
}

/**
 * One watch response read off the wire: HTTP/1.1 status and headers, the chunked coding
 * undone as data arrives in arbitrary pieces, and events counted in the chunk data as one
 * byte stream (an event split by a read or by a chunk boundary counts once, when its line ends).
 * Kept apart from the sockets so it can be tested alone.
 */
export class WatchStreamCounter {
  phase = Phase.Head;
  /** the status code, once the headers are in */
  status = 0;
  /** events counted so far */
  events = 0;
  /** the stream's last chunk arrived (the server ended the watch) */
  get ended(): boolean {
    return this.phase === Phase.Done;
  }
  /** the chunked framing broke (a server fault): counting stopped */
  get broken(): boolean {
    return this.phase === Phase.Broken;
  }
  /** headers seen so far (latin1), until the empty line */
  private head = '';
  /** data bytes left in the current chunk */
  private remaining = 0;
  /** the chunk-size line: its value so far, whether digits ended (extension), whether CR was seen */
  private size = -1;
  private sizeDigitsDone = false;
  private crlfSeen = 0;
  /** the last data byte seen */
  private last = 0;

  /** Reads buf[0, n). Returns the number of events it completed. */
  feed(buf: Uint8Array, n: number): number {
    const before = this.events;
    let pos = 0;
    while (pos < n) {
      switch (this.phase) {
        case Phase.Head: {
          // the head is small and read once: a string is fine here
          const take = Math.min(n - pos, 8192);
          this.head += Buffer.from(buf.buffer, buf.byteOffset + pos, take).toString('latin1');
          const end = this.head.indexOf('\r\n\r\n');
          if (end < 0) {
            if (this.head.length > 65536) this.phase = Phase.Broken;
            pos += take;
            break;
          }
          // only the bytes up to the empty line belong to the head
          pos += take - (this.head.length - (end + 4));
          const head = this.head.slice(0, end);
          this.head = '';
          const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
          this.status = m ? Number(m[1]) : -1;
          this.phase = /\r\ntransfer-encoding:[^\r]*chunked/i.test(head) ? Phase.Size : Phase.Identity;
          this.size = -1;
          break;
        }
        case Phase.Size: {
          const c = buf[pos++];
          if (c === 0x0d) {
            this.crlfSeen = 1;
          } else if (c === 0x0a) {
            if (this.size < 0 || this.crlfSeen !== 1) {
              this.phase = Phase.Broken;
              break;
            }
            this.remaining = this.size;
            this.size = -1;
            this.sizeDigitsDone = false;
            this.crlfSeen = 0;
            this.phase = this.remaining === 0 ? Phase.Done : Phase.Data;
          } else if (this.crlfSeen) {
            this.phase = Phase.Broken;
          } else if (!this.sizeDigitsDone && hexValue(c) >= 0) {
            this.size = (this.size < 0 ? 0 : this.size * 16) + hexValue(c);
            if (this.size > 2 ** 40) this.phase = Phase.Broken;
          } else if (this.size >= 0 && (c === 0x3b || c === 0x20 || c === 0x09 || this.sizeDigitsDone)) {
            this.sizeDigitsDone = true; // a chunk extension, ignored
          } else {
            this.phase = Phase.Broken;
          }
          break;
        }
        case Phase.Data: {
          const take = Math.min(n - pos, this.remaining);
          this.scan(buf, pos, pos + take);
          pos += take;
          this.remaining -= take;
          if (this.remaining === 0) {
            this.phase = Phase.DataEnd;
            this.crlfSeen = 0;
          }
          break;
        }
        case Phase.DataEnd: {
          const c = buf[pos++];
          if (this.crlfSeen === 0 && c === 0x0d) this.crlfSeen = 1;
          else if (this.crlfSeen === 1 && c === 0x0a) {
            this.crlfSeen = 0;
            this.phase = Phase.Size;
          } else this.phase = Phase.Broken;
          break;
        }
        case Phase.Identity:
          this.scan(buf, pos, n);
          pos = n;
          break;
        case Phase.Done:
        case Phase.Broken:
          return this.events - before;
      }
    }
    return this.events - before;
  }

  /**
   * Counts the events that end in data[s, e), data before s being what earlier calls saw:
   * one JSON object per line, so an event ends where a newline follows a closing brace.
   * (A newline alone, as the server sends to open a quiet stream, is no event.)
   */
  private scan(buf: Uint8Array, s: number, e: number): void {
    if (e <= s) return;
    // the search is native (memchr), bounded to [s, e): the buffer past e holds stale bytes
    const view = Buffer.from(buf.buffer, buf.byteOffset + s, e - s);
    let i = view.indexOf(NL);
    if (i === 0) {
      if (this.last === CLOSE_BRACE) this.events++;
      i = view.indexOf(NL, 1);
    }
    for (; i > 0; i = view.indexOf(NL, i + 1)) if (view[i - 1] === CLOSE_BRACE) this.events++;
    this.last = view[e - s - 1];
  }
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** Slots of the shared counters, per fleet thread. */
const enum Slot {
  Events,
  Open,
  Failed,
  Malformed,
  /** onread callbacks: how many pieces the events arrived in */
  Reads,
  Width,
}

interface FleetJob {
  host: string;
  port: number;
  tls?: { cert?: Buffer; key?: Buffer };
  request: string;
  count: number;
  counters: SharedArrayBuffer;
  /** this thread's first slot in counters */
  base: number;
  /** every sampleEvery-th watch of this thread notes the arrival of each sequenced create (0: none) */
  sampleEvery: number;
}

const SEQ_MARK = Buffer.from(`"${SEQ_ANNOTATION}":"`);

/**
 * Notes (sequence number, at) for every sequenced create in buf[0, n) into out. A mark split
 * by a read is missed (a lost sample, not a wrong one).
 */
export function noteArrivals(buf: Uint8Array, n: number, at: number, out: number[]): void {
  const view = Buffer.from(buf.buffer, buf.byteOffset, n);
  for (let i = view.indexOf(SEQ_MARK); i >= 0; i = view.indexOf(SEQ_MARK, i + SEQ_MARK.length)) {
    let j = i + SEQ_MARK.length;
    let v = 0;
    let digits = 0;
    while (j < n && view[j] >= 0x30 && view[j] <= 0x39) v = v * 10 + view[j++] - 0x30, digits++;
    if (digits > 0 && j < n && view[j] === 0x22) out.push(v, at);
  }
}

/** (sequence number, arrival ms) pairs noted by this thread's sampled watches */
let arrivals: number[] = [];

/**
 * Opens job.count watches on this thread and counts their events into the shared
 * counters. Resolves once every watch has its response head (or failed).
 */
async function runFleet(job: FleetJob): Promise<() => void> {
  const counters = new Int32Array(job.counters);
  const ev = job.base + Slot.Events;
  const openSlot = job.base + Slot.Open;
  const failedSlot = job.base + Slot.Failed;
  const malformedSlot = job.base + Slot.Malformed;
  const readsSlot = job.base + Slot.Reads;
  const request = Buffer.from(job.request);
  const sockets: tls.TLSSocket[] = [];
  /** every socket of this thread decrypts into this one buffer; it is read before the next read */
  const readBuf = Buffer.allocUnsafe(64 * 1024);
  let session: Buffer | undefined;
  let opening = 0;
  const connectOne = () =>
    new Promise<void>((resolve) => {
      const counter = new WatchStreamCounter();
      const sampled = job.sampleEvery > 0 && opening++ % job.sampleEvery === 0;
      let opened = false;
      let settled = false;
      const settle = () => {
        if (!settled) {
          settled = true;
          resolve();
        }
      };
      const sock = tls.connect({
        host: job.host,
        port: job.port,
        rejectUnauthorized: false,
        ciphers: GO_TLS13_CIPHERS,
        ...job.tls,
        session,
        servername: undefined,
        onread: {
          buffer: readBuf,
          callback: (n: number, buf: Uint8Array) => {
            if (sampled) noteArrivals(buf, n, nowMs(), arrivals);
            const got = counter.feed(buf, n);
            Atomics.add(counters, readsSlot, 1);
            if (!opened && counter.status !== 0) {
              if (counter.status !== 200) {
                Atomics.add(counters, failedSlot, 1);
                sock.destroy();
                settle();
                return false;
              }
              opened = true;
              Atomics.add(counters, openSlot, 1);
              settle();
            }
            if (got > 0) Atomics.add(counters, ev, got);
            if (counter.broken || counter.ended) {
              if (counter.broken) Atomics.add(counters, malformedSlot, 1);
              sock.destroy();
              return false;
            }
            return true;
          },
        },
      } as tls.ConnectionOptions);
      sock.once('session', (s: Buffer) => (session ??= s));
      sock.on('secureConnect', () => sock.write(request));
      sock.on('error', () => {}); // a close follows
      sock.on('close', () => {
        if (opened) Atomics.sub(counters, openSlot, 1);
        else if (!settled) Atomics.add(counters, failedSlot, 1);
        opened = false;
        settle();
      });
      sockets.push(sock);
    });
  // Open in waves so that the handshakes do not all queue at once.
  const WAVE = 100;
  for (let i = 0; i < job.count; i += WAVE) {
    await Promise.all(Array.from({ length: Math.min(WAVE, job.count - i) }, connectOne));
  }
  return () => {
    for (const s of sockets) s.destroy();
  };
}

/** Fleet thread entry: open the watches, report, and close them when told. */
if (!isMainThread && (workerData as { fleet?: FleetJob })?.fleet) {
  const job = (workerData as { fleet: FleetJob }).fleet;
  void runFleet(job).then((closeAll) => {
    parentPort!.postMessage('opened');
    parentPort!.on('message', (m) => {
      if (m === 'take') {
        const a = Float64Array.from(arrivals);
        arrivals = [];
        parentPort!.postMessage(a, [a.buffer]);
        return;
      }
      if (m !== 'close') return;
      closeAll();
      // the sockets' close callbacks run on the next turns; then nothing keeps this thread
      parentPort!.close();
    });
  });
}

/** The raw watch request of a fleet's watches (the JS fleet's and the native one's). */
export function watchRequest(t: Target, path: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${new URL(t.url).host}\r\n${authLine(t)}Accept: application/json\r\n\r\n`;
}

/** The calling thread's parsing watches (see WatchFleet): what a fleet adds to its raw watches. */
export interface Samplers {
  malformed(): number;
  takeLatencies(): number[];
  takeTimedLatencies(): { at: number[]; ms: number[] };
  /** (sequence number, arrival ms) pairs since the last call */
  takeArrivals(): Float64Array;
  close(): void;
}

/**
 * Opens `samplers` watches of path on the calling thread with node's https, each event
 * parsed: latencies from the send time in annotation, arrivals of sequenced creates, and
 * the lines that do not parse. Shared by the JS and the native fleets, so that both report
 * the same idle readers beside their own.
 */
export function openSamplers(t: Target, path: string, samplers: number, annotation: string): Samplers {
  const reqs: Array<{ destroy(): void }> = [];
  let latencies: number[] = [];
  /** Date.now() at which each of latencies arrived */
  let arrivals: number[] = [];
  /** (sequence number, arrival ms) pairs of sequenced creates seen by the samplers */
  let samplerArrivals: number[] = [];
  let malformed = 0;
  for (let i = 0; i < samplers; i++) {
    const req = https.get(t.url + path, { headers: authHeaders(t), rejectUnauthorized: false, ciphers: GO_TLS13_CIPHERS, ...t.tls }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        buf += c;
        let j;
        while ((j = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, j).trim();
          buf = buf.slice(j + 1);
          if (!line) continue;
          let ev: any;
          try {
            ev = JSON.parse(line);
          } catch {
            // A frame that does not parse is a server fault: counted and reported, not fatal.
            malformed++;
            continue;
          }
          const at = nowMs();
          const sent = Number(ev?.object?.metadata?.annotations?.[annotation]);
          if (sent) {
            const now = Date.now();
            latencies.push(now - sent);
            arrivals.push(now);
          }
          const seq = ev?.object?.metadata?.annotations?.[SEQ_ANNOTATION];
          if (seq !== undefined) samplerArrivals.push(Number(seq), at);
        }
      });
      res.on('error', () => {});
    });
    req.on('error', () => {});
    reqs.push(req);
  }
  return {
    malformed: () => malformed,
    takeLatencies: () => {
      const l = latencies;
      latencies = [];
      arrivals = [];
      return l;
    },
    takeTimedLatencies: () => {
      const r = { at: arrivals, ms: latencies };
      latencies = [];
      arrivals = [];
      return r;
    },
    takeArrivals: () => {
      const s = Float64Array.from(samplerArrivals);
      samplerArrivals = [];
      return s;
    },
    close: () => {
      for (const r of reqs) r.destroy();
    },
  };
}

/**
 * Opens count watches of path (and `samplers` parsing ones). onOpening, when given, is
 * called about every 250 ms while the watches open, with how many are open so far (the
 * bench samples the server's RSS against it). sampleEvery > 0: every sampleEvery-th raw
 * watch of each reading thread notes the arrivals of sequenced creates (takeArrivals).
 */
export async function openWatchFleet(t: Target, path: string, count: number, samplers = 5, annotation = 'bench/sent', threads = 2, onOpening?: (open: number) => void, sampleEvery = 0): Promise<WatchFleet> {
  const u = new URL(t.url);
  const request = watchRequest(t, path);
  const n = Math.max(1, Math.min(threads, count || 1));
  const counters = new SharedArrayBuffer(4 * Slot.Width * n);
  const view = new Int32Array(counters);
  const workers: Worker[] = [];
  const opened: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const share = Math.floor(count / n) + (i < count % n ? 1 : 0);
    const job: FleetJob = { host: u.hostname, port: Number(u.port || 443), tls: t.tls, request, count: share, counters, base: i * Slot.Width, sampleEvery };
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: { fleet: job } });
    workers.push(w);
    opened.push(
      new Promise((resolve, reject) => {
        w.once('message', () => resolve());
        w.once('error', reject);
        w.once('exit', () => resolve());
      }),
    );
  }
  // sums of one slot over the threads; the counters are 32-bit: read as unsigned, they
  // hold 4 billion events, far more than one run delivers
  const sum = (slot: Slot) => {
    let s = 0;
    for (let i = 0; i < n; i++) s += slot === Slot.Events || slot === Slot.Reads ? Atomics.load(view, i * Slot.Width + slot) >>> 0 : Atomics.load(view, i * Slot.Width + slot);
    return s;
  };
  const progress = onOpening ? setInterval(() => onOpening(sum(Slot.Open)), 250) : undefined;
  try {
    await Promise.all(opened);
  } finally {
    if (progress) clearInterval(progress);
  }
  onOpening?.(sum(Slot.Open));

  const samp = openSamplers(t, path, samplers, annotation);
  await new Promise((r) => setTimeout(r, 500));
  return {
    events: () => sum(Slot.Events),
    open: () => sum(Slot.Open),
    failed: () => sum(Slot.Failed),
    reads: () => sum(Slot.Reads),
    malformed: () => samp.malformed() + sum(Slot.Malformed),
    takeLatencies: samp.takeLatencies,
    takeTimedLatencies: samp.takeTimedLatencies,
    takeArrivals: async () => {
      const parts = await Promise.all(
        workers.map(
          (w) =>
            new Promise<Float64Array>((resolve) => {
              const on = (m: unknown) => {
                if (!(m instanceof Float64Array)) return;
                w.off('message', on);
                resolve(m);
              };
              w.on('message', on);
              w.postMessage('take');
            }),
        ),
      );
      const fleet = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
      let off = 0;
      for (const p of parts) fleet.set(p, (off += p.length) - p.length);
      return { fleet, samplers: samp.takeArrivals() };
    },
    close: async () => {
      samp.close();
      await Promise.all(
        workers.map(
          (w) =>
            new Promise<void>((resolve) => {
              const timer = setTimeout(() => void w.terminate(), 10_000);
              w.once('exit', () => {
                clearTimeout(timer);
                resolve();
              });
              w.postMessage('close');
            }),
        ),
      );
    },
  };
}

/** The p-th percentile of values (sorted: values already in ascending order, not copied). */
export function percentile(values: number[], p: number, sorted = false): number {
  if (values.length === 0) return NaN;
  const s = sorted ? values : [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

/**
 * Latencies (ms) of noted arrivals, from each create's acknowledgement (from = 'ack', the
 * issue's definition) or its send: arrival pairs whose create has no such time (not
 * acknowledged, or of another clock) are left out.
 */
export function latenciesOf(arrivals: Float64Array, clock: WriteClock, from: 'ack' | 'send'): number[] {
  return timedLatenciesOf(arrivals, clock, from).ms;
}

/** The same, each with its arrival time (ms since the epoch): at[i] is when ms[i] was seen. */
export function timedLatenciesOf(arrivals: Float64Array, clock: WriteClock, from: 'ack' | 'send'): { at: number[]; ms: number[] } {
  const t = new Float64Array(from === 'ack' ? clock.acked : clock.sent);
  const at: number[] = [];
  const ms: number[] = [];
  for (let i = 0; i + 1 < arrivals.length; i += 2) {
    const seq = arrivals[i];
    if (seq < t.length && t[seq] > 0) {
      at.push(arrivals[i + 1]);
      ms.push(arrivals[i + 1] - t[seq]);
    }
  }
  return { at, ms };
}
