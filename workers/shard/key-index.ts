// The shard worker's key index: "gr\nkey" -> version of the live object, for the writes'
// preconditions (etcd's kvindex). Absent means no live object.
//
// The keys loaded at start-up are kept as bytes, not strings: their UTF-8 bytes one after
// another in a slab, found through an open-addressing hash table of typed arrays; only the
// keys written since are in a PartedMap (a Map in parts: no rehash of every key at once; a
// deletion of a loaded key is a 0 there). Why: the load
// then makes no string and no object per key (a scan of a million records costs a copy of
// each key's bytes and a hash), the garbage collector has nothing to trace, and the index
// takes about 40 bytes per key instead of a Map entry and a string.
//
// Thread ownership: the shard worker alone.
import { PartedMap } from '../../src/storage/parted-map.js';

const EMPTY = -1;

/** FNV-1a over bytes[start, end). */
function hashBytes(b: Uint8Array, start: number, end: number): number {
  let h = 2166136261;
  for (let i = start; i < end; i++) h = Math.imul(h ^ b[i], 16777619);
  return h >>> 0;
}

export class KeyIndex {
  /** changes since the load: the version, or 0 once the key was deleted */
  private changed = new PartedMap<number>();
  /** the loaded keys: record r's "gr\nkey" bytes are slab[off[r], off[r] + len[r]) */
  private n = 0;
  private slab = Buffer.allocUnsafe(1 << 16);
  private used = 0;
  private off = new Uint32Array(1024);
  private len = new Uint16Array(1024);
  private hashes = new Uint32Array(1024);
  /** each loaded key's version, 0 when its last record was a deletion */
  private rvs = new Float64Array(1024);
  /** record numbers by hash, EMPTY where free; at most half full */
  private table = new Int32Array(2048).fill(EMPTY);
  /** where get() encodes the key asked for */
  private scratch = Buffer.allocUnsafe(1024);

  get(ik: string): number | undefined {
    const c = this.changed.get(ik);
    if (c !== undefined) return c === 0 ? undefined : c;
    if (this.n === 0) return undefined;
    if (ik.length * 3 > this.scratch.length) this.scratch = Buffer.allocUnsafe(ik.length * 3);
    const n = this.scratch.write(ik, 0, 'utf8');
    const r = this.find(this.scratch, 0, n, hashBytes(this.scratch, 0, n));
    return r === EMPTY || this.rvs[r] === 0 ? undefined : this.rvs[r];
  }

  set(ik: string, rv: number): void {
    this.changed.set(ik, rv);
  }

  delete(ik: string): void {
    if (this.n === 0) this.changed.delete(ik);
    else this.changed.set(ik, 0);
  }

  /**
   * Start-up: the record of a key whose "gr\nkey" bytes are grBytes, "\n", then
   * src[keyStart, keyEnd), at version rv (0: deleted). Records come in version order: a
   * later one of the same key replaces the earlier.
   */
  load(grBytes: Uint8Array, src: Uint8Array, keyStart: number, keyEnd: number, rv: number): void {
    const len = grBytes.length + 1 + keyEnd - keyStart;
    if (len > 0xffff) throw new Error(`key index: key too long (${len} bytes)`);
    // the key's bytes go to the end of the slab first: the lookup compares them there
    if (this.used + len > this.slab.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.slab.length * 2, this.used + len));
      this.slab.copy(grown, 0, 0, this.used);
      this.slab = grown;
    }
    // (short copies, hashed on the way: a loop costs less than a native call each; FNV-1a as hashBytes)
    const slab = this.slab;
    const at = this.used;
    let w = at;
    let h = 2166136261;
    for (let i = 0; i < grBytes.length; i++) h = Math.imul(h ^ (slab[w++] = grBytes[i]), 16777619);
    h = Math.imul(h ^ (slab[w++] = 0x0a), 16777619);
    for (let i = keyStart; i < keyEnd; i++) h = Math.imul(h ^ (slab[w++] = src[i]), 16777619);
    h >>>= 0;
    const r = this.find(this.slab, at, at + len, h);
    if (r !== EMPTY) {
      this.rvs[r] = rv;
      return;
    }
    if (this.n === this.off.length) this.growRecords();
    const nr = this.n++;
    this.off[nr] = at;
    this.len[nr] = len;
    this.hashes[nr] = h;
    this.rvs[nr] = rv;
    this.used += len;
    if (this.n * 2 > this.table.length) this.rehash(this.table.length * 2);
    else this.place(nr);
  }

  /**
   * Sizes the arrays for n keys of about bytesPerKey bytes each before a load: growing them
   * by doubling would leave the outgrown copies behind, as large as the index itself.
   */
  reserve(n: number, bytesPerKey = 32): void {
    if (n <= this.off.length) return;
    const size = 2 ** Math.ceil(Math.log2(n));
    this.growRecords(size);
    if (this.slab.length < n * bytesPerKey) {
      const grown = Buffer.allocUnsafe(n * bytesPerKey);
      this.slab.copy(grown, 0, 0, this.used);
      this.slab = grown;
    }
    if (this.table.length < size * 2) this.rehash(size * 2);
  }

  /** The record whose bytes equal b[start, end), or EMPTY. */
  private find(b: Uint8Array, start: number, end: number, h: number): number {
    const mask = this.table.length - 1;
    const len = end - start;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const r = this.table[i];
      if (r === EMPTY) return EMPTY;
      if (this.hashes[r] !== h || this.len[r] !== len) continue;
      const o = this.off[r];
      let j = 0;
      while (j < len && this.slab[o + j] === b[start + j]) j++;
      if (j === len) return r;
    }
  }

  private place(r: number): void {
    const mask = this.table.length - 1;
    let i = this.hashes[r] & mask;
    while (this.table[i] !== EMPTY) i = (i + 1) & mask;
    this.table[i] = r;
  }

  private rehash(size: number): void {
    this.table = new Int32Array(size).fill(EMPTY);
    for (let r = 0; r < this.n; r++) this.place(r);
  }

  private growRecords(size = this.off.length * 2): void {
    const grow = <T extends Uint32Array | Uint16Array | Float64Array>(a: T, make: (n: number) => T): T => {
      const b = make(size);
      b.set(a);
      return b;
    };
    this.off = grow(this.off, (k) => new Uint32Array(k));
    this.len = grow(this.len, (k) => new Uint16Array(k));
    this.hashes = grow(this.hashes, (k) => new Uint32Array(k));
    this.rvs = grow(this.rvs, (k) => new Float64Array(k));
  }
}
