// Poly1305 (Bernstein; RFC 8439 section 2.5), the one-time authenticator of NaCl's
// secretbox. Node's crypto offers Poly1305 only inside ChaCha20-Poly1305, not on its own,
// so it is written here.
//
// The accumulator and r are ten 13-bit limbs held in doubles: a limb product is below
// 2^30 and a row of ten of them below 2^34, far inside the 2^53 a double holds exactly,
// so a block costs 100 multiplications and no BigInt. The final reduction, done once a
// message, uses BigInt for clarity.
//
// Stateless: every call works on its arguments only.

const P = (1n << 130n) - 5n;
const MASK13 = 0x1fff;

/** Splits 16 little-endian bytes at `at` into ten 13-bit limbs (limb 9 gets `hibit` on top). */
function limbs(b: Uint8Array, at: number, out: Float64Array, hibit: number): void {
  const t0 = b[at] | (b[at + 1] << 8);
  const t1 = b[at + 2] | (b[at + 3] << 8);
  const t2 = b[at + 4] | (b[at + 5] << 8);
  const t3 = b[at + 6] | (b[at + 7] << 8);
  const t4 = b[at + 8] | (b[at + 9] << 8);
  const t5 = b[at + 10] | (b[at + 11] << 8);
  const t6 = b[at + 12] | (b[at + 13] << 8);
  const t7 = b[at + 14] | (b[at + 15] << 8);
  out[0] = t0 & MASK13;
  out[1] = ((t0 >>> 13) | (t1 << 3)) & MASK13;
  out[2] = ((t1 >>> 10) | (t2 << 6)) & MASK13;
  out[3] = ((t2 >>> 7) | (t3 << 9)) & MASK13;
  out[4] = ((t3 >>> 4) | (t4 << 12)) & MASK13;
  out[5] = (t4 >>> 1) & MASK13;
  out[6] = ((t4 >>> 14) | (t5 << 2)) & MASK13;
  out[7] = ((t5 >>> 11) | (t6 << 5)) & MASK13;
  out[8] = ((t6 >>> 8) | (t7 << 8)) & MASK13;
  out[9] = (t7 >>> 5) | hibit;
}

/** The 16-byte Poly1305 tag of `msg` under a 32-byte one-time key (r then s). */
export function poly1305(msg: Uint8Array, key: Uint8Array): Uint8Array {
  const rb = new Uint8Array(16);
  rb.set(key.subarray(0, 16));
  // clamp r: the top four bits of bytes 3, 7, 11, 15 and the low two of bytes 4, 8, 12 cleared
  rb[3] &= 15; rb[7] &= 15; rb[11] &= 15; rb[15] &= 15;
  rb[4] &= 252; rb[8] &= 252; rb[12] &= 252;
  const r = new Float64Array(10);
  limbs(rb, 0, r, 0);
  const r5 = r.map((v) => v * 5);
  const h = new Float64Array(10);
  const m = new Float64Array(10);
  const d = new Float64Array(10);
  const last = new Uint8Array(16);

  for (let at = 0; at < msg.length; at += 16) {
    if (msg.length - at >= 16) limbs(msg, at, m, 1 << 11);
    else {
      // a short last block: its bytes, then 1, then zeros, and no 2^128 bit
      last.fill(0);
      last.set(msg.subarray(at));
      last[msg.length - at] = 1;
      limbs(last, 0, m, 0);
    }
    for (let i = 0; i < 10; i++) h[i] += m[i];
    // d = h * r mod 2^130 - 5: a product that lands past limb 9 wraps round times 5
    for (let i = 0; i < 10; i++) {
      let s = 0;
      for (let j = 0; j <= i; j++) s += h[j] * r[i - j];
      for (let j = i + 1; j < 10; j++) s += h[j] * r5[i - j + 10];
      d[i] = s;
    }
    let c = 0;
    for (let i = 0; i < 10; i++) {
      const v = d[i] + c;
      c = Math.floor(v / 8192);
      h[i] = v - c * 8192;
    }
    // the carry out of limb 9 is a multiple of 2^130, which is 5 mod p
    let v = h[0] + c * 5;
    c = Math.floor(v / 8192);
    h[0] = v - c * 8192;
    h[1] += c;
  }

  let acc = 0n;
  for (let i = 9; i >= 0; i--) acc = (acc << 13n) + BigInt(h[i]);
  acc %= P;
  let s = 0n;
  for (let i = 31; i >= 16; i--) s = (s << 8n) + BigInt(key[i]);
  let tag = (acc + s) & ((1n << 128n) - 1n);
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++) {
    out[i] = Number(tag & 0xffn);
    tag >>= 8n;
  }
  return out;
}
