// The serving TLS settings of both front ends, from kube-apiserver's flags:
// --tls-min-version, --tls-cipher-suites (Go's crypto/tls names, mapped here to the
// OpenSSL/BoringSSL names the two TLS libraries take) and --tls-sni-cert-key.
//
// Defaults follow a kube-apiserver 1.33 binary (Go 1.24): TLS 1.2 at least, and Go's
// default cipher suites, which since Go 1.22 leave out every suite without ECDHE (static
// RSA key exchange: no forward secrecy), and since Go 1.23 3DES; RC4 and the CBC-SHA256
// suites are never on unless named. TLS 1.3's three suites are always on and cannot be
// configured, in Go as here: naming them is accepted and changes nothing.
//
// The two front ends run different TLS libraries: uWebSockets.js carries BoringSSL,
// whose context uSockets pins to TLS 1.2 at least (and 1.3 at most), with no RC4 and no
// CBC-SHA256 suites; node:http2 runs Node's OpenSSL 3, whose 3DES and RC4 suites are
// not built in. The server picks the node:http2 front end for any minimum but TLS 1.2
// (see needsNodeFront), and a named suite the chosen library lacks is left out with a
// warning.
//
// Thread ownership: pure functions and constant tables; the SNI contexts are made on the
// main thread at start-up, read by the transport that owns them.
import { readFileSync } from 'node:fs';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import tls from 'node:tls';
import type { ClientCaSource } from '../auth/dynamic-ca-file.js';

interface GoSuite {
  /** the OpenSSL (and BoringSSL) name; '' for TLS 1.3 suites, which are not configurable */
  openssl: string;
  /** in Go's tls.InsecureCipherSuites(): accepted, with kube's start-up warning */
  insecure: boolean;
}

/** Go's crypto/tls cipher suite names (CipherSuites and InsecureCipherSuites, Go 1.24), plus the two legacy ChaCha names kube keeps. */
const GO_SUITES: Record<string, GoSuite> = {
  TLS_AES_128_GCM_SHA256: { openssl: '', insecure: false },
  TLS_AES_256_GCM_SHA384: { openssl: '', insecure: false },
  TLS_CHACHA20_POLY1305_SHA256: { openssl: '', insecure: false },
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: { openssl: 'ECDHE-ECDSA-AES128-SHA', insecure: false },
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: { openssl: 'ECDHE-ECDSA-AES256-SHA', insecure: false },
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: { openssl: 'ECDHE-RSA-AES128-SHA', insecure: false },
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: { openssl: 'ECDHE-RSA-AES256-SHA', insecure: false },
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: { openssl: 'ECDHE-ECDSA-AES128-GCM-SHA256', insecure: false },
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: { openssl: 'ECDHE-ECDSA-AES256-GCM-SHA384', insecure: false },
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: { openssl: 'ECDHE-RSA-AES128-GCM-SHA256', insecure: false },
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: { openssl: 'ECDHE-RSA-AES256-GCM-SHA384', insecure: false },
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: { openssl: 'ECDHE-RSA-CHACHA20-POLY1305', insecure: false },
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: { openssl: 'ECDHE-ECDSA-CHACHA20-POLY1305', insecure: false },
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: { openssl: 'ECDHE-RSA-CHACHA20-POLY1305', insecure: false },
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: { openssl: 'ECDHE-ECDSA-CHACHA20-POLY1305', insecure: false },
  TLS_RSA_WITH_RC4_128_SHA: { openssl: 'RC4-SHA', insecure: true },
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: { openssl: 'DES-CBC3-SHA', insecure: true },
  TLS_RSA_WITH_AES_128_CBC_SHA: { openssl: 'AES128-SHA', insecure: true },
  TLS_RSA_WITH_AES_256_CBC_SHA: { openssl: 'AES256-SHA', insecure: true },
  TLS_RSA_WITH_AES_128_CBC_SHA256: { openssl: 'AES128-SHA256', insecure: true },
  TLS_RSA_WITH_AES_128_GCM_SHA256: { openssl: 'AES128-GCM-SHA256', insecure: true },
  TLS_RSA_WITH_AES_256_GCM_SHA384: { openssl: 'AES256-GCM-SHA384', insecure: true },
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: { openssl: 'ECDHE-ECDSA-RC4-SHA', insecure: true },
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: { openssl: 'ECDHE-RSA-RC4-SHA', insecure: true },
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: { openssl: 'ECDHE-RSA-DES-CBC3-SHA', insecure: true },
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: { openssl: 'ECDHE-ECDSA-AES128-SHA256', insecure: true },
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: { openssl: 'ECDHE-RSA-AES128-SHA256', insecure: true },
};

/**
 * The order a Go server picks TLS 1.0-1.2 suites in, whatever order they were listed in
 * (Go's cipherSuitesPreferenceOrder, AES hardware assumed): ECDHE AEADs, ECDHE CBC, static
 * RSA AEADs, static RSA CBC, 3DES, CBC-SHA256, RC4. The servers here prefer their own order too.
 */
const PREFERENCE = [
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305',
  'ECDHE-ECDSA-AES128-SHA', 'ECDHE-RSA-AES128-SHA', 'ECDHE-ECDSA-AES256-SHA', 'ECDHE-RSA-AES256-SHA',
  'AES128-GCM-SHA256', 'AES256-GCM-SHA384', 'AES128-SHA', 'AES256-SHA',
  'ECDHE-RSA-DES-CBC3-SHA', 'DES-CBC3-SHA',
  'ECDHE-ECDSA-AES128-SHA256', 'ECDHE-RSA-AES128-SHA256', 'AES128-SHA256',
  'ECDHE-ECDSA-RC4-SHA', 'ECDHE-RSA-RC4-SHA', 'RC4-SHA',
];

/** Go 1.24's default TLS 1.0-1.2 suites (no tlsrsakex, no tls3des): the ten ECDHE AEAD and CBC-SHA ones. */
export const DEFAULT_CIPHER_SUITES = [
  'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384', 'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256', 'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA', 'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA',
  'TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA', 'TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA',
];

const TLS13_SUITES = 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256';

export const TLS_VERSIONS = { VersionTLS10: 'TLSv1', VersionTLS11: 'TLSv1.1', VersionTLS12: 'TLSv1.2', VersionTLS13: 'TLSv1.3' } as const;
export type TlsVersionName = keyof typeof TLS_VERSIONS;

/** BoringSSL (uWebSockets.js) has neither RC4 nor the CBC-SHA256 suites: a context with only those fails to build. */
const BORINGSSL_MISSING = new Set(['RC4-SHA', 'ECDHE-ECDSA-RC4-SHA', 'ECDHE-RSA-RC4-SHA', 'AES128-SHA256', 'ECDHE-ECDSA-AES128-SHA256', 'ECDHE-RSA-AES128-SHA256']);

export function isTlsVersionName(v: string): v is TlsVersionName {
  return Object.prototype.hasOwnProperty.call(TLS_VERSIONS, v);
}

/** The names kube's --tls-cipher-suites accepts, secure ones and insecure ones apart (for the flag's help). */
export function cipherSuiteNames(): { preferred: string[]; insecure: string[] } {
  const all = Object.entries(GO_SUITES);
  return { preferred: all.filter(([, s]) => !s.insecure).map(([n]) => n).sort(), insecure: all.filter(([, s]) => s.insecure).map(([n]) => n).sort() };
}

/** Why a --tls-cipher-suites list cannot be served, as kube-apiserver refuses it; undefined when it can. */
export function cipherSuitesError(names: string[], minVersion: TlsVersionName): string | undefined {
  for (const n of names) if (!GO_SUITES[n]) return `Cipher suite ${n} not supported or doesn't exist`;
  // Go's HTTP/2 server refuses a TLS 1.2 suite list without HTTP/2's mandatory suite, and
  // kube-apiserver always serves HTTP/2: it then fails to start.
  if (names.length && minVersion !== 'VersionTLS13' && !names.some((n) => n === 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256' || n === 'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256')) {
    return 'error configuring http2: http2: TLSConfig.CipherSuites is missing an HTTP/2-required AES_128_GCM_SHA256 cipher (need at least one of TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)';
  }
  return undefined;
}

/** kube's start-up warning for each insecure suite named. */
export function insecureCipherWarnings(names: string[]): string[] {
  return names.filter((n) => GO_SUITES[n]?.insecure).map((n) => `Use of insecure cipher '${n}' detected.`);
}

/** One --tls-sni-cert-key: a certificate and key, and the names it serves (none: the certificate's own). */
export interface SniCertKey {
  certFile: string;
  keyFile: string;
  names: string[];
}

/** Parses kube's `cert.crt,key.key[:name,*.wildcard.name]`; throws with pflag's message on a bad value. */
export function parseSniCertKey(value: string): SniCertKey {
  const colon = value.indexOf(':');
  let names: string[] = [];
  let pair = value.trim();
  if (colon >= 0) {
    pair = value.slice(0, colon).trim();
    const list = value.slice(colon + 1).trim();
    if (list === '') throw new Error('empty names list is not allowed');
    names = list.split(',').map((n) => n.trim());
  }
  const files = pair.split(',');
  if (files.length !== 2) throw new Error('expected comma separated certificate and key file paths');
  return { certFile: files[0].trim(), keyFile: files[1].trim(), names };
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const isIp = (s: string) => /^\d+\.\d+\.\d+\.\d+$/.test(s) || (s.includes(':') && /^[0-9a-fA-F:.]+$/.test(s));

/**
 * The names a certificate serves when none are given: its common name (unless it is an IP
 * address or not a DNS name), then its DNS and IP subject alternative names, as kube does.
 */
export function certificateNames(cert: X509Certificate): string[] {
  const names: string[] = [];
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1] ?? '';
  if (cn && !isIp(cn) && (cn === '*' || (cn.replace(/^\*\./, '').length <= 253 && DNS1123_SUBDOMAIN.test(cn.replace(/^\*\./, ''))))) names.push(cn);
  for (const part of (cert.subjectAltName ?? '').split(', ')) {
    if (part.startsWith('DNS:')) names.push(part.slice(4));
    else if (part.startsWith('IP Address:')) names.push(part.slice(11));
  }
  return names;
}

/**
 * The SNI name table: each name to the certificate it picks. Earlier flags win over later
 * ones, and names given explicitly win over those taken from a certificate (kube's
 * BuildNamedCertificates). Files are read now, so a bad one stops start-up.
 */
export function sniTable(certs: SniCertKey[]): Map<string, SniCertKey> {
  const extracted = new Map<string, SniCertKey>();
  const explicit = new Map<string, SniCertKey>();
  for (let i = certs.length - 1; i >= 0; i--) {
    const c = certs[i];
    let x509: X509Certificate;
    try {
      x509 = new X509Certificate(readFileSync(c.certFile));
      createPrivateKey(readFileSync(c.keyFile));
    } catch (e) {
      throw new Error(`failed to load SNI cert and key: ${(e as Error).message}`);
    }
    for (const n of c.names) explicit.set(n.toLowerCase(), c);
    if (c.names.length === 0) for (const n of certificateNames(x509)) extracted.set(n.toLowerCase(), c);
  }
  for (const [n, c] of explicit) extracted.set(n, c);
  return extracted;
}

/** Go's lookup: the exact name, else the name with its first label replaced by '*'; undefined means the default certificate. */
export function pickSni<T>(table: Map<string, T>, serverName: string): T | undefined {
  const name = serverName.toLowerCase();
  const exact = table.get(name);
  if (exact !== undefined || name === '') return exact;
  const labels = name.split('.');
  labels[0] = '*';
  return table.get(labels.join('.'));
}

/** The settings both front ends are built from. */
export interface ServingTls {
  minVersion: TlsVersionName;
  /** OpenSSL names of the TLS 1.0-1.2 suites, in Go's preference order */
  ciphers: string[];
  sni: Map<string, SniCertKey>;
}

export function servingTls(o: { tlsMinVersion: string; tlsCipherSuites: string[]; tlsSniCertKeys: SniCertKey[] }): ServingTls {
  const minVersion = (o.tlsMinVersion || 'VersionTLS12') as TlsVersionName;
  const named = o.tlsCipherSuites.length ? o.tlsCipherSuites : DEFAULT_CIPHER_SUITES;
  const chosen = new Set(named.map((n) => GO_SUITES[n]?.openssl).filter(Boolean));
  return { minVersion, ciphers: PREFERENCE.filter((c) => chosen.has(c)), sni: sniTable(o.tlsSniCertKeys) };
}

/**
 * uSockets builds its BoringSSL context for TLS 1.2 and 1.3 only: any other minimum is
 * served through the node:http2 front end, whose OpenSSL honours it.
 */
export function needsNodeFront(t: ServingTls): boolean {
  return t.minVersion !== 'VersionTLS12';
}

/** The suites the front end's TLS library lacks, left out (each one a start-up warning). */
function available(t: ServingTls, has: (c: string) => boolean, library: string, warnings: string[]): string[] {
  const out: string[] = [];
  for (const c of t.ciphers) {
    if (has(c)) out.push(c);
    else warnings.push(`--tls-cipher-suites: ${c} is not available in ${library}; it is left out`);
  }
  return out;
}

/** What uWS's SSLApp and addServerName take: the TLS 1.2 cipher list (BoringSSL's TLS 1.3 suites are fixed), and the SNI names. */
export function uwsTls(t: ServingTls, warnings: string[]): { ssl_ciphers: string; serverNames: Array<{ name: string; certFile: string; keyFile: string }> } {
  const ciphers = available(t, (c) => !BORINGSSL_MISSING.has(c), "uWebSockets.js's BoringSSL", warnings);
  return { ssl_ciphers: ciphers.join(':'), serverNames: [...t.sni].map(([name, c]) => ({ name, certFile: c.certFile, keyFile: c.keyFile })) };
}

/**
 * What node's tls.createServer / http2.createSecureServer take. An SNI context carries the
 * client CA too: OpenSSL verifies a client certificate against the store of the context
 * the handshake switched to.
 */
export function nodeTls(t: ServingTls, warnings: string[], clientCa?: ClientCaSource): tls.TlsOptions {
  const built = new Set(tls.getCiphers());
  const ciphers = available(t, (c) => built.has(c.toLowerCase()), `Node's OpenSSL ${process.versions.openssl}`, warnings);
  // OpenSSL 3 allows TLS 1.0 and 1.1 only at security level 0 (SHA-1 handshake signatures).
  const old = t.minVersion === 'VersionTLS10' || t.minVersion === 'VersionTLS11';
  const base = {
    minVersion: TLS_VERSIONS[t.minVersion],
    ciphers: [TLS13_SUITES, ...ciphers].join(':') + (old ? ':@SECLEVEL=0' : ''),
    honorCipherOrder: true,
  };
  // (the certificate files are read once; the client CA bundles again when they change)
  const pairs = new Map([...new Set(t.sni.values())].map((c) => [c, { cert: readFileSync(c.certFile), key: readFileSync(c.keyFile) }]));
  const build = () => {
    const ca = clientCa ? { ca: clientCa.pems() } : {};
    const contexts = new Map<SniCertKey, tls.SecureContext>();
    for (const [c, pair] of pairs) contexts.set(c, tls.createSecureContext({ ...base, ...ca, ...pair }));
    return new Map([...t.sni].map(([n, c]) => [n, contexts.get(c)!]));
  };
  let named = build();
  if (named.size && clientCa) clientCa.onChange(() => (named = build()));
  return {
    ...base,
    ...(named.size ? { SNICallback: (serverName: string, cb: (err: Error | null, ctx?: tls.SecureContext) => void) => cb(null, pickSni(named, serverName)) } : {}),
  };
}
