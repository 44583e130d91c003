// The Salsa20 core, HSalsa20 and the XSalsa20 stream cipher (Bernstein), which NaCl's
// secretbox is built on. Node's crypto (OpenSSL 3) has no Salsa20 family cipher, so it is
// written here, over 32-bit words held in Int32Array/Uint32Array (the additions wrap with
// `| 0`, the rotations use `<<` and `>>>`).
//
// Stateless: every function works on its arguments only.

const SIGMA = new Uint32Array([0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]); // "expand 32-byte k"

function load32(b: Uint8Array, i: number): number {
  return (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;
}

function store32(b: Uint8Array, i: number, v: number): void {
  b[i] = v;
  b[i + 1] = v >>> 8;
  b[i + 2] = v >>> 16;
  b[i + 3] = v >>> 24;
}

/** The input block of the core: constants on the diagonal, key, 16 bytes of input (nonce and counter). */
function setup(x: Uint32Array, key: Uint8Array, input: Uint8Array): void {
  x[0] = SIGMA[0];
  x[1] = load32(key, 0);
  x[2] = load32(key, 4);
  x[3] = load32(key, 8);
  x[4] = load32(key, 12);
  x[5] = SIGMA[1];
  x[6] = load32(input, 0);
  x[7] = load32(input, 4);
  x[8] = load32(input, 8);
  x[9] = load32(input, 12);
  x[10] = SIGMA[2];
  x[11] = load32(key, 16);
  x[12] = load32(key, 20);
  x[13] = load32(key, 24);
  x[14] = load32(key, 28);
  x[15] = SIGMA[3];
}

/** 20 rounds (10 double rounds: columns then rows) over x, in place. */
function rounds(x: Uint32Array): void {
  let x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3], x4 = x[4], x5 = x[5], x6 = x[6], x7 = x[7];
  let x8 = x[8], x9 = x[9], x10 = x[10], x11 = x[11], x12 = x[12], x13 = x[13], x14 = x[14], x15 = x[15];
  let u: number;
  for (let i = 0; i < 20; i += 2) {
    // columns
    u = (x0 + x12) | 0; x4 ^= (u << 7) | (u >>> 25);
    u = (x4 + x0) | 0; x8 ^= (u << 9) | (u >>> 23);
    u = (x8 + x4) | 0; x12 ^= (u << 13) | (u >>> 19);
    u = (x12 + x8) | 0; x0 ^= (u << 18) | (u >>> 14);
    u = (x5 + x1) | 0; x9 ^= (u << 7) | (u >>> 25);
    u = (x9 + x5) | 0; x13 ^= (u << 9) | (u >>> 23);
    u = (x13 + x9) | 0; x1 ^= (u << 13) | (u >>> 19);
    u = (x1 + x13) | 0; x5 ^= (u << 18) | (u >>> 14);
    u = (x10 + x6) | 0; x14 ^= (u << 7) | (u >>> 25);
    u = (x14 + x10) | 0; x2 ^= (u << 9) | (u >>> 23);
    u = (x2 + x14) | 0; x6 ^= (u << 13) | (u >>> 19);
    u = (x6 + x2) | 0; x10 ^= (u << 18) | (u >>> 14);
    u = (x15 + x11) | 0; x3 ^= (u << 7) | (u >>> 25);
    u = (x3 + x15) | 0; x7 ^= (u << 9) | (u >>> 23);
    u = (x7 + x3) | 0; x11 ^= (u << 13) | (u >>> 19);
    u = (x11 + x7) | 0; x15 ^= (u << 18) | (u >>> 14);
    // rows
    u = (x0 + x3) | 0; x1 ^= (u << 7) | (u >>> 25);
    u = (x1 + x0) | 0; x2 ^= (u << 9) | (u >>> 23);
    u = (x2 + x1) | 0; x3 ^= (u << 13) | (u >>> 19);
    u = (x3 + x2) | 0; x0 ^= (u << 18) | (u >>> 14);
    u = (x5 + x4) | 0; x6 ^= (u << 7) | (u >>> 25);
    u = (x6 + x5) | 0; x7 ^= (u << 9) | (u >>> 23);
    u = (x7 + x6) | 0; x4 ^= (u << 13) | (u >>> 19);
    u = (x4 + x7) | 0; x5 ^= (u << 18) | (u >>> 14);
    u = (x10 + x9) | 0; x11 ^= (u << 7) | (u >>> 25);
    u = (x11 + x10) | 0; x8 ^= (u << 9) | (u >>> 23);
    u = (x8 + x11) | 0; x9 ^= (u << 13) | (u >>> 19);
    u = (x9 + x8) | 0; x10 ^= (u << 18) | (u >>> 14);
    u = (x15 + x14) | 0; x12 ^= (u << 7) | (u >>> 25);
    u = (x12 + x15) | 0; x13 ^= (u << 9) | (u >>> 23);
    u = (x13 + x12) | 0; x14 ^= (u << 13) | (u >>> 19);
    u = (x14 + x13) | 0; x15 ^= (u << 18) | (u >>> 14);
  }
  x[0] = x0; x[1] = x1; x[2] = x2; x[3] = x3; x[4] = x4; x[5] = x5; x[6] = x6; x[7] = x7;
  x[8] = x8; x[9] = x9; x[10] = x10; x[11] = x11; x[12] = x12; x[13] = x13; x[14] = x14; x[15] = x15;
}

/** HSalsa20: a 32-byte subkey from a 32-byte key and 16 bytes of input (the rounds, no feed-forward). */
export function hsalsa20(key: Uint8Array, input: Uint8Array): Uint8Array {
  const x = new Uint32Array(16);
  setup(x, key, input);
  rounds(x);
  const out = new Uint8Array(32);
  const pick = [0, 5, 10, 15, 6, 7, 8, 9];
  for (let i = 0; i < 8; i++) store32(out, 4 * i, x[pick[i]]);
  return out;
}

/**
 * XORs `src` with the Salsa20 key stream of (key, 8-byte nonce), starting at block
 * `counter`, into `dst` (which may be `src`). `skip` bytes of the stream are dropped first
 * (secretbox takes the first 32 for its Poly1305 key).
 */
export function salsa20Xor(dst: Uint8Array, src: Uint8Array, key: Uint8Array, nonce8: Uint8Array, skip = 0): void {
  const input = new Uint8Array(16);
  input.set(nonce8.subarray(0, 8), 0);
  const j = new Uint32Array(16);
  setup(j, key, input); // block counter 0 in words 8 and 9
  const x = new Uint32Array(16);
  const block = new Uint8Array(64);
  let pos = -skip; // position in src of the current block's first stream byte
  while (pos < src.length) {
    x.set(j);
    rounds(x);
    for (let i = 0; i < 16; i++) store32(block, 4 * i, (x[i] + j[i]) | 0);
    if (pos >= 0 && pos + 64 <= src.length) {
      for (let i = 0; i < 64; i++) dst[pos + i] = src[pos + i] ^ block[i];
    } else {
      for (let i = 0; i < 64; i++) {
        const at = pos + i;
        if (at >= 0 && at < src.length) dst[at] = src[at] ^ block[i];
      }
    }
    pos += 64;
    // the 64-bit little-endian block counter
    j[8] = (j[8] + 1) >>> 0;
    if (j[8] === 0) j[9] = (j[9] + 1) >>> 0;
  }
}

/** The first `n` bytes of the Salsa20 key stream of (key, 8-byte nonce). */
export function salsa20Stream(n: number, key: Uint8Array, nonce8: Uint8Array): Uint8Array {
  const out = new Uint8Array(n);
  salsa20Xor(out, out, key, nonce8);
  return out;
}

/** XSalsa20: HSalsa20 turns the key and the nonce's first 16 bytes into a subkey for Salsa20 with the last 8. */
export function xsalsa20Xor(dst: Uint8Array, src: Uint8Array, key: Uint8Array, nonce24: Uint8Array, skip = 0): void {
  salsa20Xor(dst, src, hsalsa20(key, nonce24.subarray(0, 16)), nonce24.subarray(16, 24), skip);
}
