// The watch load generator: tens of thousands of watches from one process. Each watch is
// a raw TLS socket with a hand-written HTTP/1.1 request; events are counted by scanning the
// bytes for `"type":"` without parsing them. A few "sampler" watches do parse their events,
// to measure latency from the writer's send time (an annotation) to arrival.
import tls from 'node:tls';
import https from 'node:https';
import { authHeaders, authLine, type Target } from './lib.js';

const MARK = Buffer.from('"type":"');

export interface WatchFleet {
  /** events counted over all raw watches */
  events(): number;
  open(): number;
  failed(): number;
  /** sampler lines that were not one JSON event (should stay 0) */
  malformed(): number;
  /** latencies (ms) seen by the samplers since the last call */
  takeLatencies(): number[];
  close(): void;
}

/**
 * Counts the event marks in a chunk without copying it: a mark split across two chunks is
 * found by looking at the few bytes kept from the previous chunk plus the start of this
 * one (a match there must start in the kept bytes, so nothing is counted twice).
 */
export function countMarks(buf: Buffer, carry: Buffer): { n: number; carry: Buffer } {
  let n = 0;
  const keep = MARK.length - 1;
  if (carry.length) {
    const edge = Buffer.concat([carry, buf.subarray(0, keep)]);
    if (edge.indexOf(MARK) >= 0) n++;
  }
  let i = buf.indexOf(MARK);
  while (i >= 0) {
    n++;
    i = buf.indexOf(MARK, i + MARK.length);
  }
  const tail = buf.length >= keep ? Buffer.from(buf.subarray(buf.length - keep)) : Buffer.concat([carry, buf]).subarray(-keep);
  return { n, carry: tail };
}

export async function openWatchFleet(t: Target, path: string, count: number, samplers = 5, annotation = 'bench/sent'): Promise<WatchFleet> {
  const u = new URL(t.url);
  let events = 0;
  let open = 0;
  let failed = 0;
  const sockets: tls.TLSSocket[] = [];
  const reqs: Array<{ destroy(): void }> = [];
  let latencies: number[] = [];
  let malformed = 0;
  const request = `GET ${path} HTTP/1.1\r\nHost: ${u.host}\r\n${authLine(t)}Accept: application/json\r\n\r\n`;
  const session: { s?: Buffer } = {};
  const connectOne = () =>
    new Promise<void>((resolve) => {
      const sock = tls.connect({ host: u.hostname, port: Number(u.port || 443), rejectUnauthorized: false, ...t.tls, session: session.s, servername: undefined });
      sock.once('session', (s) => (session.s ??= s));
      let carry: Buffer = Buffer.alloc(0);
      let headersDone = false;
      sock.on('secureConnect', () => sock.write(request));
      sock.on('data', (d: Buffer) => {
        if (!headersDone) {
          const i = d.indexOf('\r\n\r\n');
          if (i < 0) return;
          headersDone = true;
          if (!d.subarray(0, 15).toString().includes(' 200')) {
            failed++;
            sock.destroy();
            resolve();
            return;
          }
          open++;
          resolve();
          d = d.subarray(i + 4);
        }
        const r = countMarks(d, carry);
        events += r.n;
        carry = r.carry;
      });
      sock.on('error', () => {
        failed++;
        resolve();
      });
      sock.on('close', () => {
        if (headersDone) open--;
        resolve();
      });
      sockets.push(sock);
    });
  // Open in waves so that the handshakes do not all queue at once.
  const WAVE = 200;
  for (let i = 0; i < count; i += WAVE) {
    await Promise.all(Array.from({ length: Math.min(WAVE, count - i) }, connectOne));
  }
  for (let i = 0; i < samplers; i++) {
    const req = https.get(t.url + path, { headers: authHeaders(t), rejectUnauthorized: false, ...t.tls }, (res) => {
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
          const sent = Number(ev?.object?.metadata?.annotations?.[annotation]);
          if (sent) latencies.push(Date.now() - sent);
        }
      });
      res.on('error', () => {});
    });
    req.on('error', () => {});
    reqs.push(req);
  }
  await new Promise((r) => setTimeout(r, 500));
  return {
    events: () => events,
    open: () => open,
    failed: () => failed,
    malformed: () => malformed,
    takeLatencies: () => {
      const l = latencies;
      latencies = [];
      return l;
    },
    close: () => {
      for (const s of sockets) s.destroy();
      for (const r of reqs) r.destroy();
    },
  };
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
