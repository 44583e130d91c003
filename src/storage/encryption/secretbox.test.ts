import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { poly1305 } from './poly1305.js';
import { hsalsa20, salsa20Stream } from './salsa20.js';
import { secretboxOpen, secretboxSeal } from './secretbox.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

// NaCl's own test vectors (tests/core1.c, core2.c, secretbox.c, also in libsodium's test/default).
const SHARED = hex('4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742');
const FIRSTKEY = hex('1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389');
const NONCE = hex('69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37');
const MESSAGE = hex(`be075fc53c81f2d5cf141316ebeb0c7b5228c52a4c62cbd44b66849b64244ffce5ecbaaf33bd751a1ac728d45e6c6129
  6cdc3c01233561f41db66cce314adb310e3be8250c46f06dceea3a7fa1348057e2f6556ad6b1318a024a838f21af1fde048977eb48f59ffd4924ca1c6090
  2e52f0a089bc76897040e082f937763848645e0705`);
const BOX = hex(`f3ffc7703f9400e52a7dfb4b3d3305d98e993b9f48681273c29650ba32fc76ce48332ea7164d96a4476fb8c531a1186ac0dfc17c98dce87b
  4da7f011ec48c97271d2c20f9b928fe2270d6fb863d51738b48eeee314a7cc8ab932164548e526ae90224368517acfeabd6bb3732bc0e9da99832b61ca01
  b6de56244a9e88d5f9b37973f622a43d14a6599b1f654cb45a74e355a5`);

/** Poly1305 straight from its definition, in BigInt: the reference the limb version is checked against. */
function poly1305Reference(msg: Uint8Array, key: Uint8Array): Buffer {
  const le = (b: Uint8Array) => b.reduceRight((acc, x) => (acc << 8n) + BigInt(x), 0n);
  const p = (1n << 130n) - 5n;
  const r = le(key.subarray(0, 16)) & 0x0ffffffc0ffffffc0ffffffc0fffffffn;
  const s = le(key.subarray(16, 32));
  let h = 0n;
  for (let at = 0; at < msg.length; at += 16) {
    const block = msg.subarray(at, at + 16);
    h = ((h + le(block) + (1n << BigInt(8 * block.length))) * r) % p;
  }
  let t = (h + s) & ((1n << 128n) - 1n);
  const out = Buffer.alloc(16);
  for (let i = 0; i < 16; i++, t >>= 8n) out[i] = Number(t & 0xffn);
  return out;
}

describe('HSalsa20', () => {
  it('derives NaCl firstkey from the shared secret and a zero input (core1)', () => {
    expect(Buffer.from(hsalsa20(SHARED, new Uint8Array(16))).toString('hex')).toBe(FIRSTKEY.toString('hex'));
  });
  it('derives NaCl secondkey from firstkey and the nonce prefix (core2)', () => {
    expect(Buffer.from(hsalsa20(FIRSTKEY, NONCE.subarray(0, 16))).toString('hex')).toBe('dc908dda0b9344a953629b733820778880f3ceb421bb61b91cbd4c3e66256ce4');
  });
});

describe('Salsa20', () => {
  it('key stream of the zero key and nonce, block 0 (as Bernstein\'s spec)', () => {
    // Salsa20/20, key 0^32, nonce 0^8: the first stream bytes (eSTREAM set 1, vector 0 uses key 0x80 00..; this one is the all-zero key)
    const s = Buffer.from(salsa20Stream(64, new Uint8Array(32), new Uint8Array(8)));
    expect(s.subarray(0, 16).toString('hex')).toBe('9a97f65b9b4c721b960a672145fca8d4');
  });
});

describe('Poly1305', () => {
  it('RFC 8439 section 2.5.2', () => {
    const key = hex('85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b');
    expect(Buffer.from(poly1305(Buffer.from('Cryptographic Forum Research Group'), key)).toString('hex')).toBe('a8061dc1305136c6c22b8baf0c0127a9');
  });
  it('agrees with the BigInt definition on random keys and messages', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ maxLength: 300 }), (key, msg) => {
        expect(Buffer.from(poly1305(msg, key)).toString('hex')).toBe(poly1305Reference(msg, key).toString('hex'));
      }),
      { numRuns: 300 },
    );
  });
  it('agrees with the definition on all-0xff input (largest limbs)', () => {
    const key = Buffer.alloc(32, 0xff);
    const msg = Buffer.alloc(257, 0xff);
    expect(Buffer.from(poly1305(msg, key)).toString('hex')).toBe(poly1305Reference(msg, key).toString('hex'));
  });
});

describe('secretbox', () => {
  it('seals NaCl\'s test message to its known box (secretbox.c)', () => {
    expect(secretboxSeal(MESSAGE, NONCE, FIRSTKEY).toString('hex')).toBe(BOX.toString('hex'));
  });
  it('opens the known box', () => {
    expect(secretboxOpen(BOX, NONCE, FIRSTKEY)?.toString('hex')).toBe(MESSAGE.toString('hex'));
  });
  it('refuses a box with any byte changed, or under another key', () => {
    for (const i of [0, 15, 16, BOX.length - 1]) {
      const bad = Buffer.from(BOX);
      bad[i] ^= 1;
      expect(secretboxOpen(bad, NONCE, FIRSTKEY)).toBeNull();
    }
    expect(secretboxOpen(BOX, NONCE, randomBytes(32))).toBeNull();
  });
  it('round-trips messages of every length around the 64-byte block', () => {
    const key = randomBytes(32);
    for (let n = 0; n < 200; n++) {
      const nonce = randomBytes(24);
      const msg = randomBytes(n);
      expect(secretboxOpen(secretboxSeal(msg, nonce, key), nonce, key)?.equals(msg)).toBe(true);
    }
  });
});
