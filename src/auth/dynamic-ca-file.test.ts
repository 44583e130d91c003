import { describe, it, expect, beforeAll, afterAll, vi } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamicCaFile, clientCaSource } from './dynamic-ca-file.js';
import { bundleFingerprints } from './authenticators/ca-bundle.js';

const dir = mkdtempSync(join(tmpdir(), 'kubeshard-dynca-'));
const pem: Record<string, string> = {};

beforeAll(() => {
  for (const n of ['a', 'b']) {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${n}.key`, '-out', `${n}.crt`, '-days', '1', '-subj', `/CN=${n}`], { cwd: dir, stdio: 'ignore' });
    pem[n] = readFileSync(join(dir, `${n}.crt`), 'utf8');
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('DynamicCaFile', () => {
  it('takes a changed bundle and tells its listeners; keeps the bundle in use when the file is empty or holds no certificate', () => {
    const file = join(dir, 'ca.crt');
    writeFileSync(file, pem.a);
    const ca = new DynamicCaFile('--client-ca-file', file, 60_000);
    const seen: string[] = [];
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const infos = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      ca.onChange(() => seen.push([...ca.fingerprints].join()));
      const source = clientCaSource([ca])!;
      expect(ca.check()).toBe(false); // unchanged
      const before = ca.fingerprints;
      writeFileSync(file, pem.b);
      expect(ca.check()).toBe(true);
      expect(ca.fingerprints).not.toBe(before); // replaced, never mutated
      expect(ca.fingerprints).toEqual(bundleFingerprints(pem.b));
      expect(source.pems()).toEqual([pem.b]);
      expect(seen).toEqual([[...bundleFingerprints(pem.b)].join()]);
      writeFileSync(file, '');
      expect(ca.check()).toBe(false);
      writeFileSync(file, 'not a certificate\n');
      expect(ca.check()).toBe(false);
      expect(ca.pem).toBe(pem.b);
      expect(errors.mock.calls.map((c) => String(c[0]))).toEqual([
        `E --client-ca-file: not loading an empty CA bundle from "${file}"; keeping the CA bundle in use`,
        `E --client-ca-file: no certificate found in "${file}"; keeping the CA bundle in use`,
      ]);
      writeFileSync(file, pem.a + pem.b);
      expect(ca.check()).toBe(true);
      expect(ca.fingerprints.size).toBe(2);
    } finally {
      ca.stop();
      errors.mockRestore();
      infos.mockRestore();
    }
  });

  it('refuses to start from an empty file', () => {
    const file = join(dir, 'empty.crt');
    writeFileSync(file, '');
    expect(() => new DynamicCaFile('--client-ca-file', file)).toThrow('not loading an empty CA bundle');
  });
});
