// msgpackr against what the server does today (issue 18, "the card's packages where they serve").
//
// 1. The thread protocol (workers/shard/protocol.ts): a write batch of 50 ConfigMaps of about
//    1 KiB (WriteOp.obj, the object the shard encodes) and a commit message of 50 records
//    (CommittedEvent.rec, ~1.1 KiB each), sent over a real MessagePort to a worker thread:
//    - clone:   postMessage(msg), the structured clone (today);
//    - msgpack: msgpackr pack (plain maps), the bytes copied out of the packer's reused
//               buffer into an ArrayBuffer of their own, posted with that buffer transferred,
//               unpacked on the other side;
//    - records: the same with msgpackr's record structures (`sequential`: each structure's
//               definition travels once, with the first message that uses it).
//    The sender's cost is the synchronous time of building and posting each message; the
//    receiver's is its event loop's active time (deserialization and dispatch) per message.
//    With `fronts` 2 the commit goes to two ports, as a shard posts each commit to every
//    front thread: the clone serializes it once per port, msgpack packs once and copies per port.
// 2. The write-ahead log record (workers/shard/wal.ts encodeEntry, record.ts): the object's
//    JSON as today, against its msgpack; the bytes, the shard's encoding time, and the time
//    a read of the record then takes to serve JSON (today: a view of the record's bytes).
//
//   npm run build && node dist/bench/msgpackr-vs-clone.js [--messages 2000] [--records 20000]
//
// msgpackr is not the server's (measured, not used: bench/README.md, "piscina and msgpackr");
// it is loaded by name at run time: lmdb's own copy, or `npm i --no-save msgpackr@2`.
import { MessageChannel, Worker, isMainThread, workerData, type MessagePort } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { crc32 } from 'node:zlib';
import { deepStrictEqual } from 'node:assert';
import { encodeEntry, payload } from '../workers/shard/wal.js';
import { recordValue, writeRecordHead, FIXED } from '../workers/shard/record.js';
import { encodeForCommit, orderedObject } from '../src/codec/json.js';
import { configMap, pod } from './sample-objects.js';

type Options = Record<string, unknown>;
interface Unpacker {
  unpack(b: Uint8Array): any;
}
interface Packer extends Unpacker {
  pack(v: unknown): Buffer;
}
const MSGPACKR = 'msgpackr';
const { Packr, Unpackr, isNativeAccelerationEnabled } = (await import(MSGPACKR)) as {
  Packr: new (o?: Options) => Packer;
  Unpackr: new (o?: Options) => Unpacker;
  isNativeAccelerationEnabled: boolean;
};

type Mode = 'clone' | 'msgpack' | 'records' | 'records-copy';
type Shape = 'write' | 'write-spread' | 'write-varied' | 'commit';
const OPTIONS: Record<Exclude<Mode, 'clone'>, Options> = { msgpack: { useRecords: false }, records: { sequential: true }, 'records-copy': { sequential: true, copyBuffers: true } };
const MODES: Record<Shape, Mode[]> = {
  write: ['clone', 'msgpack', 'records'],
  'write-spread': ['clone', 'msgpack', 'records'],
  'write-varied': ['clone', 'msgpack', 'records'],
  // records-copy: each record copied out of the message (a cache entry keeps its record's bytes)
  commit: ['clone', 'msgpack', 'records', 'records-copy'],
};
/** messages between two waits for the receiver (bounds what is queued) */
const WINDOW = 100;

function message(shape: Shape, seq: number): any {
  if (shape === 'commit') {
    const events = [];
    for (let i = 0; i < 50; i++) {
      const obj = configMap(seq * 50 + i, 1024);
      const { head, tail } = encodeForCommit(obj);
      const rv = 100_000 + seq * 50 + i;
      events.push({ id: (seq * 50 + i) * 64, rv, rec: payload(encodeEntry({ rv, prev: 0, ts: Date.now(), type: 'ADDED', gr: 'configmaps', key: `bench/cm-${i}` }, 0, head + rv + tail)) });
    }
    return { t: 'commit', refused: [], events, lastRv: 100_000 + seq * 50 + 49 };
  }
  const ops = [];
  for (let i = 0; i < 50; i++) {
    const obj = configMap(seq * 50 + i, 1024, shape !== 'write');
    if (shape === 'write-varied') {
      // every object its own keys, as real ConfigMaps and labels are (a record structure each)
      obj.data = Object.fromEntries(Object.entries(obj.data).map(([k, v]) => [`${k}-${seq}-${i}`, v]));
      obj.metadata.labels[`team-${seq * 50 + i}`] = 'x';
    }
    ops.push({ id: (seq * 50 + i) * 64, type: 'ADDED', gr: 'configmaps', key: `bench/${obj.metadata.name}`, expect: -1, obj });
  }
  return { t: 'write', ops };
}

/** what the receiver looks at (the shard encodes each op's object; a front reads each record) */
function touch(m: any): number {
  if (m.t === 'commit') {
    let n = 0;
    for (const e of m.events) n += e.rec.byteLength;
    return n;
  }
  return m.ops.length + m.ops[m.ops.length - 1].obj.metadata.name.length;
}

if (!isMainThread && workerData?.msgpackrBench) {
  // The receiver: every port gets the same handler.
  const ports = workerData.ports as MessagePort[];
  const control = ports[0];
  let unpackr: Unpacker | undefined;
  let count = 0;
  let sink = 0;
  let elu0 = performance.eventLoopUtilization();
  const onMessage = (m: any) => {
    if (m instanceof ArrayBuffer) {
      sink += touch(unpackr!.unpack(new Uint8Array(m)));
    } else if (m.c === 'begin') {
      unpackr = m.mode === 'clone' ? undefined : new Unpackr({ ...OPTIONS[m.mode as Exclude<Mode, 'clone'>] });
      count = 0;
      elu0 = performance.eventLoopUtilization();
      return;
    } else if (m.c === 'end') {
      control.postMessage({ c: 'done', activeMs: performance.eventLoopUtilization(elu0).active, count, sink });
      return;
    } else if (m.c === 'exit') {
      for (const p of ports) p.close();
      return;
    } else {
      sink += touch(m);
    }
    if (++count % (WINDOW * ports.length) === 0) control.postMessage({ c: 'drained', count });
  };
  for (const p of ports) p.on('message', onMessage);
} else if (isMainThread) {
  const args = process.argv.slice(2);
  const arg = (name: string, d: number) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : d;
  };
  const messages = arg('--messages', 2000);
  const recordCount = arg('--records', 20000);

  // Round trips first: what the receiver gets is what was sent (bin comes back as a Buffer).
  const plain = (v: any): any => JSON.parse(JSON.stringify(v, (_k, x) => (x && x.type === 'Buffer' && Array.isArray(x.data) ? x.data : x instanceof Uint8Array ? Array.from(x) : x)));
  for (const mode of ['msgpack', 'records', 'records-copy'] as const) {
    const p = new Packr({ ...OPTIONS[mode] });
    const u = new Unpackr({ ...OPTIONS[mode] });
    for (const shape of ['write', 'write-spread', 'write-varied', 'commit'] as const) {
      for (let s = 0; s < 3; s++) {
        const m = message(shape, s);
        deepStrictEqual(plain(u.unpack(Uint8Array.prototype.slice.call(p.pack(m)))), plain(m));
      }
    }
  }

  async function runPorts(fronts: number) {
    const chans = Array.from({ length: fronts }, () => new MessageChannel());
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: { msgpackrBench: true, ports: chans.map((c) => c.port2) }, transferList: chans.map((c) => c.port2) });
    const out = chans.map((c) => c.port1);
    const control = out[0];
    const reply = (c: string) => new Promise<any>((resolve) => {
      const on = (m: any) => {
        if (m.c !== c) return;
        control.off('message', on);
        resolve(m);
      };
      control.on('message', on);
    });
    // The messages are built beforehand (a front builds its batch as writes come in; not measured).
    const pool = new Map<Shape, any[]>();
    for (const shape of ['write', 'write-spread', 'write-varied', 'commit'] as const) pool.set(shape, Array.from({ length: 20 }, (_, s) => message(shape, s)));
    const run = async (shape: Shape, mode: Mode, n: number) => {
      const msgs = pool.get(shape)!;
      const packr = mode === 'clone' ? undefined : new Packr({ ...OPTIONS[mode] });
      control.postMessage({ c: 'begin', mode });
      let sendMs = 0;
      for (let i = 0; i < n; i++) {
        const m = msgs[i % msgs.length];
        const t = performance.now();
        if (!packr) {
          for (const p of out) p.postMessage(m);
        } else {
          const b = packr.pack(m);
          for (const p of out) {
            const ab = new ArrayBuffer(b.length);
            new Uint8Array(ab).set(b);
            p.postMessage(ab, [ab]);
          }
        }
        sendMs += performance.now() - t;
        if ((i + 1) % WINDOW === 0) await reply('drained');
      }
      control.postMessage({ c: 'end' });
      const done = await reply('done');
      return { sendUs: (sendMs / n) * 1000, recvUs: (done.activeMs / (n * fronts)) * 1000 };
    };
    const rows: string[] = [];
    for (const shape of fronts === 1 ? (['write', 'write-spread', 'write-varied', 'commit'] as const) : (['commit'] as const)) {
      const rp = new Packr({ ...OPTIONS.records });
      rp.pack(pool.get(shape)![0]);
      const bytes: Record<Mode, number> = { clone: 0, msgpack: new Packr({ ...OPTIONS.msgpack }).pack(pool.get(shape)![0]).length, records: rp.pack(pool.get(shape)![1]).length, 'records-copy': 0 };
      bytes['records-copy'] = bytes.records;
      for (const mode of MODES[shape]) {
        await run(shape, mode, Math.min(400, messages));
        const r = [];
        for (let k = 0; k < 3; k++) r.push(await run(shape, mode, messages));
        r.sort((a, b) => a.sendUs + a.recvUs - (b.sendUs + b.recvUs));
        const m = r[1];
        rows.push(`${shape}\tfronts ${fronts}\t${mode}\tsend ${m.sendUs.toFixed(1)} µs\treceive ${m.recvUs.toFixed(1)} µs per port\t${mode === 'clone' ? '' : `${bytes[mode]} B packed`}`);
        console.log(rows[rows.length - 1]);
      }
    }
    control.postMessage({ c: 'exit' });
    for (const p of out) p.close();
    await w.terminate();
  }
  console.log(`thread protocol: per message of 50 (median of 3 runs of ${messages} messages; msgpackr native extract: ${isNativeAccelerationEnabled})`);
  await runPorts(1);
  await runPorts(2);

  // 2. The log record.
  const walRun = (label: string, make: (i: number) => Record<string, any>) => {
    const objs = Array.from({ length: recordCount }, (_, i) => make(i));
    const packr = new Packr({ useRecords: false });
    const unpackr = new Unpackr({ useRecords: false });
    const base = { prev: 0, ts: Date.now(), type: 'ADDED' as const, gr: 'configmaps' };
    const jsonEntries: Buffer[] = [];
    const packEntries: Buffer[] = [];
    let t = performance.now();
    for (let i = 0; i < objs.length; i++) {
      const rv = 100_000 + i;
      const { head, tail } = encodeForCommit(objs[i]);
      jsonEntries.push(encodeEntry({ ...base, rv, key: `bench/${i}` }, 0, head + rv + tail));
    }
    const jsonEncUs = ((performance.now() - t) / objs.length) * 1000;
    t = performance.now();
    for (let i = 0; i < objs.length; i++) {
      const rv = 100_000 + i;
      const o = orderedObject(objs[i]);
      o.metadata = { ...o.metadata, resourceVersion: String(rv) };
      packEntries.push(packedEntry({ ...base, rv, key: `bench/${i}` }, 0, packr.pack(o)));
    }
    const packEncUs = ((performance.now() - t) / objs.length) * 1000;
    // A read serves the object's JSON: today a view of the record; from msgpack, unpack and stringify.
    let sink = 0;
    t = performance.now();
    for (const e of jsonEntries) sink += recordValue(payload(e)).subarray(1).length;
    const jsonReadUs = ((performance.now() - t) / objs.length) * 1000;
    t = performance.now();
    for (const e of packEntries) sink += Buffer.from(JSON.stringify(unpackr.unpack(recordValue(payload(e)).subarray(1)))).length;
    const packReadUs = ((performance.now() - t) / objs.length) * 1000;
    deepStrictEqual(unpackr.unpack(recordValue(payload(packEntries[7])).subarray(1)), JSON.parse(recordValue(payload(jsonEntries[7])).subarray(1).toString()));
    const mean = (es: Buffer[]) => es.reduce((s, e) => s + e.length, 0) / es.length;
    console.log(`${label}\tJSON record ${mean(jsonEntries).toFixed(0)} B, encode ${jsonEncUs.toFixed(2)} µs, serve as JSON ${jsonReadUs.toFixed(3)} µs\tmsgpack record ${mean(packEntries).toFixed(0)} B, encode ${packEncUs.toFixed(2)} µs, serve as JSON ${packReadUs.toFixed(2)} µs\t(${sink > 0 ? 'ok' : ''})`);
  };
  console.log(`\nwrite-ahead log record, per record (${recordCount} records)`);
  for (let k = 0; k < 2; k++) {
    walRun('ConfigMap 1 KiB, one value', (i) => configMap(i, 1024));
    walRun('ConfigMap 1 KiB, 20 keys', (i) => configMap(i, 1024, true));
    walRun('Pod ~2.5 KiB', pod);
  }
}

/** encodeEntry with the value's bytes given (wal.ts writes the JSON text straight in). */
function packedEntry(r: { rv: number; prev: number; ts: number; type: 'ADDED'; gr: string; key: string }, flag: number, value: Uint8Array): Buffer {
  const HEADER = 8;
  const grLen = Buffer.byteLength(r.gr);
  const keyLen = Buffer.byteLength(r.key);
  const payloadLen = FIXED + grLen + keyLen + 1 + value.length;
  const b = Buffer.allocUnsafeSlow(HEADER + payloadLen);
  b.writeUInt32LE(payloadLen, 0);
  let o = writeRecordHead(r, b, HEADER);
  b[o++] = flag;
  b.set(value, o);
  b.writeUInt32LE(crc32(b.subarray(HEADER)), 4);
  return b;
}
