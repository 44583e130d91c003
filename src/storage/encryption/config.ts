// The EncryptionConfiguration file (apiserver.config.k8s.io/v1), read, defaulted and
// validated as kube-apiserver 1.33 does (pkg/server/options/encryptionconfig loadConfig,
// apis/apiserver/v1 defaults, apis/apiserver/validation/validation_encryption.go), with
// kube's messages: a strict decode (unknown fields refused), then the field errors
// aggregated as Go's field.ErrorList.ToAggregate prints them.
//
// Stateless: pure functions over the file's text.
import { createHash } from 'node:crypto';
import { parseYaml11Here, yamlDuplicatesOf } from '../../codec/yaml.js';
import { goQuote } from '../../errors.js';

export interface Key {
  name: string;
  secret: string;
}
export interface KMSConfiguration {
  apiVersion: string;
  name: string;
  cachesize?: number;
  endpoint: string;
  /** seconds */
  timeout: number;
  /** the timeout as written, for messages */
  timeoutText: string;
}
export interface ProviderConfiguration {
  aesgcm?: { keys: Key[] };
  aescbc?: { keys: Key[] };
  secretbox?: { keys: Key[] };
  identity?: Record<string, never>;
  kms?: KMSConfiguration;
}
export interface ResourceConfiguration {
  resources: string[];
  providers: ProviderConfiguration[];
}
export interface EncryptionConfiguration {
  resources: ResourceConfiguration[];
}

export class EncryptionConfigError extends Error {}

export const API_VERSION = 'apiserver.config.k8s.io/v1';

/** kube's schema.ParseGroupResource: "deployments.apps" is {apps, deployments}; "*." is every core resource. */
export function parseGroupResource(s: string): { group: string; resource: string } {
  const dot = s.indexOf('.');
  return dot < 0 ? { group: '', resource: s } : { group: s.slice(dot + 1), resource: s.slice(0, dot) };
}

/** GroupResource.String(): "deployments.apps", or the bare resource for the core group. */
export function groupResourceString(gr: { group: string; resource: string }): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

/** kube's computeEncryptionConfigHash: how a reload tells a changed file (never written out). */
export function configHash(data: Buffer | string): string {
  return `k8s:enc:unstable:1:${createHash('sha256').update(data).digest('hex')}`;
}

// ---- strict decoding

type Shape = { [field: string]: Shape | 'string' | 'int' | 'duration' | 'object' | [Shape | 'string'] };
const KEY: Shape = { name: 'string', secret: 'string' };
const SHAPE: Shape = {
  kind: 'string',
  apiVersion: 'string',
  resources: [
    {
      resources: ['string'],
      providers: [
        {
          aesgcm: { keys: [KEY] },
          aescbc: { keys: [KEY] },
          secretbox: { keys: [KEY] },
          identity: {},
          kms: { apiVersion: 'string', name: 'string', cachesize: 'int', endpoint: 'string', timeout: 'duration' },
        },
      ],
    },
  ],
};

function goType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  return typeof v === 'boolean' ? 'bool' : typeof v;
}

/** Walks the decoded document against the v1 types: unknown fields (strict) and wrong types, in kube's words. */
function checkShape(v: unknown, shape: Shape[string], path: string, unknown: string[]): void {
  if (v === null || v === undefined) return;
  if (Array.isArray(shape)) {
    if (!Array.isArray(v)) throw new EncryptionConfigError(`json: cannot unmarshal ${goType(v)} into Go struct field ${path} of type []${typeof shape[0] === 'string' ? 'string' : 'struct'}`);
    v.forEach((item, i) => checkShape(item, shape[0], `${path}[${i}]`, unknown));
    return;
  }
  if (shape === 'string' || shape === 'duration') {
    if (typeof v !== 'string') throw new EncryptionConfigError(`json: cannot unmarshal ${goType(v)} into Go struct field ${path} of type string`);
    return;
  }
  if (shape === 'int') {
    if (typeof v !== 'number' || !Number.isInteger(v)) throw new EncryptionConfigError(`json: cannot unmarshal ${goType(v)} into Go struct field ${path} of type int32`);
    return;
  }
  if (typeof v !== 'object') throw new EncryptionConfigError(`json: cannot unmarshal ${goType(v)} into Go struct field ${path} of type struct`);
  for (const [k, item] of Object.entries(v as object)) {
    const field = (shape as Shape)[k];
    const sub = path ? `${path}.${k}` : k;
    if (field === undefined) unknown.push(sub);
    else checkShape(item, field, sub, unknown);
  }
}

const DURATION_UNITS: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, 'µs': 1e-6, ns: 1e-9 };

/** Go's time.ParseDuration, in seconds. */
export function parseGoDuration(v: string): number {
  const m = /^([-+]?)(.*)$/.exec(v)!;
  const body = m[2];
  if (body === '0') return 0;
  const part = /(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)/y;
  let total = 0;
  let at = 0;
  for (let p: RegExpExecArray | null; at < body.length && (p = part.exec(body)); at = part.lastIndex) total += Number(p[1]) * DURATION_UNITS[p[2]];
  if (body === '' || at !== body.length) throw new EncryptionConfigError(`time: invalid duration ${goQuote(v)}`);
  return m[1] === '-' ? -total : total;
}

/** Go's time.Duration.String() for a whole number of milliseconds or more (enough for messages). */
function durationString(seconds: number): string {
  if (seconds === 0) return '0s';
  const neg = seconds < 0;
  let s = Math.abs(seconds);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const secs = Number.isInteger(s) ? String(s) : String(Math.round(s * 1e9) / 1e9);
  let out = h ? `${h}h${m}m${secs}s` : m ? `${m}m${secs}s` : `${secs}s`;
  if (!h && !m && s < 1) out = `${Math.round(s * 1e3)}ms`;
  return (neg ? '-' : '') + out;
}

/**
 * Decodes the file's text (YAML or JSON) into the configuration, defaulted; throws kube's
 * decode errors (without the file prefix: see loadEncryptionConfig).
 */
export function decodeEncryptionConfig(text: string): EncryptionConfiguration {
  let doc: any;
  try {
    doc = parseYaml11Here(text);
  } catch (e) {
    throw new EncryptionConfigError(`yaml: ${(e as Error).message.split('\n')[0]}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new EncryptionConfigError(`couldn't get version/kind; json parse error: json: cannot unmarshal ${goType(doc)} into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }`);
  if (!doc.kind) throw new EncryptionConfigError(`Object 'Kind' is missing in '${JSON.stringify(doc)}'`);
  if (!doc.apiVersion) throw new EncryptionConfigError(`Object 'apiVersion' is missing in '${JSON.stringify(doc)}'`);
  if (doc.apiVersion !== API_VERSION || doc.kind !== 'EncryptionConfiguration') {
    // kube names its scheme after the file that made it (Go prints file:line; the line is left out here)
    throw new EncryptionConfigError(`no kind ${goQuote(String(doc.kind))} is registered for version ${goQuote(String(doc.apiVersion))} in scheme "k8s.io/apiserver/pkg/server/options/encryptionconfig/config.go"`);
  }
  const unknown: string[] = [];
  checkShape(doc, SHAPE, '', unknown);
  const dups = yamlDuplicatesOf(doc) ?? [];
  const strict = [...(dups.length ? [`yaml: unmarshal errors:\n  ${dups.join('\n  ')}`] : []), ...unknown.map((f) => `unknown field ${goQuote(f)}`)];
  if (strict.length) throw new EncryptionConfigError(`strict decoding error: ${strict.join(', ')}`);

  const keys = (k: any): Key[] => (k?.keys ?? []).map((x: any) => ({ name: x?.name ?? '', secret: x?.secret ?? '' }));
  const resources: ResourceConfiguration[] = (doc.resources ?? []).map((r: any) => ({
    resources: (r?.resources ?? []).map((s: unknown) => String(s ?? '')),
    providers: (r?.providers ?? []).map((p: any): ProviderConfiguration => {
      const out: ProviderConfiguration = {};
      if (!p) return out;
      if (p.aesgcm !== undefined && p.aesgcm !== null) out.aesgcm = { keys: keys(p.aesgcm) };
      if (p.aescbc !== undefined && p.aescbc !== null) out.aescbc = { keys: keys(p.aescbc) };
      if (p.secretbox !== undefined && p.secretbox !== null) out.secretbox = { keys: keys(p.secretbox) };
      if (p.identity !== undefined && p.identity !== null) out.identity = {};
      if (p.kms !== undefined && p.kms !== null) {
        // apis/apiserver/v1 defaults: apiVersion v1, a 3s timeout, and a cache of 1000 for v1 only
        const apiVersion = p.kms.apiVersion || 'v1';
        const timeoutText = p.kms.timeout ?? '3s';
        out.kms = {
          apiVersion,
          name: p.kms.name ?? '',
          endpoint: p.kms.endpoint ?? '',
          timeout: parseGoDuration(timeoutText),
          timeoutText,
          ...(p.kms.cachesize !== undefined ? { cachesize: p.kms.cachesize } : apiVersion === 'v1' ? { cachesize: 1000 } : {}),
        };
      }
      return out;
    }),
  }));
  return { resources };
}

// ---- validation (field.ErrorList as Go prints it)

/** Go's %#v of a []string */
function goStringSlice(v: string[]): string {
  return `[]string{${v.map((s) => goQuote(s)).join(', ')}}`;
}

/** An approximation of Go's %#v of an internal ProviderConfiguration (Go prints pointer addresses; we print which are set). */
function goProvider(p: ProviderConfiguration): string {
  const ptr = (name: string, type: string, set: boolean) => `${name}:(*apiserver.${type})(${set ? '0xc000000000' : 'nil'})`;
  return `apiserver.ProviderConfiguration{${[
    ptr('AESGCM', 'AESConfiguration', !!p.aesgcm),
    ptr('AESCBC', 'AESConfiguration', !!p.aescbc),
    ptr('Secretbox', 'SecretboxConfiguration', !!p.secretbox),
    ptr('Identity', 'IdentityConfiguration', !!p.identity),
    ptr('KMS', 'KMSConfiguration', !!p.kms),
  ].join(', ')}}`;
}

const required = (path: string, detail: string) => `${path}: Required value: ${detail}`;
const invalid = (path: string, value: string, detail: string) => `${path}: Invalid value: ${value}: ${detail}`;

const AES_SIZES = [16, 24, 32];

/** Go's base64.StdEncoding.DecodeString: padded standard alphabet, nothing else (newlines are skipped). */
export function decodeBase64Std(s: string): Buffer | null {
  const t = s.replace(/[\r\n]/g, '');
  if (t.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(t)) return null;
  return Buffer.from(t, 'base64');
}

function validateKeys(keys: Key[], path: string, sizes: number[], errs: string[]): void {
  if (!keys.length) {
    errs.push(required(path, 'at least one keys is required'));
    return;
  }
  keys.forEach((key, i) => {
    const p = `${path}[${i}]`;
    if (!key.name) errs.push(required(`${p}.name`, 'name is a mandatory field for a key'));
    if (!key.secret) {
      errs.push(required(`${p}.secret`, 'secret is a mandatory field for a key'));
      return;
    }
    const secret = decodeBase64Std(key.secret);
    if (!secret) {
      errs.push(invalid(`${p}.secret`, '"REDACTED"', 'secrets must be base64 encoded'));
      return;
    }
    if (!sizes.includes(secret.length)) errs.push(invalid(`${p}.secret`, '"REDACTED"', `secret is not of the expected length, got ${secret.length}, expected one of [${sizes.join(' ')}]`));
  });
}

function validateResourceOverlap(resources: string[], path: string, errs: string[]): void {
  if (resources.length < 2) return;
  const grs = resources.map(parseGroupResource);
  let overlap = false;
  let duplicate = false;
  for (let i = 0; i < grs.length; i++) {
    for (let j = 0; j < grs.length; j++) {
      if (i === j) continue;
      const [a, b] = [grs[i], grs[j]];
      if (a.group === b.group && a.resource === b.resource && !duplicate) {
        duplicate = true;
        continue;
      }
      if (overlap) continue;
      if (a.group === '*' && a.resource === '*') {
        overlap = true;
        continue;
      }
      if (a.group !== b.group) continue;
      if (a.resource === '*' || b.resource === '*') overlap = true;
    }
  }
  if (duplicate) errs.push(invalid(path, goStringSlice(resources), 'the same resource cannot be specified multiple times'));
  if (overlap) errs.push(invalid(path, goStringSlice(resources), "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"));
}

function validateResourceNames(resources: string[], path: string, errs: string[]): void {
  resources.forEach((res, j) => {
    const p = `${path}[${j}]`;
    const q = goQuote(res);
    if (res.toLowerCase() !== res) return void errs.push(invalid(p, q, 'resource name should not contain capital letters'));
    if (res === '*') return void errs.push(invalid(p, q, "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"));
    if (res === 'apiserveripinfo' || res === 'serviceipallocations' || res === 'servicenodeportallocations') return void errs.push(invalid(p, q, 'resources which do not have REST API/s cannot be encrypted'));
    const gr = parseGroupResource(res);
    if (gr.group === 'events.k8s.io') return void errs.push(invalid(p, q, "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"));
    if (gr.group === 'extensions') return void errs.push(invalid(p, q, "'extensions' group has been removed and cannot be used for encryption"));
    if (gr.group === '*' && gr.resource !== '*') errs.push(invalid(p, q, 'encrypting the same resource across groups is not supported'));
  });
}

function validateKMS(c: KMSConfiguration, path: string, names: Set<string>, reload: boolean, errs: string[]): void {
  if (!c.name) errs.push(required(`${path}.name`, 'name is a mandatory field for a provider'));
  if (c.apiVersion !== 'v1' && c.name.includes(':')) errs.push(invalid(`${path}.name`, goQuote(c.name), `invalid KMS provider name ${c.name}, must not contain ':'`));
  if ((reload || c.apiVersion !== 'v1') && names.has(c.name)) errs.push(invalid(`${path}.name`, goQuote(c.name), `duplicate KMS provider name ${c.name}, names must be unique`));
  if (!(c.timeout > 0)) errs.push(invalid(`${path}.timeout`, durationString(c.timeout), 'timeout should be a positive value'));
  if (!c.endpoint) errs.push(invalid(`${path}.endpoint`, '""', 'endpoint is a mandatory field for a kms'));
  else {
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(c.endpoint)?.[1] ?? '';
    if (scheme.toLowerCase() !== 'unix') errs.push(invalid(`${path}.endpoint`, goQuote(c.endpoint), `unsupported scheme ${goQuote(scheme.toLowerCase())} for KMS provider, only unix is supported`));
  }
  if (c.apiVersion !== 'v1' && c.cachesize !== undefined) errs.push(invalid(`${path}.cachesize`, String(c.cachesize), 'cachesize is not supported in v2'));
  if (c.apiVersion === 'v1' && c.cachesize === 0) errs.push(invalid(`${path}.cachesize`, '0', 'cachesize should be a positive value, or negative to disable'));
  if (c.apiVersion !== 'v1' && c.apiVersion !== 'v2') errs.push(invalid(`${path}.apiVersion`, goQuote(c.apiVersion), 'unsupported apiVersion apiVersion for KMS provider, only v1 and v2 are supported'));
}

/** kube's ValidateEncryptionConfiguration, as the list of messages ToAggregate would join. */
export function validateEncryptionConfig(c: EncryptionConfiguration, reload: boolean): string[] {
  const errs: string[] = [];
  if (!c.resources.length) return [required('resources', 'at least one resources is required')];
  const kmsNames = new Set<string>();
  c.resources.forEach((conf, i) => {
    const r = `resources[${i}].resources`;
    const p = `resources[${i}].providers`;
    if (!conf.resources.length) errs.push(required(r, `at least one ${r} is required`));
    validateResourceOverlap(conf.resources, r, errs);
    validateResourceNames(conf.resources, r, errs);
    if (!conf.providers.length) errs.push(required(p, `at least one ${p} is required`));
    conf.providers.forEach((provider, j) => {
      const path = `${p}[${j}]`;
      const found = [provider.kms, provider.aesgcm, provider.aescbc, provider.secretbox, provider.identity].filter((x) => x !== undefined).length;
      if (found === 0) errs.push(invalid(path, goProvider(provider), 'provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity'));
      if (found > 1) errs.push(invalid(path, goProvider(provider), 'more than one provider specified in a single element, should split into different list elements'));
      if (provider.kms) {
        validateKMS(provider.kms, `${path}.kms`, kmsNames, reload, errs);
        kmsNames.add(provider.kms.name);
      } else if (provider.aesgcm) validateKeys(provider.aesgcm.keys, `${path}.aesgcm.keys`, AES_SIZES, errs);
      else if (provider.aescbc) validateKeys(provider.aescbc.keys, `${path}.aescbc.keys`, AES_SIZES, errs);
      else if (provider.secretbox) validateKeys(provider.secretbox.keys, `${path}.secretbox.keys`, [32], errs);
    });
  });
  return errs;
}

/** utilerrors.NewAggregate(...).Error(): one message alone, several in brackets (duplicates once). */
export function aggregateMessages(msgs: string[]): string {
  const uniq = [...new Set(msgs)];
  return uniq.length === 1 ? uniq[0] : `[${uniq.join(', ')}]`;
}

/**
 * kube's loadConfig from the file's bytes: decoded and validated, or an
 * EncryptionConfigError with kube's message (as LoadEncryptionConfig wraps it:
 * "error while parsing file: ...").
 */
export function parseEncryptionConfig(data: Buffer, path: string, reload: boolean): { config: EncryptionConfiguration; hash: string } {
  if (data.length === 0) throw new EncryptionConfigError(`error while parsing file: error while loading file: encryption provider configuration file ${goQuote(path)} is empty`);
  let config: EncryptionConfiguration;
  try {
    config = decodeEncryptionConfig(data.toString('utf8'));
  } catch (e) {
    throw new EncryptionConfigError(`error while parsing file: error decoding encryption provider configuration file ${goQuote(path)}: ${(e as Error).message}`);
  }
  const errs = validateEncryptionConfig(config, reload);
  if (errs.length) throw new EncryptionConfigError(`error while parsing file: ${aggregateMessages(errs)}`);
  return { config, hash: configHash(data) };
}
