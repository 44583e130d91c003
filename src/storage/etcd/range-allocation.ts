// The NodePort allocations of replicas that share etcd, where kube-apiserver keeps them: the
// RangeAllocation at `<prefix>/ranges/servicenodeports` (kube's portallocator over its etcd
// allocator, storage/etcd.go: a bitmap of the range, bit i for port min+i, in big.Int's
// big-endian bytes, updated by a compare-and-swap on the key's mod_revision). A claim sets
// the bits of the ports asked for, or none when one of them is already set; a release
// clears them. Two replicas claiming one port: the second transaction finds the revision
// changed, reads again and finds the bit set, so one port is never handed out twice.
//
// Written as JSON (kube's recognizing decoder reads JSON); read as JSON or as the protobuf
// kube-apiserver writes (runtime.Unknown envelope; RangeAllocation fields 2 range, 3 data).
//
// Thread ownership: the main thread (the allocators'); the etcd client is the backend's.
import { posix } from 'node:path';
import type { EtcdClient } from './client.js';

export interface NodePortClaims {
  /** Claims every port or none: resolves with the ports another writer holds (empty: all claimed). */
  claim(ports: number[]): Promise<number[]>;
  release(ports: number[]): Promise<void>;
  /** The ports set in storage now. */
  snapshot(): Promise<Set<number>>;
}

/** Reads one protobuf varint at b[i]: [value, next index]. */
function varint(b: Buffer, i: number): [number, number] {
  let v = 0;
  let mul = 1;
  for (;;) {
    const byte = b[i++];
    if (byte === undefined) throw new Error('truncated varint');
    v += (byte & 0x7f) * mul;
    if (byte < 0x80) return [v, i];
    mul *= 128;
  }
}

/** The length-delimited fields of a message: field number -> bytes (the last one wins). */
function fields(b: Buffer): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  let i = 0;
  while (i < b.length) {
    let key: number;
    [key, i] = varint(b, i);
    const wire = key & 7;
    if (wire === 2) {
      let len: number;
      [len, i] = varint(b, i);
      out.set(key >>> 3, b.subarray(i, i + len));
      i += len;
    } else if (wire === 0) {
      [, i] = varint(b, i);
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const K8S_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** The stored RangeAllocation's range text and bitmap. */
export function decodeRangeAllocation(value: Buffer): { range: string; bits: bigint } {
  let range = '';
  let data: Buffer;
  if (value.subarray(0, 4).equals(K8S_MAGIC)) {
    const raw = fields(value.subarray(4)).get(2) ?? Buffer.alloc(0);
    const f = fields(raw);
    range = f.get(2)?.toString('utf8') ?? '';
    data = f.get(3) ?? Buffer.alloc(0);
  } else {
    const o = JSON.parse(value.toString('utf8'));
    range = o.range ?? '';
    data = Buffer.from(o.data ?? '', 'base64');
  }
  return { range, bits: data.length ? BigInt('0x' + data.toString('hex')) : 0n };
}

export function encodeRangeAllocation(range: string, bits: bigint): Buffer {
  let hex = bits === 0n ? '' : bits.toString(16);
  if (hex.length % 2) hex = '0' + hex;
  const obj = { kind: 'RangeAllocation', apiVersion: 'v1', metadata: { creationTimestamp: null }, range, data: Buffer.from(hex, 'hex').toString('base64') };
  return Buffer.from(JSON.stringify(obj) + '\n');
}

export class EtcdNodePortClaims implements NodePortClaims {
  readonly key: string;
  private readonly rangeText: string;

  constructor(
    private readonly client: EtcdClient,
    prefix: string,
    private readonly min: number,
    max: number,
  ) {
    this.key = posix.join(prefix || '/', 'ranges', 'servicenodeports');
    this.rangeText = `${min}-${max}`;
  }

  /** kube's guaranteed update of the bitmap: read, change, write if unchanged since, else again. */
  private async update(change: (bits: bigint) => bigint | null): Promise<boolean> {
    for (;;) {
      const { kv } = await this.client.get(this.key);
      let bits = 0n;
      if (kv) {
        try {
          const cur = decodeRangeAllocation(kv.value);
          // (a bitmap of another range is not ours to read: kube's repair rebuilds it)
          if (cur.range === this.rangeText) bits = cur.bits;
        } catch {
          // unreadable: rebuilt from what this writer knows
        }
      }
      const next = change(bits);
      if (next === null) return false;
      if (next === bits && kv) return true;
      const r = await this.client.txn({
        compare: [kv ? { key: this.key, target: 'modRevision', result: '=', value: kv.modRevision } : { key: this.key, target: 'createRevision', result: '=', value: 0 }],
        success: [{ put: { key: this.key, value: encodeRangeAllocation(this.rangeText, next) } }],
      });
      if (r.succeeded) return true;
    }
  }

  async claim(ports: number[]): Promise<number[]> {
    if (ports.length === 0) return [];
    let taken: number[] = [];
    await this.update((bits) => {
      taken = ports.filter((p) => (bits >> BigInt(p - this.min)) & 1n);
      if (taken.length) return null;
      for (const p of ports) bits |= 1n << BigInt(p - this.min);
      return bits;
    });
    return taken;
  }

  async snapshot(): Promise<Set<number>> {
    const out = new Set<number>();
    await this.update((bits) => {
      out.clear();
      for (let i = 0; bits >> BigInt(i) > 0n; i++) if ((bits >> BigInt(i)) & 1n) out.add(this.min + i);
      return null;
    });
    return out;
  }

  async release(ports: number[]): Promise<void> {
    if (ports.length === 0) return;
    await this.update((bits) => {
      for (const p of ports) bits &= ~(1n << BigInt(p - this.min));
      return bits;
    });
  }
}
