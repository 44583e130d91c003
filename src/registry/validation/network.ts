// networking.k8s.io/v1 Ingress, IngressClass and NetworkPolicy, as kube 1.33's
// pkg/apis/networking/validation checks them, with its paths and wording.
import type { FieldError } from '../strategy.js';
import { pathSegmentErrors } from './autoscaling.js';
import { validateLabelSelector } from './selector.js';
import {
  dns1035LabelErrors,
  DNS1123_SUBDOMAIN_RE,
  dns1123LabelErrors,
  dns1123SubdomainErrors,
  each,
  forbidden,
  immutable,
  invalid,
  isInt,
  isObj,
  list,
  notSupported,
  PORT_RANGE_MSG,
  portNameErrors,
  present,
  required,
  tooLong,
  validPort,
} from './field.js';

const str = (v: unknown) => (typeof v === 'string' ? v : '');

const WILDCARD_MSG =
  "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/** IsWildcardDNS1123Subdomain */
function wildcardErrors(v: string): string[] {
  const out: string[] = [];
  if (v.length > 253) out.push('must be no more than 253 characters');
  if (!v.startsWith('*.') || !DNS1123_SUBDOMAIN_RE.test(v.slice(2))) out.push(WILDCARD_MSG);
  return out;
}

/** A host given as a wildcard or a plain DNS subdomain. */
function hostErrors(host: string, path: string): FieldError[] {
  return each(path, host, host.includes('*') ? wildcardErrors(host) : dns1123SubdomainErrors(host));
}

/** netutils.ParseIPSloppy: IPv4 (leading zeros allowed) or IPv6. */
export function parseIp(s: string): { v6: boolean; bytes: number[] } | undefined {
  const m4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (m4) {
    const b = m4.slice(1).map(Number);
    return b.every((x) => x <= 255) ? { v6: false, bytes: b } : undefined;
  }
  if (!s.includes(':') || !/^[0-9a-fA-F:.]+$/.test(s)) return undefined;
  let head = s;
  let tail4: number[] = [];
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    const v4 = parseIp(s.slice(lastColon + 1));
    if (!v4 || v4.v6) return undefined;
    tail4 = v4.bytes;
    head = s.slice(0, lastColon + 1) + '0:0';
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const left = groups(halves[0]);
  const right = halves.length === 2 ? groups(halves[1]) : [];
  if ([...left, ...right].some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return undefined;
  const fill = 8 - left.length - right.length;
  if (halves.length === 2 ? fill < 1 : fill !== 0) return undefined;
  const all = [...left, ...Array(halves.length === 2 ? fill : 0).fill('0'), ...right].map((g) => parseInt(g, 16));
  const bytes = all.flatMap((g) => [g >> 8, g & 255]);
  if (tail4.length) bytes.splice(12, 4, ...tail4);
  return { v6: true, bytes };
}

/** netutils.ParseCIDRSloppy: the network (masked address) and prefix length. */
function parseCidr(s: string): { v6: boolean; net: bigint; bits: number; len: number } | undefined {
  const i = s.indexOf('/');
  if (i < 0) return undefined;
  const ip = parseIp(s.slice(0, i));
  const lenText = s.slice(i + 1);
  if (!ip || !/^\d{1,3}$/.test(lenText)) return undefined;
  const len = Number(lenText);
  // An IPv4-in-IPv6 address stays 16 bytes; Go masks it as such.
  const bits = ip.v6 ? 128 : 32;
  if (len > bits) return undefined;
  let n = 0n;
  for (const b of ip.bytes) n = (n << 8n) | BigInt(b);
  const mask = len === 0 ? 0n : ((1n << BigInt(len)) - 1n) << BigInt(bits - len);
  return { v6: ip.v6, net: n & mask, bits, len };
}

const CIDR_MSG = 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)';

// ---- Ingress ----

const PATH_TYPES = ['Exact', 'ImplementationSpecific', 'Prefix'];
const INVALID_PATH_SEQUENCES = ['//', '/./', '/../', '%2f', '%2F'];
const INVALID_PATH_SUFFIXES = ['/..', '/.'];

function typedLocalRef(ref: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(ref)) return errs;
  if (present(ref.apiGroup)) errs.push(...each(`${path}.apiGroup`, ref.apiGroup, dns1123SubdomainErrors(str(ref.apiGroup))));
  for (const k of ['kind', 'name']) {
    const v = str(ref[k]);
    if (!v) errs.push(required(`${path}.${k}`, `${k} is required`));
    else errs.push(...each(`${path}.${k}`, v, pathSegmentErrors(v)));
  }
  return errs;
}

function ingressBackend(b: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const backend = isObj(b) ? b : {};
  const hasResource = isObj(backend.resource);
  const hasService = isObj(backend.service);
  if (hasResource && hasService) return [invalid(path, '', 'cannot set both resource and service backends')];
  if (hasResource) return typedLocalRef(backend.resource, `${path}.resource`);
  if (!hasService) return [invalid(path, '', 'resource or service backend is required')];
  const svc = backend.service;
  const name = str(svc.name);
  if (!name) errs.push(required(`${path}.service.name`));
  else errs.push(...each(`${path}.service.name`, name, dns1035LabelErrors(name)));
  const port = isObj(svc.port) ? svc.port : {};
  const portName = str(port.name);
  const portNumber = isInt(port.number) ? port.number : 0;
  if (portName && portNumber !== 0) errs.push(invalid(path, '', 'cannot set both port name & port number'));
  else if (portName) errs.push(...each(`${path}.service.port.name`, portName, portNameErrors(portName)));
  else if (portNumber !== 0) {
    if (!validPort(portNumber)) errs.push(invalid(`${path}.service.port.number`, portNumber, PORT_RANGE_MSG));
  } else errs.push(required(path, 'port name or number is required'));
  return errs;
}

function httpPath(p: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!present(p.pathType)) return [required(`${path}.pathType`, 'pathType must be specified')];
  const value = str(p.path);
  switch (p.pathType) {
    case 'Exact':
    case 'Prefix':
      if (!value.startsWith('/')) errs.push(invalid(`${path}.path`, value, 'must be an absolute path'));
      if (value.length > 0) {
        for (const seq of INVALID_PATH_SEQUENCES) if (value.includes(seq)) errs.push(invalid(`${path}.path`, value, `must not contain '${seq}'`));
        for (const suf of INVALID_PATH_SUFFIXES) if (value.endsWith(suf)) errs.push(invalid(`${path}.path`, value, `cannot end with '${suf}'`));
      }
      break;
    case 'ImplementationSpecific':
      if (value.length > 0 && !value.startsWith('/')) errs.push(invalid(`${path}.path`, value, 'must be an absolute path'));
      break;
    default:
      errs.push(notSupported(`${path}.pathType`, p.pathType, PATH_TYPES));
  }
  errs.push(...ingressBackend(p.backend, `${path}.backend`));
  return errs;
}

export function validateIngress(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObj(obj.spec) ? obj.spec : {};
  const rules = list(spec.rules);
  if (rules.length === 0 && !isObj(spec.defaultBackend)) {
    errs.push(invalid('spec', Array.isArray(spec.rules) ? spec.rules : null, 'either `defaultBackend` or `rules` must be specified'));
  }
  if (isObj(spec.defaultBackend)) errs.push(...ingressBackend(spec.defaultBackend, 'spec.defaultBackend'));
  rules.forEach((r, i) => {
    const rp = `spec.rules[${i}]`;
    const rule = isObj(r) ? r : {};
    const host = str(rule.host);
    if (host) {
      if (parseIp(host)) errs.push(invalid(`${rp}.host`, host, 'must be a DNS name, not an IP address'));
      errs.push(...hostErrors(host, `${rp}.host`));
    }
    if (isObj(rule.http)) {
      const paths = list(rule.http.paths);
      if (paths.length === 0) errs.push(required(`${rp}.http.paths`));
      paths.forEach((p, j) => errs.push(...httpPath(isObj(p) ? p : {}, `${rp}.http.paths[${j}]`)));
    }
  });
  list(spec.tls).forEach((t, i) => {
    if (!isObj(t)) return;
    list(t.hosts).forEach((h, j) => errs.push(...hostErrors(str(h), `spec.tls[${i}].hosts[${j}]`)));
    const secret = str(t.secretName);
    if (secret) errs.push(...each(`spec.tls[${i}].secretName`, secret, dns1123SubdomainErrors(secret)));
  });
  if (present(spec.ingressClassName)) errs.push(...each('spec.ingressClassName', spec.ingressClassName, dns1123SubdomainErrors(str(spec.ingressClassName))));
  return errs;
}

/** ValidateIngressCreate: the legacy class annotation, when given beside ingressClassName, must agree with it. */
export function validateIngressCreate(obj: any): FieldError[] {
  const errs = validateIngress(obj);
  const ANN = 'kubernetes.io/ingress.class';
  const anns = isObj(obj.metadata?.annotations) ? obj.metadata.annotations : {};
  const cls = obj.spec?.ingressClassName;
  if (Object.prototype.hasOwnProperty.call(anns, ANN) && present(cls) && anns[ANN] !== cls) {
    // kube's path has no metadata prefix here.
    errs.push(invalid(`annotations.${ANN}`, anns[ANN], 'must match `ingressClassName` when both are specified'));
  }
  return errs;
}

// ---- IngressClass ----

const PARAMETER_SCOPES = ['Cluster', 'Namespace'];

export function validateIngressClass(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObj(obj.spec) ? obj.spec : {};
  const controller = str(spec.controller);
  if (controller.length > 250) errs.push(tooLong('spec.controller', 250));
  errs.push(...domainPrefixedPath(controller, 'spec.controller'));
  const params = spec.parameters;
  if (isObj(params)) {
    errs.push(...typedLocalRef(params, 'spec.parameters'));
    if (!present(params.scope)) errs.push(required('spec.parameters.scope'));
    else if (!PARAMETER_SCOPES.includes(String(params.scope))) errs.push(notSupported('spec.parameters.scope', params.scope, PARAMETER_SCOPES));
    else if (params.scope === 'Namespace') {
      if (!present(params.namespace)) errs.push(required('spec.parameters.namespace', "`parameters.scope` is set to 'Namespace'"));
      else errs.push(...each('spec.parameters.namespace', params.namespace, dns1123LabelErrors(str(params.namespace))));
    } else if (present(params.namespace)) errs.push(forbidden('spec.parameters.namespace', "`parameters.scope` is set to 'Cluster'"));
  }
  return errs;
}

/** IsDomainPrefixedPath (the host part; the path part's character rules are not checked here). */
function domainPrefixedPath(v: string, path: string): FieldError[] {
  if (!v) return [required(path)];
  const i = v.indexOf('/');
  if (i <= 0 || i === v.length - 1) return [invalid(path, v, 'must be a domain-prefixed path (such as "acme.io/foo")')];
  const host = v.slice(0, i);
  return each(path, host, dns1123SubdomainErrors(host));
}

export function validateIngressClassUpdate(obj: any, old: any): FieldError[] {
  return immutable('spec.controller', obj.spec?.controller ?? '', old.spec?.controller ?? '');
}

/** SetDefaults_IngressClass: parameters without a scope are cluster-scoped. */
export function defaultIngressClass(obj: any): void {
  const params = obj?.spec?.parameters;
  if (isObj(params) && !present(params.scope)) params.scope = 'Cluster';
}

// ---- NetworkPolicy ----

const NP_PROTOCOLS = ['TCP', 'UDP', 'SCTP'];
const POLICY_TYPES = ['Ingress', 'Egress'];

function networkPolicyPort(p: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (present(p.protocol) && !NP_PROTOCOLS.includes(p.protocol)) errs.push(notSupported(`${path}.protocol`, p.protocol, NP_PROTOCOLS));
  if (present(p.port)) {
    if (typeof p.port === 'number') {
      if (!validPort(p.port)) errs.push(invalid(`${path}.port`, p.port, PORT_RANGE_MSG));
      if (present(p.endPort)) {
        if (p.endPort < p.port) errs.push(invalid(`${path}.endPort`, p.port, 'must be greater than or equal to `port`'));
        if (!validPort(p.endPort)) errs.push(invalid(`${path}.endPort`, p.endPort, PORT_RANGE_MSG));
      }
    } else {
      if (present(p.endPort)) errs.push(invalid(`${path}.endPort`, p.endPort, 'may not be specified when `port` is non-numeric'));
      errs.push(...each(`${path}.port`, str(p.port), portNameErrors(str(p.port))));
    }
  } else if (present(p.endPort)) {
    errs.push(invalid(`${path}.endPort`, p.endPort, 'may not be specified when `port` is not specified'));
  }
  return errs;
}

function ipBlock(b: any, path: string): FieldError[] {
  const cidrText = str(b.cidr);
  if (!cidrText) return [required(`${path}.cidr`)];
  const cidr = parseCidr(cidrText);
  if (!cidr) return [invalid(`${path}.cidr`, cidrText, CIDR_MSG)];
  const errs: FieldError[] = [];
  list(b.except).forEach((e, i) => {
    const ep = `${path}.except[${i}]`;
    const text = str(e);
    const ex = parseCidr(text);
    if (!ex) {
      errs.push(invalid(ep, text, CIDR_MSG));
      return;
    }
    const mask = cidr.len === 0 ? 0n : ((1n << BigInt(cidr.len)) - 1n) << BigInt(cidr.bits - cidr.len);
    const contains = ex.v6 === cidr.v6 && (ex.net & mask) === cidr.net;
    if (!contains || cidr.len >= ex.len) errs.push(invalid(ep, text, 'must be a strict subset of `cidr`'));
  });
  return errs;
}

function peer(p: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  let n = 0;
  if (isObj(p.podSelector)) {
    n++;
    errs.push(...validateLabelSelector(p.podSelector, `${path}.podSelector`));
  }
  if (isObj(p.namespaceSelector)) {
    n++;
    errs.push(...validateLabelSelector(p.namespaceSelector, `${path}.namespaceSelector`));
  }
  if (isObj(p.ipBlock)) {
    n++;
    errs.push(...ipBlock(p.ipBlock, `${path}.ipBlock`));
  }
  if (n === 0) errs.push(required(path, 'must specify a peer'));
  else if (n > 1 && isObj(p.ipBlock)) errs.push(forbidden(path, 'may not specify both ipBlock and another peer'));
  return errs;
}

export function validateNetworkPolicy(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObj(obj.spec) ? obj.spec : {};
  if (isObj(spec.podSelector)) errs.push(...validateLabelSelector(spec.podSelector, 'spec.podSelector'));
  for (const [dir, peers] of [['ingress', 'from'], ['egress', 'to']] as const) {
    list(spec[dir]).forEach((rule, i) => {
      const rp = `spec.${dir}[${i}]`;
      if (!isObj(rule)) return;
      list(rule.ports).forEach((p, j) => errs.push(...networkPolicyPort(isObj(p) ? p : {}, `${rp}.ports[${j}]`)));
      list(rule[peers]).forEach((p, j) => errs.push(...peer(isObj(p) ? p : {}, `${rp}.${peers}[${j}]`)));
    });
  }
  const types = list(spec.policyTypes);
  if (types.length > 2) errs.push(invalid('spec.policyTypes', types, 'may not specify more than two policyTypes'));
  else types.forEach((t, i) => {
    if (!POLICY_TYPES.includes(t)) errs.push(notSupported(`spec.policyTypes[${i}]`, t, POLICY_TYPES));
  });
  return errs;
}
