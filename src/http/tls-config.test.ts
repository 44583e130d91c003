import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cipherSuitesError, needsNodeFront, nodeTls, pickSni, servingTls, sniTable, uwsTls } from './tls-config.js';

let dir: string;
const cert = (name: string, cn: string, san: string) => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', `/CN=${cn}`, '-addext', `subjectAltName=${san}`], { cwd: dir, stdio: 'ignore' });
  return { certFile: join(dir, `${name}.crt`), keyFile: join(dir, `${name}.key`) };
};
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'kubeshard-tls-config-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('cipher suites', () => {
  it("by default Go 1.24's: ECDHE only (no static RSA, 3DES, RC4 or CBC-SHA256), in Go's preference order", () => {
    const t = servingTls({ tlsMinVersion: '', tlsCipherSuites: [], tlsSniCertKeys: [] });
    expect(t.minVersion).toBe('VersionTLS12');
    expect(t.ciphers).toEqual([
      'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-RSA-AES256-GCM-SHA384',
      'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305',
      'ECDHE-ECDSA-AES128-SHA', 'ECDHE-RSA-AES128-SHA', 'ECDHE-ECDSA-AES256-SHA', 'ECDHE-RSA-AES256-SHA',
    ]);
    expect(needsNodeFront(t)).toBe(false);
  });

  it('named suites map to OpenSSL names; one a library lacks is left out with a warning', () => {
    const t = servingTls({
      tlsMinVersion: 'VersionTLS12',
      tlsCipherSuites: ['TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256', 'TLS_RSA_WITH_AES_128_GCM_SHA256', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_AES_128_GCM_SHA256'],
      tlsSniCertKeys: [],
    });
    expect(t.ciphers).toEqual(['ECDHE-RSA-AES128-GCM-SHA256', 'AES128-GCM-SHA256', 'ECDHE-RSA-AES128-SHA256']);
    const w: string[] = [];
    expect(uwsTls(t, w).ssl_ciphers).toBe('ECDHE-RSA-AES128-GCM-SHA256:AES128-GCM-SHA256');
    expect(w).toEqual(["--tls-cipher-suites: ECDHE-RSA-AES128-SHA256 is not available in uWebSockets.js's BoringSSL; it is left out"]);
    const n: string[] = [];
    expect(nodeTls(t, n).ciphers).toBe('TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:ECDHE-RSA-AES128-GCM-SHA256:AES128-GCM-SHA256:ECDHE-RSA-AES128-SHA256');
    expect(n).toEqual([]);
  });

  it('TLS 1.0 and 1.1 minimums go to node (OpenSSL 3 needs security level 0 for them); so does 1.3', () => {
    for (const v of ['VersionTLS10', 'VersionTLS11', 'VersionTLS13']) expect(needsNodeFront(servingTls({ tlsMinVersion: v, tlsCipherSuites: [], tlsSniCertKeys: [] }))).toBe(true);
    const old = nodeTls(servingTls({ tlsMinVersion: 'VersionTLS10', tlsCipherSuites: [], tlsSniCertKeys: [] }), []);
    expect(old.minVersion).toBe('TLSv1');
    expect(old.ciphers).toMatch(/:@SECLEVEL=0$/);
  });

  it("kube's refusals", () => {
    expect(cipherSuitesError(['BOGUS'], 'VersionTLS12')).toBe("Cipher suite BOGUS not supported or doesn't exist");
    expect(cipherSuitesError(['TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384'], 'VersionTLS12')).toMatch(/HTTP\/2-required/);
    expect(cipherSuitesError(['TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256'], 'VersionTLS12')).toBeUndefined();
    expect(cipherSuitesError([], 'VersionTLS12')).toBeUndefined();
  });
});

describe('SNI', () => {
  it("a certificate's own names (CN unless an IP, DNS and IP SANs); explicit names win; earlier flags win; exact before wildcard", () => {
    const foo = cert('foo', 'foo.example.com', 'DNS:foo.example.com,DNS:*.bar.example.com,IP:10.0.0.9');
    const other = cert('other', '10.1.1.1', 'DNS:foo.example.com,DNS:x.bar.example.com');
    const table = sniTable([
      { ...foo, names: [] },
      { ...other, names: [] },
      { ...other, names: ['explicit.example.com', 'foo.example.com'] },
    ]);
    const file = (n: string) => pickSni(table, n)?.certFile;
    expect(file('explicit.example.com')).toBe(other.certFile);
    // explicitly named by the third flag, so it beats the first flag's extracted name
    expect(file('FOO.example.com')).toBe(other.certFile);
    expect(file('x.bar.example.com')).toBe(other.certFile); // exact (second flag) before wildcard (first)
    expect(file('y.bar.example.com')).toBe(foo.certFile);
    expect(file('10.0.0.9')).toBe(foo.certFile);
    expect(file('10.1.1.1')).toBeUndefined(); // a CN that is an IP is not a name
    expect(file('a.y.bar.example.com')).toBeUndefined(); // one label deep only
    expect(file('')).toBeUndefined();
  });

  it('a missing file stops start-up', () => {
    expect(() => sniTable([{ certFile: join(dir, 'none.crt'), keyFile: join(dir, 'none.key'), names: [] }])).toThrowError(/failed to load SNI cert and key/);
  });
});

describe('client CA of the SNI contexts', () => {
  it('follows its source: after a change, a handshake naming an SNI host verifies client certificates against the new bundle', async () => {
    const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    const sni = cert('sni-reload', 'sni.example', 'DNS:sni.example');
    const def = cert('default-reload', 'default.example', 'DNS:default.example');
    for (const n of ['ca-old', 'ca-new']) {
      ssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${n}.key`, '-out', `${n}.crt`, '-days', '2', '-subj', `/CN=${n}`]);
      ssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${n}-client.key`, '-out', `${n}-client.csr`, '-subj', '/CN=client']);
      writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
      ssl(['x509', '-req', '-in', `${n}-client.csr`, '-CA', `${n}.crt`, '-CAkey', `${n}.key`, '-CAcreateserial', '-days', '2', '-extfile', 'client.ext', '-out', `${n}-client.crt`]);
    }
    const read = (f: string) => readFileSync(join(dir, f), 'utf8');
    let bundle = read('ca-old.crt');
    const listeners: Array<() => void> = [];
    const source = { pems: () => [bundle], onChange: (fn: () => void) => listeners.push(fn) };
    const opts = nodeTls(servingTls({ tlsMinVersion: '', tlsCipherSuites: [], tlsSniCertKeys: [{ ...sni, names: [] }] }), [], source);
    const server = tls.createServer({ ...opts, cert: readFileSync(def.certFile), key: readFileSync(def.keyFile), requestCert: true, rejectUnauthorized: false, ca: source.pems() }, (sock) => sock.end(sock.authorized ? 'yes' : 'no'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const hello = (client: string) =>
      new Promise<string>((resolve, reject) => {
        const c = tls.connect({ port, host: '127.0.0.1', servername: 'sni.example', rejectUnauthorized: false, cert: read(`${client}-client.crt`), key: read(`${client}-client.key`) });
        let out = '';
        c.setEncoding('utf8');
        c.on('data', (d) => (out += d));
        c.on('end', () => resolve(out));
        c.on('error', reject);
      });
    try {
      expect([await hello('ca-old'), await hello('ca-new')]).toEqual(['yes', 'no']);
      bundle = read('ca-new.crt');
      for (const fn of listeners) fn();
      expect([await hello('ca-old'), await hello('ca-new')]).toEqual(['no', 'yes']);
    } finally {
      server.close();
    }
  });
});
