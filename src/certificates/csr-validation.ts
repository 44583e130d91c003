// CertificateSigningRequest validation, as kube's pkg/apis/certificates/validation (1.33):
// the request must be a PEM PKCS#10 request whose signature checks; usages from kube's set,
// without duplicates; a well-formed signerName; expirationSeconds of at least 600; the
// Approved, Denied and Failed conditions only True, Approved and Denied exclusive, no
// duplicate condition types; status.certificate only CERTIFICATE PEM blocks. Updates may not
// remove those conditions; only the approval subresource adds or changes Approved/Denied,
// only the status subresource sets the certificate, and once set it stays.
//
// Thread ownership: none (pure functions).
import { pemBlocks } from './pem.js';
import { X509Certificate } from 'node:crypto';
import type { FieldError } from '../registry/strategy.js';
import { dns1123LabelErrors, dns1123SubdomainErrors, duplicate, forbidden, invalid, isObj, list, notSupported, required, sameValue, tooLong } from '../registry/validation/field.js';
import { parseCsrPem } from './x509.js';

export const LEGACY_UNKNOWN_SIGNER = 'kubernetes.io/legacy-unknown';

/** kube's certificates.KeyUsage values. */
export const ALL_USAGES = [
  'any', 'cert sign', 'client auth', 'code signing', 'content commitment', 'crl sign', 'data encipherment', 'decipher only',
  'digital signature', 'email protection', 'encipher only', 'ipsec end system', 'ipsec tunnel', 'ipsec user', 'key agreement',
  'key encipherment', 'microsoft sgc', 'netscape sgc', 'ocsp signing', 's/mime', 'signing', 'server auth', 'timestamping',
] as const;
const USAGES = new Set<string>(ALL_USAGES);
const TRUE_ONLY = new Set(['Approved', 'Denied', 'Failed']);

/** Decodes a []byte field (base64 in JSON); null when it is not valid base64 text. */
export function bytesField(v: unknown): Buffer | null {
  if (typeof v !== 'string') return null;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v.replace(/\s/g, ''))) return null;
  return Buffer.from(v, 'base64');
}

/** kube's ValidateSignerName: "<domain>/<path>", the domain DNS labels with a dot, the path a subdomain. */
export function validateSignerName(field: string, name: unknown): FieldError[] {
  if (typeof name !== 'string' || name === '') return [required(field)];
  const out: FieldError[] = [];
  const parts = name.split('/');
  if (parts.length !== 2) return [invalid(field, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")];
  const [domain, path] = parts;
  if (domain.length > 253) out.push(tooLong(field, 253));
  const labels = domain.split('.');
  for (const l of labels) {
    const errs = dns1123LabelErrors(l);
    if (errs.length) {
      for (const e of errs) out.push(invalid(field, domain, `validating label "${l}": ${e}`));
      break;
    }
  }
  if (labels.length < 2) out.push(invalid(field, domain, 'should be a domain with at least two segments separated by dots'));
  if (path.length > 253) out.push(tooLong(field, 253));
  for (const e of dns1123SubdomainErrors(path)) out.push(invalid(field, path, `validating path: ${e}`));
  if (name.length > 571) out.push(tooLong(field, 571));
  return out;
}

/** Checks status.certificate's PEM: CERTIFICATE blocks only, no headers, each parsing. */
export function certificateError(pem: Buffer): string | null {
  if (pem.length === 0) return null;
  const text = pem.toString('latin1');
  let blocks = 0;
  for (const m of pemBlocks(text)) {
    if (m.type !== 'CERTIFICATE') return `only CERTIFICATE PEM blocks are allowed, found "${m.type}"`;
    if (/^[A-Za-z-]+:/m.test(m.body)) return 'no PEM block headers are permitted';
    blocks++;
    try {
      new X509Certificate(Buffer.from(m.body.replace(/\s+/g, ''), 'base64'));
    } catch {
      return 'x509: malformed certificate';
    }
  }
  return blocks === 0 ? 'must contain at least one CERTIFICATE PEM block' : null;
}

interface Options {
  allowSettingApproval: boolean;
  allowSettingCertificate: boolean;
  /** tolerances for what the stored object already has (kube's getValidationOptions) */
  old: any | null;
}

const conditionsOf = (o: any): any[] => list(o?.status?.conditions).filter(isObj);
const hasUnknownUsage = (o: any) => list(o?.spec?.usages).some((u) => !USAGES.has(u));
const hasDupUsage = (o: any) => new Set(list(o?.spec?.usages)).size !== list(o?.spec?.usages).length;
const hasDupType = (o: any) => new Set(conditionsOf(o).map((c) => c.type)).size !== conditionsOf(o).length;
const hasEmptyType = (o: any) => conditionsOf(o).some((c) => !c.type);
const hasBoth = (o: any) => conditionsOf(o).some((c) => c.type === 'Approved') && conditionsOf(o).some((c) => c.type === 'Denied');

function validateCsr(csr: any, o: Options): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObj(csr.spec) ? csr.spec : {};
  const old = o.old;
  const req = bytesField(spec.request);
  if (!req || req.length === 0) {
    errs.push(invalid('spec.request', spec.request ?? '', 'PEM block type must be CERTIFICATE REQUEST'));
  } else {
    try {
      parseCsrPem(req.toString('latin1'));
    } catch (e) {
      errs.push(invalid('spec.request', spec.request, (e as Error).message));
    }
  }
  const usages = list(spec.usages);
  if (usages.length === 0) errs.push(required('spec.usages'));
  if (!(old && hasUnknownUsage(old))) usages.forEach((u, i) => USAGES.has(u) || errs.push(notSupported(`spec.usages[${i}]`, u, [...ALL_USAGES])));
  if (!(old && hasDupUsage(old))) {
    const seen = new Set();
    usages.forEach((u, i) => {
      if (seen.has(u)) errs.push(duplicate(`spec.usages[${i}]`, u));
      seen.add(u);
    });
  }
  if (spec.signerName === LEGACY_UNKNOWN_SIGNER && old?.spec?.signerName !== LEGACY_UNKNOWN_SIGNER) {
    errs.push(invalid('spec.signerName', spec.signerName, 'the legacy signerName is not allowed via this API version'));
  } else if (spec.signerName !== LEGACY_UNKNOWN_SIGNER) errs.push(...validateSignerName('spec.signerName', spec.signerName));
  if (typeof spec.expirationSeconds === 'number' && spec.expirationSeconds < 600) {
    errs.push(invalid('spec.expirationSeconds', spec.expirationSeconds, 'may not specify a duration less than 600 seconds (10 minutes)'));
  }
  // conditions
  const seenTypes = new Set<string>();
  let approved = false;
  let denied = false;
  conditionsOf(csr).forEach((c, i) => {
    const f = `status.conditions[${i}]`;
    if (!c.type && !(old && hasEmptyType(old))) errs.push(required(`${f}.type`));
    if (!c.status) errs.push(required(`${f}.status`));
    else {
      const allowed = TRUE_ONLY.has(c.type) ? ['True'] : ['False', 'True', 'Unknown'];
      if (!allowed.includes(c.status)) errs.push(notSupported(`${f}.status`, c.status, allowed));
    }
    if (!(old && hasBoth(old))) {
      if (c.type === 'Approved') {
        approved = true;
        if (denied) errs.push(invalid('status.conditions', c.type, 'Approved and Denied conditions are mutually exclusive'));
      } else if (c.type === 'Denied') {
        denied = true;
        if (approved) errs.push(invalid('status.conditions', c.type, 'Approved and Denied conditions are mutually exclusive'));
      }
    }
    if (!(old && hasDupType(old))) {
      if (seenTypes.has(c.type)) errs.push(duplicate(`${f}.type`, c.type));
      seenTypes.add(c.type);
    }
  });
  const cert = bytesField(csr.status?.certificate) ?? Buffer.alloc(0);
  const oldCert = bytesField(old?.status?.certificate) ?? Buffer.alloc(0);
  const arbitrary = old && (cert.equals(oldCert) || certificateError(oldCert) !== null);
  if (!arbitrary) {
    const e = certificateError(cert);
    if (e) errs.push(invalid('status.certificate', '<certificate data>', e));
  }
  return errs;
}

export function validateCsrCreate(csr: any): FieldError[] {
  return validateCsr(csr, { allowSettingApproval: false, allowSettingCertificate: false, old: null });
}

/** An update through the main resource (''), status or approval. */
export function validateCsrUpdate(csr: any, old: any, subresource: string): FieldError[] {
  const o: Options = { allowSettingApproval: subresource === 'approval', allowSettingCertificate: subresource === 'status', old };
  const errs = validateCsr(csr, o);
  const of = (x: any, t: string) => conditionsOf(x).filter((c) => c.type === t);
  for (const t of ['Approved', 'Denied', 'Failed']) {
    if (of(csr, t).length < of(old, t).length) errs.push(forbidden('status.conditions', `updates may not remove a condition of type "${t}"`));
  }
  if (!o.allowSettingApproval) {
    for (const t of ['Approved', 'Denied']) {
      const a = of(old, t);
      const b = of(csr, t);
      if (b.length > a.length) errs.push(forbidden('status.conditions', `updates may not add a condition of type "${t}"`));
      else if (b.length === a.length && !sameValue(a, b)) errs.push(forbidden('status.conditions', `updates may not modify a condition of type "${t}"`));
    }
  }
  const cert = bytesField(csr.status?.certificate) ?? Buffer.alloc(0);
  const oldCert = bytesField(old.status?.certificate) ?? Buffer.alloc(0);
  if (!cert.equals(oldCert)) {
    if (!o.allowSettingCertificate) errs.push(forbidden('status.certificate', 'updates may not set certificate content'));
    else if (oldCert.length > 0) errs.push(forbidden('status.certificate', 'updates may not modify existing certificate content'));
  }
  return errs;
}
