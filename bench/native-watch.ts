// The native watch fleet (native/loadgen/watchfleet.c): the JS fleet's raw watches (same
// request bytes, events counted per watch, every sampleEvery-th watch noting the arrival of
// each sequenced create) held by a C program with epoll and OpenSSL in a process of its
// own. The JS fleet costs ~4.5 µs of CPU per event, nearly one of the machine's two cores
// at the watch bench's calm load, so its latencies mostly measured how the server and the
// client shared the CPU; the C fleet costs a fraction of that. The five JS samplers (idle
// parsing readers on the calling thread) are the JS fleet's, kept as they are.
//
// Optional as the native load client is: built with cc on first use (native-load.ts), and
// where it cannot be, openNativeWatchFleet says so once and returns null.
//
// Thread ownership: the fleet's counts and pending answers belong to the calling thread
// (the child's stdout is read on its event loop); the child owns the watches.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { nativeTool } from './native-load.js';
import { nowMs } from './rate-writer.js';
import { openSamplers, watchRequest, type WatchFleet } from './watch-load.js';
import type { Target } from './lib.js';

export interface NativeWatchFleet extends WatchFleet {
  /** the events each raw watch counted so far, in opening order */
  eventsPerWatch(): Promise<number[]>;
  pid: number;
}

/** Whether the native fleet can run here (builds it on first use). */
export async function nativeWatchAvailable(): Promise<boolean> {
  return (await nativeTool('watchfleet')) !== null;
}

/**
 * openWatchFleet's fleet (same arguments, without the thread count: the C fleet is one
 * thread), or null when the native fleet cannot be built here.
 */
export async function openNativeWatchFleet(t: Target, path: string, count: number, samplers = 5, annotation = 'bench/sent', onOpening?: (open: number) => void, sampleEvery = 0): Promise<NativeWatchFleet | null> {
  const bin = await nativeTool('watchfleet');
  if (!bin) return null;
  const u = new URL(t.url);
  const dir = mkdtempSync(join(tmpdir(), 'kubeshard-watchfleet-'));
  const requestFile = join(dir, 'request');
  writeFileSync(requestFile, watchRequest(t, path), { mode: 0o600 });
  const args = ['--host', u.hostname.replace(/^\[(.*)\]$/, '$1'), '--port', u.port || '443', '--watches', String(count), '--request', requestFile, '--sample-every', String(sampleEvery)];
  if (t.tls?.cert && t.tls.key) {
    writeFileSync(join(dir, 'client.crt'), t.tls.cert);
    writeFileSync(join(dir, 'client.key'), t.tls.key, { mode: 0o600 });
    args.push('--cert', join(dir, 'client.crt'), '--key', join(dir, 'client.key'));
  }
  const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin!.on('error', () => {}); // a child that died: its exit says so
  // The child's arrival times are CLOCK_MONOTONIC ms, the clock of process.hrtime (libuv's
  // uv_hrtime) and of performance.now(): one offset, read once, puts them on nowMs(), the
  // clock of the writer's send and acknowledgement times. (CLOCK_REALTIME would follow
  // wall-clock adjustments that nowMs, a monotonic count from a fixed origin, does not.)
  const offset = nowMs() - Number(process.hrtime.bigint()) / 1e6;
  const counts = { events: 0, open: 0, failed: 0, malformed: 0, reads: 0 };
  /** answers to the commands sent, in order: the child answers them in order */
  const pending: Array<(fields: string[]) => void> = [];
  let exited = false;
  let onReady: (() => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    onReady = resolve;
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`native watch fleet exited before its watches opened (${signal ?? `exit ${code}`})`)));
  });
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      // a child gone mid-run answers nothing more: whoever waits gets an empty answer
      for (const p of pending.splice(0)) p([]);
      resolve();
    }),
  );
  createInterface({ input: child.stdout!, crlfDelay: Infinity }).on('line', (line) => {
    const f = line.split(' ');
    switch (f[0]) {
      case 's':
        counts.events = Number(f[1]);
        counts.open = Number(f[2]);
        counts.failed = Number(f[3]);
        counts.malformed = Number(f[4]);
        counts.reads = Number(f[5]);
        break;
      case 'r':
        onReady?.();
        break;
      case 'a':
      case 'w':
        pending.shift()?.(f);
        break;
    }
  });
  const ask = (cmd: 't' | 'w') =>
    new Promise<string[]>((resolve) => {
      if (exited) return resolve([]);
      pending.push(resolve);
      child.stdin!.write(`${cmd}\n`);
    });

  const progress = onOpening ? setInterval(() => onOpening(counts.open), 250) : undefined;
  try {
    await ready;
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  } finally {
    if (progress) clearInterval(progress);
    // read by the child as it starts
    rmSync(dir, { recursive: true, force: true });
  }
  onOpening?.(counts.open);

  const samp = openSamplers(t, path, samplers, annotation);
  await new Promise((r) => setTimeout(r, 500));
  return {
    pid: child.pid!,
    events: () => counts.events,
    open: () => counts.open,
    failed: () => counts.failed,
    reads: () => counts.reads,
    malformed: () => samp.malformed() + counts.malformed,
    takeLatencies: samp.takeLatencies,
    takeTimedLatencies: samp.takeTimedLatencies,
    takeArrivals: async () => {
      const f = await ask('t');
      const fleet = new Float64Array(Math.max(0, f.length - 1));
      for (let i = 1; i + 1 < f.length; i += 2) {
        fleet[i - 1] = Number(f[i]);
        fleet[i] = Number(f[i + 1]) + offset;
      }
      return { fleet, samplers: samp.takeArrivals() };
    },
    eventsPerWatch: async () => (await ask('w')).slice(1).map(Number),
    close: async () => {
      samp.close();
      // the end of its input closes every watch; a child that does not go is killed
      child.stdin!.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(timer);
    },
  };
}
