// NaCl's crypto_secretbox (XSalsa20 and Poly1305), as golang.org/x/crypto/nacl/secretbox
// lays it out, which kube's secretbox provider stores: the tag (16 bytes) then the
// ciphertext. The first 32 bytes of the XSalsa20 stream are the Poly1305 key; the message
// is XORed with the stream from byte 32 on.
//
// Stateless.
import { timingSafeEqual } from 'node:crypto';
import { poly1305 } from './poly1305.js';
import { hsalsa20, salsa20Xor } from './salsa20.js';

export const SECRETBOX_OVERHEAD = 16;

function subkeyAndPolyKey(key: Uint8Array, nonce: Uint8Array): { subkey: Uint8Array; polyKey: Uint8Array } {
  const subkey = hsalsa20(key, nonce.subarray(0, 16));
  const polyKey = new Uint8Array(32);
  salsa20Xor(polyKey, polyKey, subkey, nonce.subarray(16, 24));
  return { subkey, polyKey };
}

/** tag || ciphertext of `msg` under a 32-byte key and a 24-byte nonce. */
export function secretboxSeal(msg: Uint8Array, nonce: Uint8Array, key: Uint8Array): Buffer {
  const { subkey, polyKey } = subkeyAndPolyKey(key, nonce);
  const out = Buffer.allocUnsafe(SECRETBOX_OVERHEAD + msg.length);
  const ct = out.subarray(SECRETBOX_OVERHEAD);
  salsa20Xor(ct, msg, subkey, nonce.subarray(16, 24), 32);
  out.set(poly1305(ct, polyKey), 0);
  return out;
}

/** The message of a box (tag || ciphertext), or null when the tag does not verify. */
export function secretboxOpen(box: Uint8Array, nonce: Uint8Array, key: Uint8Array): Buffer | null {
  if (box.length < SECRETBOX_OVERHEAD) return null;
  const { subkey, polyKey } = subkeyAndPolyKey(key, nonce);
  const ct = box.subarray(SECRETBOX_OVERHEAD);
  const tag = poly1305(ct, polyKey);
  if (!timingSafeEqual(tag, box.subarray(0, SECRETBOX_OVERHEAD))) return null;
  const out = Buffer.allocUnsafe(ct.length);
  salsa20Xor(out, ct, subkey, nonce.subarray(16, 24), 32);
  return out;
}
