// The CRI log files: rotation by size (kubelet's container log manager: names, how many
// files are kept, modes), and the reader's options over large and rotated files, streamed
// with backpressure (a reader nobody consumes holds a bounded buffer), follow across a
// rotation.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable, type Readable } from 'node:stream';
import { CriLogWriter, readContainerLog, rotatedLogs, rotationStamp } from './cri-log.js';

const dir = () => mkdtempSync(join(tmpdir(), 'ks-cri-log-'));

async function until(fn: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}
const never = new AbortController().signal;

const text = async (r: Readable) => {
  const parts: Buffer[] = [];
  for await (const c of r) parts.push(c as Buffer);
  return Buffer.concat(parts).toString();
};

/** a clock that moves a second per call unless held */
function clock(start = Date.UTC(2026, 0, 2, 3, 4, 5)) {
  let t = start;
  return { now: () => new Date(t), tick: (ms: number) => (t += ms) };
}

describe('CRI log rotation', () => {
  it('rotates at maxSize, names files <log>.<YYYYMMDD-HHMMSS>, keeps maxFiles files, all 0600', () => {
    const d = dir();
    const path = join(d, '0.log');
    const c = clock();
    const w = new CriLogWriter(path, { maxSize: 1000, maxFiles: 3 }, c.now);
    const lines: string[] = [];
    for (let i = 0; i < 200; i++) {
      lines.push(`line ${String(i).padStart(4, '0')}`);
      w.write('stdout', Buffer.from(lines[i] + '\n'));
      c.tick(1000);
    }
    w.close();
    const rotated = rotatedLogs(path);
    expect(rotated.length).toBe(2); // maxFiles 3: the live file and two rotated ones
    for (const p of rotated) expect(p).toMatch(/\/0\.log\.\d{8}-\d{6}$/);
    expect(rotationStamp(new Date(Date.UTC(2026, 0, 2, 3, 4, 5)))).toBe('20260102-030405');
    expect(readdirSync(d).sort()).toEqual(['0.log', ...rotated.map((p) => p.slice(d.length + 1))].sort());
    for (const p of [...rotated, path]) {
      const st = statSync(p);
      expect(st.mode & 0o777).toBe(0o600);
      expect(st.size).toBeLessThanOrEqual(1000);
      expect(st.size).toBeGreaterThan(0);
    }
    // oldest to newest, the files hold the last lines written, in order and without a gap
    const kept = [...rotated, path].map((p) => readFileSync(p, 'utf8')).join('');
    const texts = kept
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ').slice(3).join(' '));
    expect(texts).toEqual(lines.slice(lines.length - texts.length));
    expect(texts.length).toBeGreaterThan(20);
  });

  it('two rotations within a second do not overwrite each other; maxSize below 0 never rotates', () => {
    const d = dir();
    const path = join(d, '1.log');
    const c = clock();
    const w = new CriLogWriter(path, { maxSize: 200, maxFiles: 50 }, c.now);
    for (let i = 0; i < 40; i++) w.write('stderr', Buffer.from(`same second ${i}\n`));
    w.close();
    const rotated = rotatedLogs(path);
    expect(rotated.length).toBeGreaterThan(3);
    expect(rotated[0]).toMatch(/\.20260102-030405$/);
    expect(rotated[1]).toMatch(/\.20260102-030405-1$/);
    const all = [...rotated, path].map((p) => readFileSync(p, 'utf8')).join('');
    expect(all.split('\n').filter(Boolean).length).toBe(40);

    const path2 = join(d, '2.log');
    const w2 = new CriLogWriter(path2, { maxSize: -1, maxFiles: 2 }, c.now);
    for (let i = 0; i < 100; i++) w2.write('stdout', Buffer.from(`x${i}\n`));
    w2.close();
    expect(rotatedLogs(path2)).toEqual([]);
  });

  it('tailLines reads the live file only after a rotation (kubelet reads no rotated file)', async () => {
    const d = dir();
    const path = join(d, '0.log');
    const c = clock();
    const w = new CriLogWriter(path, { maxSize: 700, maxFiles: 5 }, c.now);
    for (let i = 0; i < 25; i++) {
      w.write('stdout', Buffer.from(`row ${i}\n`));
      c.tick(1000);
    }
    w.close();
    expect(rotatedLogs(path).length).toBeGreaterThan(0);
    const live = readFileSync(path, 'utf8').split('\n').filter(Boolean).length;
    expect(live).toBeLessThan(25);
    expect(live).toBeGreaterThan(2);
    expect(await text(readContainerLog(path, { tailLines: 2 }, never, false, () => true))).toBe('row 23\nrow 24\n');
    const all = await text(readContainerLog(path, { tailLines: 100 }, never, false, () => true));
    expect(all.split('\n').filter(Boolean)).toEqual(Array.from({ length: live }, (_, i) => `row ${25 - live + i}`));
    expect(await text(readContainerLog(path, { tailLines: 0 }, never, false, () => true))).toBe('');
  });
});

describe('CRI log reading', () => {
  // several MiB in one file (under the default 10Mi), lines of known content
  const d = dir();
  const big = join(d, '0.log');
  const w = new CriLogWriter(big);
  const LINES = 60_000;
  const line = (i: number) => `${String(i).padStart(6, '0')} ${'x'.repeat(90)}\n`;
  for (let i = 0; i < LINES; i++) w.write(i % 7 ? 'stdout' : 'stderr', Buffer.from(line(i)));
  w.close();

  it('serves a log of several MiB with limitBytes and tailLines', async () => {
    expect(statSync(big).size).toBeGreaterThan(5 * 1024 * 1024);
    expect(rotatedLogs(big)).toEqual([]);
    const head = await text(readContainerLog(big, { limitBytes: 1000 }, never, false, () => true));
    expect(head).toBe(Array.from({ length: 11 }, (_, i) => line(i)).join('').slice(0, 1000));
    expect(await text(readContainerLog(big, { tailLines: 3 }, never, false, () => true))).toBe(line(LINES - 3) + line(LINES - 2) + line(LINES - 1));
    // tailLines then limitBytes, with timestamps: the cut falls after the prefix
    const ts = await text(readContainerLog(big, { tailLines: 2, timestamps: true, limitBytes: 40 }, never, false, () => true));
    expect(ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z 059998 x+$/);
    expect(ts.length).toBe(40);
    // a tail that reaches back over several read blocks
    const tail = await text(readContainerLog(big, { tailLines: 5000 }, never, false, () => true));
    expect(tail).toBe(Array.from({ length: 5000 }, (_, i) => line(LINES - 5000 + i)).join(''));
    const all = await text(readContainerLog(big, {}, never, false, () => true));
    expect(all.length).toBe(LINES * line(0).length);
    expect(all.slice(-line(0).length)).toBe(line(LINES - 1));
  });

  it('holds a bounded buffer when nobody reads (backpressure)', async () => {
    const r = readContainerLog(big, {}, never, false, () => true);
    // a consumer that never finishes its first write (a client that reads nothing)
    const sink = new Writable({ highWaterMark: 1024, write: () => {} });
    r.pipe(sink);
    await new Promise((res) => setTimeout(res, 300));
    const held = r.readableLength + sink.writableLength;
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThanOrEqual(256 * 1024);
    r.destroy();
  });

  it('partial records, since, a missing file', async () => {
    const d2 = dir();
    const p = join(d2, '0.log');
    const c = clock();
    const w2 = new CriLogWriter(p, undefined, c.now);
    w2.write('stdout', Buffer.from('a'.repeat(20_000) + '\nold\n'));
    c.tick(3_600_000);
    w2.write('stdout', Buffer.from('new\nunfinished'));
    w2.close();
    expect(await text(readContainerLog(p, {}, never, false, () => true))).toBe('a'.repeat(20_000) + '\nold\nnew\nunfinished');
    // since: the later of sinceTime and sinceSeconds
    const since = new Date(Date.UTC(2026, 0, 2, 3, 34, 5));
    expect(await text(readContainerLog(p, { sinceTime: since }, never, false, () => true))).toBe('new\nunfinished');
    // tailLines counts records, a P record among them (kubelet's tail)
    expect(await text(readContainerLog(p, { tailLines: 1 }, never, false, () => true))).toBe('unfinished');
    expect(await text(readContainerLog(join(d2, 'none.log'), {}, never, false, () => true))).toBe('');
  });

  it('follow keeps reading across rotations and ends once the instance is over', async () => {
    const d3 = dir();
    const p = join(d3, '0.log');
    const w3 = new CriLogWriter(p, { maxSize: 300, maxFiles: 2 });
    w3.write('stdout', Buffer.from('first\n'));
    let over = false;
    const r = readContainerLog(p, { follow: true }, never, true, () => over);
    let seen = '';
    r.on('data', (c: Buffer) => (seen += c.toString()));
    const ended = new Promise((res) => r.on('end', res));
    const expected = ['first'];
    // batches small enough for one rotation each; the next batch once the reader has the last
    for (let b = 0; b < 10; b++) {
      for (let i = 0; i < 4; i++) {
        w3.write('stdout', Buffer.from(`follow ${b}.${i}\n`));
        expected.push(`follow ${b}.${i}`);
      }
      const last = `follow ${b}.3\n`;
      for (let t = 0; !seen.includes(last); t++) {
        if (t > 500) throw new Error(`the follower did not get ${last}`);
        await new Promise((res) => setTimeout(res, 20));
      }
    }
    w3.write('stdout', Buffer.from('last words\n'));
    expected.push('last words');
    w3.close();
    over = true;
    await ended;
    expect(seen.split('\n').filter(Boolean)).toEqual(expected);
    expect(rotatedLogs(p).length).toBe(1);
  });

  it('follow loses nothing to several rotations between two of its reads', async () => {
    const d5 = dir();
    const p = join(d5, '0.log');
    const w5 = new CriLogWriter(p, { maxSize: 400, maxFiles: 10 });
    w5.write('stdout', Buffer.from('first\n'));
    let over = false;
    const r = readContainerLog(p, { follow: true }, never, true, () => over);
    let seen = '';
    r.on('data', (c: Buffer) => (seen += c.toString()));
    const ended = new Promise((res) => r.on('end', res));
    await until(() => seen === 'first\n');
    // all at once (no turn of the event loop between): four rotations before the reader looks again
    const expected = ['first'];
    for (let i = 0; i < 40; i++) {
      w5.write('stdout', Buffer.from(`burst ${i}\n`));
      expected.push(`burst ${i}`);
    }
    expect(rotatedLogs(p).length).toBeGreaterThanOrEqual(4);
    w5.close();
    over = true;
    await ended;
    expect(seen.split('\n').filter(Boolean)).toEqual(expected);
  });

  it('an aborted follow ends with what was read', async () => {
    const d4 = dir();
    const p = join(d4, '0.log');
    const w4 = new CriLogWriter(p);
    w4.write('stdout', Buffer.from('a\n'));
    const ac = new AbortController();
    const r = readContainerLog(p, { follow: true }, ac.signal, true, () => false);
    setTimeout(() => ac.abort(), 200);
    expect(await text(r)).toBe('a\n');
    w4.close();
  });
});
