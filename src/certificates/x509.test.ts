import { describe, it, expect, beforeAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { caNameAndKeyId, issueCertificate, parseCsrPem, type SigningCa } from './x509.js';

let dir: string;
let ca: SigningCa;
const ossl = (...a: string[]) => execFileSync('openssl', a, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'x509-'));
  ossl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '30', '-subj', '/CN=test-ca');
  const cert = new X509Certificate(readFileSync(join(dir, 'ca.crt')));
  ca = { cert, ...caNameAndKeyId(cert), key: createPrivateKey(readFileSync(join(dir, 'ca.key'))) };
});

describe('x509', () => {
  it('parses a request, checks its signature and issues a certificate the CA verifies', () => {
    ossl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'n.key');
    ossl('req', '-new', '-key', 'n.key', '-subj', '/O=system:nodes/CN=system:node:n1', '-addext', 'subjectAltName=DNS:n1.example,IP:10.0.0.7', '-out', 'n.csr');
    const csr = parseCsrPem(readFileSync(join(dir, 'n.csr'), 'utf8'));
    expect(csr.commonName).toBe('system:node:n1');
    expect(csr.organizations).toEqual(['system:nodes']);
    expect(csr.dnsNames).toEqual(['n1.example']);
    expect(csr.ipAddresses).toEqual(['10.0.0.7']);
    const now = new Date();
    const pem = issueCertificate(ca, csr, { usages: ['digital signature', 'server auth'], notBefore: now, notAfter: new Date(now.getTime() + 3600e3), sans: true });
    const cert = new X509Certificate(pem);
    expect(cert.verify(ca.cert.publicKey)).toBe(true);
    expect(cert.checkIssued(ca.cert)).toBe(true);
    expect(cert.subject).toContain('CN=system:node:n1');
    expect(cert.subjectAltName).toContain('DNS:n1.example');
    expect(cert.ca).toBe(false);
    writeFileSync(join(dir, 'out.crt'), pem);
    expect(ossl('verify', '-CAfile', 'ca.crt', '-purpose', 'sslserver', 'out.crt').toString()).toContain('OK');
  });

  it('refuses a request whose signature does not match', () => {
    ossl('req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'r.key', '-subj', '/CN=x', '-outform', 'DER', '-out', 'r.der');
    const der = readFileSync(join(dir, 'r.der'));
    der[der.length - 5] ^= 0xff;
    const pem = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    expect(() => parseCsrPem(pem)).toThrow(/verification error/);
    expect(() => parseCsrPem('-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n')).toThrow('PEM block type must be CERTIFICATE REQUEST');
  });
});
