// Issue 17, item 9: serving TLS as kube-apiserver 1.33 (a Go 1.24 binary) serves it, on
// both front ends. By default TLS 1.2 at least and Go's default suites: ECDHE only, so no
// static-RSA key exchange (no forward secrecy), no 3DES, CBC-SHA256, RC4 or DHE.
// --tls-cipher-suites takes Go's names (insecure ones with kube's warning),
// --tls-min-version kube's VersionTLS1x names, --tls-sni-cert-key kube's
// cert,key[:names] (names default to the certificate's). Checked from outside with
// `openssl s_client`, against an RSA serving certificate (static RSA needs one).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, copyFileSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request, startServer, type TestServer } from './helpers/server.js';

const MAIN = fileURLToPath(new URL('../dist/src/main.js', import.meta.url));
let dir: string;
const file = (n: string) => join(dir, n);

function makeCerts(): void {
  dir = mkdtempSync(join(tmpdir(), 'kubeshard-tls-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'rsa.key', '-out', 'rsa.crt', '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1']);
  const ec = (name: string, cn: string, san: string) =>
    run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', `/CN=${cn}`, '-addext', `subjectAltName=${san}`]);
  ec('foo', 'foo.example.com', 'DNS:foo.example.com,DNS:*.bar.example.com');
  ec('baz', 'baz-cert', 'DNS:not-used.example.com');
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'client-ca.key']);
  run(['req', '-x509', '-new', '-key', 'client-ca.key', '-days', '2', '-subj', '/CN=client-ca', '-out', 'client-ca.crt']);
  run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'jane.key', '-subj', '/O=team-a/CN=jane', '-out', 'jane.csr']);
  run(['x509', '-req', '-in', 'jane.csr', '-CA', 'client-ca.crt', '-CAkey', 'client-ca.key', '-CAcreateserial', '-days', '2', '-out', 'jane.crt']);
}

/** Who the server says the caller is, over a connection that asks for serverName and shows jane's client certificate. */
function whoAmIWithCert(s: TestServer, serverName: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    const req = https.request(
      {
        host: '127.0.0.1', port: s.port, method: 'POST', path: '/apis/authentication.k8s.io/v1/selfsubjectreviews', servername: serverName,
        rejectUnauthorized: false, cert: readFileSync(file('jane.crt')), key: readFileSync(file('jane.key')), agent: false,
        headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve(res.statusCode === 201 ? JSON.parse(text).status.userInfo.username : `${res.statusCode} ${text}`));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A server on the RSA certificate; the test helper trusts <data-dir>/certs/ca.crt, so it is put there. */
async function serve(args: string[]): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kubeshard-test-'));
  mkdirSync(join(dataDir, 'certs'));
  copyFileSync(file('rsa.crt'), join(dataDir, 'certs', 'ca.crt'));
  return startServer({ dataDir, args: ['--tls-cert-file', file('rsa.crt'), '--tls-private-key-file', file('rsa.key'), ...args] });
}

interface Handshake {
  ok: boolean;
  protocol?: string;
  cipher?: string;
  subject?: string;
  alpn?: string;
}

/** One TLS handshake by the openssl command. */
function handshake(s: TestServer, ...args: string[]): Handshake {
  const r = spawnSync('openssl', ['s_client', '-connect', `127.0.0.1:${s.port}`, ...args], { input: '', timeout: 15_000, encoding: 'utf8' });
  const out = `${r.stdout}\n${r.stderr}`;
  const m = /New, (\S+), Cipher is (\S+)/.exec(out);
  const ok = !!m && m[2] !== '(NONE)';
  return {
    ok,
    // (the "New, TLSv1.x" of that line is the suite's version; the session's is under Protocol)
    ...(ok ? { protocol: /Protocol\s*: (\S+)/.exec(out)?.[1] ?? m![1], cipher: m![2] } : {}),
    ...(ok ? { subject: /subject=.*CN ?= ?([^,\n]+)/.exec(out)?.[1].trim() } : {}),
    ...(/ALPN protocol: (\S+)/.test(out) ? { alpn: /ALPN protocol: (\S+)/.exec(out)![1] } : {}),
  };
}

// OpenSSL 3 clients offer TLS 1.0/1.1 only at security level 0.
const OLD = ['-cipher', 'DEFAULT:@SECLEVEL=0'];

beforeAll(() => makeCerts());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

for (const front of ['uws', 'http2'] as const) {
  const frontArgs = () => (front === 'http2' ? ['--client-ca-file', file('client-ca.crt')] : []);

  describe(`${front} front end, defaults`, () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await serve(frontArgs());
    }, 90_000);
    afterAll(async () => {
      await s?.stop();
      s?.cleanup();
    });

    it('TLS 1.2 and 1.3 are served; 1.0 and 1.1 are refused', () => {
      expect(handshake(s, '-tls1_2')).toMatchObject({ ok: true, protocol: 'TLSv1.2' });
      expect(handshake(s, '-tls1_3')).toMatchObject({ ok: true, protocol: 'TLSv1.3' });
      expect(handshake(s, '-tls1_1', ...OLD).ok).toBe(false);
      expect(handshake(s, '-tls1', ...OLD).ok).toBe(false);
    });

    it('ECDHE suites are served; static RSA key exchange, CBC-SHA256 and DHE are not', () => {
      for (const c of ['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-RSA-CHACHA20-POLY1305', 'ECDHE-RSA-AES128-SHA']) {
        expect([c, handshake(s, '-tls1_2', '-cipher', c).cipher]).toEqual([c, c]);
      }
      for (const c of ['AES128-GCM-SHA256', 'AES256-GCM-SHA384', 'AES128-SHA', 'AES256-SHA', 'ECDHE-RSA-AES128-SHA256', 'DHE-RSA-AES128-GCM-SHA256']) {
        expect([c, handshake(s, '-tls1_2', '-cipher', c).ok]).toEqual([c, false]);
      }
    });

    it('the API is served over it', async () => {
      expect((await request(s, 'GET', '/version')).status).toBe(200);
    });
  });

  describe(`${front} front end, --tls-cipher-suites naming a static-RSA suite, --tls-sni-cert-key`, () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await serve([
        ...frontArgs(),
        '--tls-cipher-suites',
        'TLS_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
        '--tls-sni-cert-key',
        `${file('foo.crt')},${file('foo.key')}`,
        `--tls-sni-cert-key=${file('baz.crt')},${file('baz.key')}:baz.example.com`,
      ]);
    }, 90_000);
    afterAll(async () => {
      await s?.stop();
      s?.cleanup();
    });

    it("is served, with kube's warning, and suites not named are not", async () => {
      expect(s.output()).toContain("W Use of insecure cipher 'TLS_RSA_WITH_AES_128_GCM_SHA256' detected.");
      expect(handshake(s, '-tls1_2', '-cipher', 'AES128-GCM-SHA256').cipher).toBe('AES128-GCM-SHA256');
      expect(handshake(s, '-tls1_2', '-cipher', 'ECDHE-RSA-AES128-GCM-SHA256').cipher).toBe('ECDHE-RSA-AES128-GCM-SHA256');
      expect(handshake(s, '-tls1_2', '-cipher', 'ECDHE-RSA-AES256-GCM-SHA384').ok).toBe(false);
      expect(handshake(s, '-tls1_2', '-cipher', 'ECDHE-RSA-AES128-SHA').ok).toBe(false);
      // TLS 1.3's suites are not configurable, as in Go
      expect(handshake(s, '-tls1_3').ok).toBe(true);
      expect((await request(s, 'GET', '/version')).status).toBe(200);
    });

    it("SNI picks the certificate: the cert's own names (wildcards one label deep), explicit names, else the default", () => {
      expect(handshake(s, '-servername', 'foo.example.com').subject).toBe('foo.example.com');
      expect(handshake(s, '-servername', 'x.bar.example.com').subject).toBe('foo.example.com');
      expect(handshake(s, '-servername', 'baz.example.com').subject).toBe('baz-cert');
      // the baz certificate's own SAN is not served: explicit names replace them
      expect(handshake(s, '-servername', 'not-used.example.com').subject).toBe('localhost');
      expect(handshake(s, '-servername', 'other.example.com').subject).toBe('localhost');
      expect(handshake(s, '-noservername').subject).toBe('localhost');
    });

    if (front === 'http2') {
      it('a client certificate still authenticates on a connection that picked an SNI certificate', async () => {
        expect(await whoAmIWithCert(s, 'foo.example.com')).toBe('jane');
        expect(await whoAmIWithCert(s, 'other.example.com')).toBe('jane');
      });
    }
  });
}

describe('--tls-min-version', () => {
  let tls13: TestServer;
  let tls10: TestServer;
  beforeAll(async () => {
    [tls13, tls10] = await Promise.all([serve(['--tls-min-version', 'VersionTLS13']), serve(['--tls-min-version=VersionTLS10'])]);
  }, 90_000);
  afterAll(async () => {
    for (const s of [tls13, tls10]) {
      await s?.stop();
      s?.cleanup();
    }
  });

  it('VersionTLS13 refuses TLS 1.2 (served through node:http2: ALPN offers h2)', async () => {
    expect(handshake(tls13, '-tls1_2').ok).toBe(false);
    expect(handshake(tls13, '-tls1_3', '-alpn', 'h2,http/1.1')).toMatchObject({ ok: true, protocol: 'TLSv1.3', alpn: 'h2' });
    expect((await request(tls13, 'GET', '/version')).status).toBe(200);
  });

  it('VersionTLS10 serves TLS 1.0 and 1.1 (ECDHE CBC suites), still no static RSA', () => {
    expect(handshake(tls10, '-tls1', ...OLD)).toMatchObject({ ok: true, protocol: 'TLSv1' });
    expect(handshake(tls10, '-tls1_1', ...OLD)).toMatchObject({ ok: true, protocol: 'TLSv1.1' });
    expect(handshake(tls10, '-tls1', '-cipher', 'AES128-SHA:@SECLEVEL=0').ok).toBe(false);
  });
});

describe('start-up refusals', () => {
  const start = (args: string[]) => spawnSync(process.execPath, [MAIN, '--secure-port', '1', '--data-dir', join(dir, 'never'), ...args], { encoding: 'utf8', timeout: 30_000 });

  it("an unknown suite, an unknown version, a list without HTTP/2's suite, a bad or missing SNI pair stop the server", () => {
    const cases: Array<[string[], string]> = [
      [['--tls-cipher-suites', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_FOO'], "Cipher suite TLS_FOO not supported or doesn't exist"],
      [['--tls-min-version', 'VersionTLS14'], 'unknown tls version "VersionTLS14"'],
      [['--tls-cipher-suites', 'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384'], 'HTTP/2-required AES_128_GCM_SHA256 cipher'],
      [['--tls-sni-cert-key', 'only-a-cert.crt'], 'expected comma separated certificate and key file paths'],
      [['--tls-sni-cert-key', `${join(dir, 'none.crt')},${join(dir, 'none.key')}`], 'failed to load SNI cert and key'],
    ];
    for (const [args, message] of cases) {
      const r = start(args);
      expect([args, r.status !== 0]).toEqual([args, true]);
      expect(r.stderr).toContain(message);
    }
  });
});
