import { describe, expect, it } from 'vitest';
import { Encoder } from 'cbor-x';
import { StatusError } from '../errors.js';
import { MAX_CBOR_DEPTH, decodeCbor } from './cbor.js';

const enc = new Encoder({ useRecords: false, mapsAsObjects: false, variableMapSize: true } as any);

/** d levels of the map {"a": ...} around 1, as CBOR bytes (built flat: the encoder recurses). */
function deepMap(d: number): Buffer {
  return Buffer.concat([...Array.from({ length: d }, () => Buffer.from([0xa1, 0x61, 0x61])), Buffer.from([0x01])]);
}

function statusOf(f: () => unknown): StatusError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    return e as StatusError;
  }
  throw new Error('no error');
}

describe('cbor request bodies', () => {
  it('a map key __proto__ is a field of the decoded object, never its prototype', () => {
    // (cbor-x renames a plain map's __proto__ key to __proto_; a Map's keys are set here)
    for (const m of [new Map([['__proto__', new Map([['polluted', 'yes']])]]), new Map<unknown, unknown>([[1, 'x'], ['__proto__', { polluted: 'yes' }]])]) {
      const o: any = decodeCbor(Buffer.from(enc.encode(m)));
      expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
      expect(o.polluted).toBeUndefined();
      expect(({} as any).polluted).toBeUndefined();
    }
  });

  it('a map with a constructor key is still a map whose byte strings become base64', () => {
    const o: any = decodeCbor(Buffer.from(new Encoder({ useRecords: false, mapsAsObjects: true } as any).encode({ constructor: 1, b: new Uint8Array([1, 2]) })));
    expect(o).toEqual({ constructor: 1, b: 'AQI=' });
  });

  it('nesting past the limit is a 400 in the decoder\'s words, never a stack overflow', () => {
    expect(decodeCbor(deepMap(MAX_CBOR_DEPTH))).toBeTypeOf('object');
    for (const d of [MAX_CBOR_DEPTH + 1, 3000, 9000]) {
      const e = statusOf(() => decodeCbor(deepMap(d)));
      expect(e.code).toBe(400);
      expect(e.message).toBe(`couldn't get version/kind; cbor decode error: cbor: exceeded max nested level ${MAX_CBOR_DEPTH}`);
    }
  });
});
