// The watch bench's native fleet (native/loadgen/watchfleet.c, through bench/native-watch.ts)
// against a real server: every watch counts every event, and the sampled watches note the
// arrival of each sequenced create on the writer's clock. Skipped where it cannot be built
// (no cc, or no OpenSSL headers): it is an optional bench tool.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { nativeWatchAvailable, openNativeWatchFleet } from '../bench/native-watch.js';
import { SEQ_ANNOTATION, newWriteClock, nowMs } from '../bench/rate-writer.js';
import { latenciesOf } from '../bench/watch-load.js';
import type { Target } from '../bench/lib.js';
import { request, until, useServer, type TestServer } from './helpers/server.js';

const available = await nativeWatchAvailable();

describe.skipIf(!available)('native watch fleet', () => {
  let s: TestServer;
  useServer((x) => (s = x));
  const target = (): Target => ({ url: s.url, token: s.token, stop: async () => {} });

  it('counts every event on every watch and notes the sampled arrivals on the writer clock', async () => {
    expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'nwatch' } })).status).toBe(201);
    const path = '/api/v1/namespaces/nwatch/configmaps';
    const watchers = 20;
    const sampleEvery = 5;
    const opening: number[] = [];
    const fleet = (await openNativeWatchFleet(target(), `${path}?watch=1`, watchers, 1, 'bench/sent', (n) => opening.push(n), sampleEvery))!;
    try {
      expect(fleet.open()).toBe(watchers);
      expect(fleet.failed()).toBe(0);
      expect(opening.at(-1)).toBe(watchers);
      // a watch without a resourceVersion starts with the namespace's objects (its
      // kube-root-ca.crt ConfigMap): those come first on every watch
      const initial = (await request(s, 'GET', path)).json().items.length as number;
      await until(() => fleet.events() >= initial * watchers);
      const clock = newWriteClock(1024);
      const before = nowMs();
      // sequenced creates as rate-writer.ts makes them (its worker thread cannot load .ts
      // here): the sequence number in the annotation, send and acknowledgement times on the clock
      const sentAt = new Float64Array(clock.sent);
      const ackedAt = new Float64Array(clock.acked);
      const sent = 60;
      for (let b = 0; b < sent; b += 10) {
        await Promise.all(
          Array.from({ length: 10 }, async (_, j) => {
            const seq = b + j;
            sentAt[seq] = nowMs();
            const r = await request(s, 'POST', path, { metadata: { generateName: 'w-', annotations: { 'bench/sent': String(Date.now()), [SEQ_ANNOTATION]: String(seq) } }, data: { v: 'x'.repeat(200) } });
            expect(r.status).toBe(201);
            ackedAt[seq] = nowMs();
          }),
        );
      }
      const total = (initial + sent) * watchers;
      await until(() => fleet.events() >= total, 15_000);
      // nothing more than each create once per watch, and every watch saw every create
      await new Promise((r) => setTimeout(r, 200));
      expect(fleet.events()).toBe(total);
      expect(await fleet.eventsPerWatch()).toEqual(Array.from({ length: watchers }, () => initial + sent));
      expect(fleet.malformed()).toBe(0);
      expect(fleet.reads()).toBeGreaterThan(0);

      // watches 0, 5, 10 and 15 are sampled: each noted each create once
      const a = await fleet.takeArrivals();
      const sampled = watchers / sampleEvery;
      expect(a.fleet.length).toBe(2 * sent * sampled);
      const seen = new Map<number, number>();
      for (let i = 0; i < a.fleet.length; i += 2) seen.set(a.fleet[i], (seen.get(a.fleet[i]) ?? 0) + 1);
      expect([...seen.keys()].sort((x, y) => x - y)).toEqual(Array.from({ length: sent }, (_, i) => i));
      expect([...seen.values()].every((n) => n === sampled)).toBe(true);
      // on the writer's clock: after the run started, no later than now, and no earlier than
      // the create's send time (a clock off by more than the event's own latency fails here)
      const after = nowMs();
      for (let i = 0; i < a.fleet.length; i += 2) {
        expect(a.fleet[i + 1]).toBeGreaterThan(before);
        expect(a.fleet[i + 1]).toBeLessThanOrEqual(after);
        expect(a.fleet[i + 1]).toBeGreaterThanOrEqual(sentAt[a.fleet[i]]);
      }
      // every acknowledged create has its latencies, and a negative one would be a clock fault
      // larger than the gap between a create's response and its event (both leave the server
      // together; the ack's reader may lag, so a little below zero is possible, not seconds)
      const ack = latenciesOf(a.fleet, clock, 'ack');
      expect(ack.length).toBe(a.fleet.length / 2);
      expect(Math.min(...ack)).toBeGreaterThan(-1000);
      expect(Math.max(...ack)).toBeLessThan(15_000);
      // taken: the next call starts empty
      expect((await fleet.takeArrivals()).fleet.length).toBe(0);

      // the one sampler (a JS parsing watch) saw them too
      const samplerSeqs = new Set<number>();
      for (let i = 0; i < a.samplers.length; i += 2) samplerSeqs.add(a.samplers[i]);
      expect(samplerSeqs.size).toBe(sent);
    } finally {
      await fleet.close();
    }
  });

  it('counts the watches the server refuses as failed', async () => {
    const t = { ...target(), token: 'not-a-token' };
    const fleet = (await openNativeWatchFleet(t, '/api/v1/namespaces/default/configmaps?watch=1', 3, 0))!;
    try {
      expect(fleet.open()).toBe(0);
      expect(fleet.failed()).toBe(3);
      expect(fleet.malformed()).toBe(0);
    } finally {
      await fleet.close();
    }
  });

  it('leaves out a sequence mark that is no number rather than noting a wrong one', async () => {
    expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'nwatch-bad' } })).status).toBe(201);
    const path = '/api/v1/namespaces/nwatch-bad/configmaps';
    const fleet = (await openNativeWatchFleet(target(), `${path}?watch=1`, 2, 0, 'bench/sent', undefined, 1))!;
    try {
      for (const [i, v] of ['12x', '', '34'].entries()) expect((await request(s, 'POST', path, { metadata: { name: `c${i}`, annotations: { [SEQ_ANNOTATION]: v } } })).status).toBe(201);
      await until(() => fleet.events() >= 2 * (1 + 3)); // kube-root-ca.crt, then the three
      const a = await fleet.takeArrivals();
      expect([...a.fleet].filter((_, i) => i % 2 === 0)).toEqual([34, 34]);
    } finally {
      await fleet.close();
    }
  });

  it('undoes the chunked coding split anywhere, finds split marks, and tells a broken framing and an ended watch', async () => {
    // A TLS server of our own (the kubeshard server's certificate) that writes each watch's
    // response in small pieces, each its own TLS record, so the fleet reads them apart:
    // events and sequence marks split across chunks and reads, a chunk extension, then one
    // end per watch: the last chunk (the watch ends), a broken chunk, or none (it stays open).
    const certs = join(s.dataDir, 'certs');
    const ev = (seq: number) => JSON.stringify({ type: 'ADDED', object: { metadata: { name: `c${seq}`, annotations: { [SEQ_ANNOTATION]: String(seq) } } } }) + '\n';
    const body = ev(1) + '\n' + ev(22) + ev(333); // a bare newline (a stream's keep-alive) is no event
    const cuts = [0, 17, 18, 60, 61, body.length - 3, body.length];
    const chunks = cuts.slice(1).map((c, i) => body.slice(cuts[i], c)).map((d, i) => `${d.length.toString(16)}${i === 2 ? ';x=y' : ''}\r\n${d}\r\n`).join('');
    const head = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const ends = ['0\r\n\r\n', '2\r\nabXY', ''];
    let next = 0;
    const sockets: tls.TLSSocket[] = [];
    const server = tls.createServer({ cert: readFileSync(join(certs, 'apiserver.crt')), key: readFileSync(join(certs, 'apiserver.key')) }, (sock) => {
      sockets.push(sock);
      sock.on('error', () => {});
      let req = '';
      sock.on('data', async (d) => {
        req += d.toString('latin1');
        if (!req.includes('\r\n\r\n')) return;
        const wire = head + chunks + ends[next++ % ends.length];
        for (let i = 0; i < wire.length; i += 7) {
          sock.write(wire.slice(i, i + 7), 'latin1');
          await new Promise((res) => setImmediate(res));
        }
      });
    });
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    const port = (server.address() as AddressInfo).port;
    const fleet = (await openNativeWatchFleet({ url: `https://127.0.0.1:${port}`, token: 't', stop: async () => {} }, '/w?watch=1', 3, 0, 'bench/sent', undefined, 1))!;
    try {
      await until(async () => (await fleet.eventsPerWatch()).every((n) => n === 3) && fleet.open() === 1 && fleet.malformed() === 1).catch(async (e) => {
        throw new Error(`${e} ${await fleet.eventsPerWatch()} open ${fleet.open()} malformed ${fleet.malformed()}`);
      });
      expect(fleet.events()).toBe(9);
      expect(fleet.malformed()).toBe(1);
      expect(fleet.failed()).toBe(0);
      const seqs = [...(await fleet.takeArrivals()).fleet].filter((_, i) => i % 2 === 0).sort((a, b) => a - b);
      expect(seqs).toEqual([1, 1, 1, 22, 22, 22, 333, 333, 333]);
    } finally {
      await fleet.close();
      for (const x of sockets) x.destroy();
      await new Promise((res) => server.close(res));
    }
  });
});
