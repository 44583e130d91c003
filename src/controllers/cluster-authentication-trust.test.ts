import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { combineCertBundles, mergedTrustData } from './cluster-authentication-trust.js';

const dir = mkdtempSync(join(tmpdir(), 'kubeshard-trust-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function ca(name: string): string {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, `${name}.key`), '-days', '2', '-subj', `/CN=${name}`, '-out', join(dir, `${name}.crt`)], { stdio: 'ignore' });
  return readFileSync(join(dir, `${name}.crt`), 'utf8');
}

describe('extension-apiserver-authentication data (kube cluster authentication trust)', () => {
  const a = ca('a');
  const b = ca('b');
  const rh = { caFile: '', caPem: b, allowedNames: ['front-proxy-client'], usernameHeaders: ['X-Remote-User'], groupHeaders: ['X-Remote-Group'], uidHeaders: [], extraHeaderPrefixes: ['X-Remote-Extra-'] };

  it('merges another replica\'s values: certificates and names once each, in order', () => {
    const theirs = { 'client-ca-file': b, 'requestheader-client-ca-file': a, 'requestheader-allowed-names': '["proxy-2"]', 'requestheader-username-headers': '["X-Remote-User"]' };
    const d = mergedTrustData(theirs, { clientCa: a, requestHeader: rh });
    expect(d['client-ca-file']).toBe(combineCertBundles(b, a));
    expect(d['client-ca-file'].match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    expect(d['requestheader-client-ca-file'].match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    expect(JSON.parse(d['requestheader-allowed-names'])).toEqual(['proxy-2', 'front-proxy-client']);
    expect(JSON.parse(d['requestheader-username-headers'])).toEqual(['X-Remote-User']);
    expect(JSON.parse(d['requestheader-uid-headers'])).toEqual([]);
  });

  it('writes only the client CA without a front proxy, and nothing without either', () => {
    expect(Object.keys(mergedTrustData(undefined, { clientCa: a, requestHeader: null }))).toEqual(['client-ca-file']);
    expect(mergedTrustData(undefined, { clientCa: '', requestHeader: null })).toEqual({});
    expect(combineCertBundles(a, a).match(/BEGIN CERTIFICATE/g)).toHaveLength(1);
  });
});
