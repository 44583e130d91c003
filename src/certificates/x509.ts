// PKCS#10 requests and X.509 certificates for the cluster signers: parse and verify a
// certificate signing request (Go's x509.ParseCertificateRequest and CheckSignature, which
// kube's CSR validation calls), and issue a certificate for it signed by the cluster signing
// CA (the part of kube's LocalSigner / cert.Sign that kubeshard needs).
//
// Thread ownership: none (pure functions; the CA's key is passed in).
import { pemBlocks } from './pem.js';
import { createPublicKey, createHash, randomBytes, sign as cryptoSign, verify as cryptoVerify, X509Certificate, type KeyObject } from 'node:crypto';
import { bitString, bool, children, decodeOid, explicit, integer, namedBits, nul, octets, oid, readTlv, seq, time, type Tlv } from './der.js';

const OID = {
  extensionRequest: '1.2.840.113549.1.9.14',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectAltName: '2.5.29.17',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  basicConstraints: '2.5.29.19',
  subjectKeyId: '2.5.29.14',
  authorityKeyId: '2.5.29.35',
};

/** Signature algorithms a request may be signed with: OID to node's digest (null for EdDSA). */
const SIGNATURE_DIGESTS: Record<string, string | null> = {
  '1.2.840.113549.1.1.5': 'sha1',
  '1.2.840.113549.1.1.11': 'sha256',
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
  '1.2.840.10045.4.3.2': 'sha256',
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
  '1.3.101.112': null,
};

export interface ParsedCsr {
  /** the DER of the subject Name */
  subjectDer: Buffer;
  commonName: string;
  organizations: string[];
  /** the DER of the SubjectPublicKeyInfo */
  publicKeyDer: Buffer;
  publicKey: KeyObject;
  /** the DER of the requested subjectAltName extension's value, if any */
  sanDer?: Buffer;
  dnsNames: string[];
  ipAddresses: string[];
  emailAddresses: string[];
  uris: string[];
}

/** The DER of the first PEM block of `type`, or an error worded as kube's ParseCSR. */
export function pemBlock(pem: string, type: string): Buffer | null {
  const [m] = pemBlocks(pem, 1);
  if (!m || m.type !== type) return null;
  if (/^[A-Za-z-]+:/m.test(m.body)) return null;
  return Buffer.from(m.body.replace(/\s+/g, ''), 'base64');
}

function readName(name: Tlv): { cn: string; o: string[] } {
  let cn = '';
  const o: string[] = [];
  for (const rdn of children(name.body)) {
    for (const atv of children(rdn.body)) {
      const [type, value] = children(atv.body);
      const t = decodeOid(type.body);
      const v = value.body.toString(value.tag === 0x1e ? 'utf16le' : 'utf8');
      if (t === OID.commonName) cn = v;
      else if (t === OID.organization) o.push(v);
    }
  }
  return { cn, o };
}

function readSan(value: Buffer, out: ParsedCsr): void {
  const [names] = [readTlv(value)];
  for (const gn of children(names.body)) {
    const n = gn.tag & 0x1f;
    if (n === 1) out.emailAddresses.push(gn.body.toString('latin1'));
    else if (n === 2) out.dnsNames.push(gn.body.toString('latin1'));
    else if (n === 6) out.uris.push(gn.body.toString('latin1'));
    else if (n === 7) {
      const b = gn.body;
      if (b.length === 4) out.ipAddresses.push([...b].join('.'));
      else if (b.length === 16) out.ipAddresses.push(Array.from({ length: 8 }, (_, i) => b.readUInt16BE(i * 2).toString(16)).join(':'));
    }
  }
}

/**
 * Parses the DER of a PKCS#10 request and checks its self-signature (Go's
 * ParseCertificateRequest then CheckSignature). Throws with the reason.
 */
export function parseCsr(der: Buffer): ParsedCsr {
  const top = readTlv(der);
  if (top.tag !== 0x30 || top.end !== der.length) throw new Error('asn1: structure error: the request is not one SEQUENCE');
  const [info, alg, sig] = children(top.body);
  if (!info || !alg || !sig || info.tag !== 0x30 || sig.tag !== 0x03) throw new Error('asn1: structure error: not a certificate request');
  const fields = children(info.body);
  const [, subject, spki, attrs] = fields;
  if (!subject || !spki || subject.tag !== 0x30 || spki.tag !== 0x30) throw new Error('asn1: structure error: not a certificate request');
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: spki.raw, format: 'der', type: 'spki' });
  } catch {
    throw new Error('x509: unsupported public key in the certificate request');
  }
  const { cn, o } = readName(subject);
  const out: ParsedCsr = { subjectDer: subject.raw, commonName: cn, organizations: o, publicKeyDer: spki.raw, publicKey, dnsNames: [], ipAddresses: [], emailAddresses: [], uris: [] };
  if (attrs && attrs.tag === 0xa0) {
    for (const attr of children(attrs.body)) {
      const [type, values] = children(attr.body);
      if (decodeOid(type.body) !== OID.extensionRequest) continue;
      for (const exts of children(values.body)) {
        for (const ext of children(exts.body)) {
          const parts = children(ext.body);
          const id = decodeOid(parts[0].body);
          const value = parts[parts.length - 1].body;
          if (id === OID.subjectAltName) {
            out.sanDer = value;
            readSan(value, out);
          }
        }
      }
    }
  }
  // the signature over the request info
  const algId = decodeOid(children(alg.body)[0].body);
  if (!(algId in SIGNATURE_DIGESTS)) throw new Error('x509: cannot verify signature: algorithm unimplemented');
  const signature = sig.body.subarray(1);
  const digest = SIGNATURE_DIGESTS[algId];
  const keyType = publicKey.asymmetricKeyType;
  let ok = false;
  try {
    ok = cryptoVerify(digest, info.raw, keyType === 'rsa-pss' ? { key: publicKey } : publicKey, signature);
  } catch {
    ok = false;
  }
  if (!ok) throw new Error(keyType === 'ec' ? 'x509: ECDSA verification failure' : 'crypto/rsa: verification error');
  return out;
}

/** Parses the spec.request of a CSR (PEM); throws with kube's wording. */
export function parseCsrPem(pem: string): ParsedCsr {
  const der = pemBlock(pem, 'CERTIFICATE REQUEST');
  if (!der) throw new Error('PEM block type must be CERTIFICATE REQUEST');
  return parseCsr(der);
}

/** x509 key usages by kube's names (certificates.KeyUsage), as bit numbers of keyUsage. */
const KEY_USAGE_BITS: Record<string, number> = {
  'digital signature': 0,
  'content commitment': 1,
  'key encipherment': 2,
  'data encipherment': 3,
  'key agreement': 4,
  'cert sign': 5,
  'crl sign': 6,
  'encipher only': 7,
  'decipher only': 8,
};
const EXT_KEY_USAGE_OIDS: Record<string, string> = {
  any: '2.5.29.37.0',
  'server auth': '1.3.6.1.5.5.7.3.1',
  'client auth': '1.3.6.1.5.5.7.3.2',
  'code signing': '1.3.6.1.5.5.7.3.3',
  'email protection': '1.3.6.1.5.5.7.3.4',
  's/mime': '1.3.6.1.5.5.7.3.4',
  'ipsec end system': '1.3.6.1.5.5.7.3.5',
  'ipsec tunnel': '1.3.6.1.5.5.7.3.6',
  'ipsec user': '1.3.6.1.5.5.7.3.7',
  timestamping: '1.3.6.1.5.5.7.3.8',
  'ocsp signing': '1.3.6.1.5.5.7.3.9',
  'microsoft sgc': '1.3.6.1.4.1.311.10.3.3',
  'netscape sgc': '2.16.840.1.113730.4.1',
};

/** The cluster signing CA, as loaded from --cluster-signing-cert-file / --cluster-signing-key-file. */
export interface SigningCa {
  cert: X509Certificate;
  /** the DER of the CA certificate's subject, the issued certificates' issuer */
  subjectDer: Buffer;
  /** the CA's subject key identifier, for the authority key identifier of what it issues */
  keyId: Buffer;
  key: KeyObject;
}

/** The subject Name and the key id of a CA certificate (from its DER). */
export function caNameAndKeyId(cert: X509Certificate): { subjectDer: Buffer; keyId: Buffer } {
  const top = readTlv(cert.raw);
  const tbs = children(top.body)[0];
  const f = children(tbs.body);
  const base = f[0].tag === 0xa0 ? 1 : 0;
  const subjectDer = f[base + 4].raw;
  const spki = f[base + 5];
  let keyId: Buffer | undefined;
  const extsWrap = f.find((x) => x.tag === 0xa3);
  if (extsWrap) {
    for (const ext of children(readTlv(extsWrap.body).body)) {
      const parts = children(ext.body);
      if (decodeOid(parts[0].body) === OID.subjectKeyId) keyId = readTlv(parts[parts.length - 1].body).body;
    }
  }
  // RFC 5280's method 1 when the CA names none: SHA-1 of the public key bits
  keyId ??= createHash('sha1').update(children(spki.body)[1].body.subarray(1)).digest();
  return { subjectDer, keyId };
}

function signatureAlgorithm(key: KeyObject): { alg: Buffer; digest: string | null } {
  switch (key.asymmetricKeyType) {
    case 'ec':
      return { alg: seq(oid('1.2.840.10045.4.3.2')), digest: 'sha256' };
    case 'rsa':
      return { alg: seq(oid('1.2.840.113549.1.1.11'), nul()), digest: 'sha256' };
    case 'ed25519':
      return { alg: seq(oid('1.3.101.112')), digest: null };
    default:
      throw new Error(`unsupported signing key type ${key.asymmetricKeyType}`);
  }
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));
}

export interface IssueOptions {
  usages: string[];
  notBefore: Date;
  notAfter: Date;
  /** copy the request's subjectAltName (kube's signer keeps every requested SAN) */
  sans: boolean;
}

/**
 * A certificate for the request, signed by the CA (kube's signer: the request's subject and
 * key, a random serial, the usages asked for, CA:FALSE, the CA's key as authority key id).
 * Returns the PEM.
 */
export function issueCertificate(ca: SigningCa, csr: ParsedCsr, o: IssueOptions): string {
  const serial = randomBytes(16);
  serial[0] &= 0x7f;
  const { alg, digest } = signatureAlgorithm(ca.key);
  const bits = o.usages.map((u) => KEY_USAGE_BITS[u]).filter((b) => b !== undefined);
  const ekus = o.usages.map((u) => EXT_KEY_USAGE_OIDS[u]).filter((x): x is string => !!x);
  const exts: Buffer[] = [];
  if (bits.length) exts.push(extension(OID.keyUsage, true, namedBits(bits)));
  if (ekus.length) exts.push(extension(OID.extKeyUsage, false, seq(...[...new Set(ekus)].map(oid))));
  exts.push(extension(OID.basicConstraints, true, seq()));
  exts.push(extension(OID.authorityKeyId, false, seq(Buffer.concat([Buffer.from([0x80, ca.keyId.length]), ca.keyId]))));
  if (o.sans && csr.sanDer) exts.push(extension(OID.subjectAltName, false, csr.sanDer));
  const tbs = seq(
    explicit(0, integer(2)),
    integer(serial),
    alg,
    ca.subjectDer,
    seq(time(o.notBefore), time(o.notAfter)),
    csr.subjectDer,
    csr.publicKeyDer,
    explicit(3, seq(...exts)),
  );
  const signature = cryptoSign(digest, tbs, ca.key);
  const der = seq(tbs, alg, bitString(signature));
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}
