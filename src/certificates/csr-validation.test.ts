import { describe, it, expect, beforeAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateCsrCreate, validateCsrUpdate, validateSignerName } from './csr-validation.js';
import { parseCsrPem } from './x509.js';
import { signerError } from './signers.js';

let pem = '';
let dir = '';
const csrOf = (subj: string, san?: string) => {
  const args = ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'k.pem', '-subj', subj, '-out', 'r.pem'];
  if (san) args.push('-addext', `subjectAltName=${san}`);
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  return parseCsrPem(readFileSync(join(dir, 'r.pem'), 'utf8'));
};
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'csrv-'));
  execFileSync('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'k.pem', '-subj', '/CN=x', '-out', 'r.pem'], { cwd: dir, stdio: 'ignore' });
  pem = readFileSync(join(dir, 'r.pem'), 'utf8');
});
const csr = (spec: any = {}, status: any = undefined) => ({
  metadata: { name: 'c' },
  spec: { request: Buffer.from(pem).toString('base64'), signerName: 'example.com/s', usages: ['client auth'], ...spec },
  ...(status ? { status } : {}),
});

describe('CSR validation', () => {
  it('accepts a good request and refuses kube\'s bad ones', () => {
    expect(validateCsrCreate(csr())).toEqual([]);
    expect(validateCsrCreate(csr({ usages: [] })).map((e) => e.field)).toEqual(['spec.usages']);
    expect(validateCsrCreate(csr({ signerName: 'kubernetes.io/legacy-unknown' }))[0].detail).toBe('the legacy signerName is not allowed via this API version');
    expect(validateCsrCreate(csr({ signerName: '' }))[0]).toMatchObject({ field: 'spec.signerName', type: 'FieldValueRequired' });
    expect(validateCsrCreate(csr({ expirationSeconds: 599 }))[0].detail).toBe('may not specify a duration less than 600 seconds (10 minutes)');
    expect(validateCsrCreate(csr({}, { conditions: [{ type: 'Approved', status: 'False' }] }))[0]).toMatchObject({ field: 'status.conditions[0].status', type: 'FieldValueNotSupported' });
    expect(validateSignerName('f', 'nodots/x')[0].detail).toBe('should be a domain with at least two segments separated by dots');
  });

  it('only the approval subresource approves; only status sets the certificate, once', () => {
    const old = csr();
    const approved = csr({}, { conditions: [{ type: 'Approved', status: 'True' }] });
    expect(validateCsrUpdate(approved, old, '')[0].detail).toBe('updates may not add a condition of type "Approved"');
    expect(validateCsrUpdate(approved, old, 'status')[0].detail).toBe('updates may not add a condition of type "Approved"');
    expect(validateCsrUpdate(approved, old, 'approval')).toEqual([]);
    expect(validateCsrUpdate(csr({}, { conditions: [] }), approved, 'approval')[0].detail).toBe('updates may not remove a condition of type "Approved"');
    const both = csr({}, { conditions: [{ type: 'Approved', status: 'True' }, { type: 'Denied', status: 'True' }] });
    expect(validateCsrUpdate(both, approved, 'approval')[0].detail).toBe('Approved and Denied conditions are mutually exclusive');
    const withCert = csr({}, { conditions: [{ type: 'Approved', status: 'True' }], certificate: Buffer.from('junk').toString('base64') });
    expect(validateCsrUpdate(withCert, approved, 'status')[0].detail).toBe('must contain at least one CERTIFICATE PEM block');
    expect(validateCsrUpdate(withCert, approved, 'approval').map((e) => e.detail)).toContain('updates may not set certificate content');
  });

  it('the kubelet signers check subject, SANs and usages', () => {
    const node = csrOf('/O=system:nodes/CN=system:node:a');
    expect(signerError('kubernetes.io/kube-apiserver-client-kubelet', node, ['digital signature', 'client auth'])).toBeNull();
    expect(signerError('kubernetes.io/kube-apiserver-client-kubelet', node, ['client auth'])).toBe('usages did not match [client auth digital signature key encipherment]');
    expect(signerError('kubernetes.io/kube-apiserver-client-kubelet', csrOf('/O=system:nodes/CN=a'), ['digital signature', 'client auth'])).toBe('subject common name does not begin with system:node:');
    expect(signerError('kubernetes.io/kubelet-serving', node, ['digital signature', 'server auth'])).toBe('DNS or IP subjectAltName is required');
    expect(signerError('kubernetes.io/kubelet-serving', csrOf('/O=system:nodes/CN=system:node:a', 'DNS:a'), ['digital signature', 'server auth'])).toBeNull();
    expect(signerError('kubernetes.io/kube-apiserver-client', node, ['server auth'])).toBe('invalid usage for client certificate: server auth');
  });
});
