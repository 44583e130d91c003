// core/v1 validation other than Pod: Service (ValidateService, without what the ClusterIP and
// NodePort allocator owns), ConfigMap and Secret (ValidateConfigMap/Secret and their updates),
// and coordination.k8s.io Lease and core / events.k8s.io Event.
import type { FieldError } from '../strategy.js';
import { validateLabels } from '../validation.js';
import { qualifiedNameErrors } from '../validation.js';
import {
  dns1123LabelErrors,
  dns1123SubdomainErrors,
  duplicate,
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
  required,
  sameValue,
  tooLong,
  validPort,
} from './field.js';


const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const SERVICE_TYPES = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'];
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

function validIp(s: string): boolean {
  if (IPV4.test(s)) return true;
  if (!s.includes(':') || !/^[0-9a-fA-F:.]+$/.test(s)) return false;
  try {
    return new URL(`http://[${s}]/`).hostname.length > 0;
  } catch {
    return false;
  }
}

/** The internal ServicePort a duplicate-port error prints (Go field names: the internal type has no JSON tags). */
function internalPortKey(p: any): unknown {
  return { Name: '', Protocol: p.protocol ?? '', AppProtocol: null, Port: p.port ?? 0, TargetPort: 0, NodePort: 0 };
}

export function validateService(obj: any): FieldError[] {
  const spec = obj.spec;
  if (!isObj(spec)) return [required('spec')];
  const errs: FieldError[] = [];
  const ports = list(spec.ports);
  const headless = spec.clusterIP === 'None';
  if (ports.length === 0 && !headless && spec.type !== 'ExternalName') errs.push(required('spec.ports'));
  const clusterIPs: string[] = Array.isArray(spec.clusterIPs) ? spec.clusterIPs : spec.clusterIP ? [spec.clusterIP] : [];
  switch (spec.type) {
    case 'LoadBalancer':
      ports.forEach((p, i) => {
        if (p?.port === 10250) errs.push(invalid(`spec.ports[${i}]`, 10250, 'may not expose port 10250 externally since it is used by kubelet'));
      });
      if (headless) errs.push(invalid('spec.clusterIPs[0]', clusterIPs[0], "may not be set to 'None' for LoadBalancer services"));
      break;
    case 'NodePort':
      if (headless) errs.push(invalid('spec.clusterIPs[0]', clusterIPs[0], "may not be set to 'None' for NodePort services"));
      break;
    case 'ExternalName': {
      if (clusterIPs.length > 0) errs.push(forbidden('spec.clusterIPs', 'may not be set for ExternalName services'));
      if (list(spec.ipFamilies).length > 0) errs.push(forbidden('spec.ipFamilies', 'may not be set for ExternalName services'));
      if (spec.ipFamilyPolicy != null) errs.push(forbidden('spec.ipFamilyPolicy', 'may not be set for ExternalName services'));
      const cname = String(spec.externalName ?? '').replace(/\.$/, '');
      if (cname) errs.push(...each('spec.externalName', cname, dns1123SubdomainErrors(cname)));
      else errs.push(required('spec.externalName'));
      break;
    }
  }
  const names = new Set<string>();
  ports.forEach((p, i) => {
    const ip = `spec.ports[${i}]`;
    if (!isObj(p)) return;
    if (ports.length > 1 && !p.name) errs.push(required(`${ip}.name`));
    else if (p.name) {
      errs.push(...each(`${ip}.name`, p.name, dns1123LabelErrors(String(p.name))));
      if (names.has(p.name)) errs.push(duplicate(`${ip}.name`, p.name));
      else names.add(p.name);
    }
    if (!validPort(p.port)) errs.push(invalid(`${ip}.port`, p.port ?? 0, PORT_RANGE_MSG));
    if (!p.protocol) errs.push(required(`${ip}.protocol`));
    else if (!PROTOCOLS.includes(p.protocol)) errs.push(notSupported(`${ip}.protocol`, p.protocol, PROTOCOLS));
    if (typeof p.targetPort === 'number') {
      if (!validPort(p.targetPort)) errs.push(invalid(`${ip}.targetPort`, p.targetPort, PORT_RANGE_MSG));
    } else if (typeof p.targetPort === 'string') {
      errs.push(...each(`${ip}.targetPort`, p.targetPort, portNameErrors(p.targetPort)));
    }
  });
  if (isObj(spec.selector)) errs.push(...validateLabels(spec.selector, 'spec.selector'));
  if (!spec.sessionAffinity) errs.push(required('spec.sessionAffinity'));
  else if (!['ClientIP', 'None'].includes(spec.sessionAffinity)) errs.push(notSupported('spec.sessionAffinity', spec.sessionAffinity, ['ClientIP', 'None']));
  if (spec.sessionAffinity === 'ClientIP') {
    const t = spec.sessionAffinityConfig?.clientIP?.timeoutSeconds;
    if (t == null) errs.push(required('spec.sessionAffinityConfig.clientIP.timeoutSeconds'));
    else if (!isInt(t) || t <= 0 || t > 86400) {
      errs.push(invalid('spec.sessionAffinityConfig.clientIP.timeoutSeconds', t, 'must be greater than 0 and less than 86400'));
    }
  } else if (spec.sessionAffinity === 'None' && spec.sessionAffinityConfig != null) {
    errs.push(forbidden('spec.sessionAffinityConfig', 'must not be set when session affinity is None'));
  }
  clusterIPs.forEach((ip, i) => {
    if (ip === 'None') {
      if (i !== 0) errs.push(invalid(`spec.clusterIPs[${i}]`, ip, "'None' must be the first and only value"));
      return;
    }
    if (typeof ip === 'string' && ip !== '' && !validIp(ip)) {
      errs.push(invalid(`spec.clusterIPs[${i}]`, ip, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'));
    }
  });
  list(spec.externalIPs).forEach((ip, i) => {
    if (typeof ip !== 'string' || !validIp(ip)) errs.push(invalid(`spec.externalIPs[${i}]`, ip, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'));
  });
  if (!spec.type) errs.push(required('spec.type'));
  else if (!SERVICE_TYPES.includes(spec.type)) errs.push(notSupported('spec.type', spec.type, SERVICE_TYPES));
  if (spec.type === 'ClusterIP') {
    ports.forEach((p, i) => {
      if (p?.nodePort) errs.push(forbidden(`spec.ports[${i}].nodePort`, "may not be used when `type` is 'ClusterIP'"));
    });
  }
  const nodePorts = new Set<string>();
  ports.forEach((p, i) => {
    if (!p?.nodePort) return;
    const k = `${p.protocol}/${p.nodePort}`;
    if (nodePorts.has(k)) errs.push(duplicate(`spec.ports[${i}].nodePort`, p.nodePort));
    nodePorts.add(k);
  });
  const seen = new Set<string>();
  ports.forEach((p, i) => {
    if (!isObj(p)) return;
    const k = `${p.protocol}/${p.port}`;
    if (seen.has(k)) errs.push(duplicate(`spec.ports[${i}]`, internalPortKey(p)));
    seen.add(k);
  });
  if (spec.externalTrafficPolicy != null && spec.externalTrafficPolicy !== '' && !['Cluster', 'Local'].includes(spec.externalTrafficPolicy)) {
    errs.push(notSupported('spec.externalTrafficPolicy', spec.externalTrafficPolicy, ['Cluster', 'Local']));
  }
  if (spec.internalTrafficPolicy != null && !['Cluster', 'Local'].includes(spec.internalTrafficPolicy)) {
    errs.push(notSupported('spec.internalTrafficPolicy', spec.internalTrafficPolicy, ['Cluster', 'Local']));
  }
  if (spec.ipFamilyPolicy != null && !['SingleStack', 'PreferDualStack', 'RequireDualStack'].includes(spec.ipFamilyPolicy)) {
    errs.push(notSupported('spec.ipFamilyPolicy', spec.ipFamilyPolicy, ['SingleStack', 'PreferDualStack', 'RequireDualStack']));
  }
  list(spec.ipFamilies).forEach((f, i) => {
    if (f !== 'IPv4' && f !== 'IPv6') errs.push(notSupported(`spec.ipFamilies[${i}]`, f, ['IPv4', 'IPv6']));
  });
  return errs;
}

// ---------------------------------------------------------------- ConfigMap and Secret

const MAX_SIZE = 1024 * 1024;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const CONFIG_KEY_MSG =
  "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/** IsConfigMapKey */
export function configKeyErrors(key: string): string[] {
  const out: string[] = [];
  if (key.length > 253) out.push('must be no more than 253 characters');
  if (!CONFIG_KEY.test(key)) out.push(CONFIG_KEY_MSG);
  if (key === '.') out.push("must not be '.'");
  else if (key === '..') out.push("must not be '..'");
  else if (key.startsWith('..')) out.push("must not start with '..'");
  return out;
}

/** A key IsConfigMapKey accepts, tested without building any message. */
function plainConfigKey(k: string): boolean {
  return k.length <= 253 && CONFIG_KEY.test(k) && k !== '.' && !k.startsWith('..');
}

/** The decoded length of base64 text, without decoding it. */
function base64Length(s: string): number {
  let pad = 0;
  if (s.endsWith('==')) pad = 2;
  else if (s.endsWith('=')) pad = 1;
  return Math.floor((s.length * 3) / 4) - pad;
}

const NONE: FieldError[] = Object.freeze([]) as unknown as FieldError[];

export function validateConfigMap(obj: any): FieldError[] {
  // Hot path (ConfigMap creates): one pass over the keys with no allocation; the sorted
  // walk that words each error runs only when this finds something.
  const d0 = obj.data;
  const b0 = obj.binaryData;
  if ((d0 === undefined || isObj(d0)) && (b0 === undefined || b0 === null || isObj(b0))) {
    let ok = true;
    let size = 0;
    if (d0) {
      for (const k in d0) {
        if (!plainConfigKey(k) || (b0 && k in b0)) {
          ok = false;
          break;
        }
        const v = d0[k];
        size += Buffer.byteLength(typeof v === 'string' ? v : String(v ?? ''));
      }
    }
    if (ok && b0) {
      for (const k in b0) {
        if (!plainConfigKey(k)) {
          ok = false;
          break;
        }
        size += base64Length(String(b0[k] ?? ''));
      }
    }
    if (ok && size <= MAX_SIZE) return NONE;
  }
  const errs: FieldError[] = [];
  const data = isObj(obj.data) ? obj.data : {};
  const bin = isObj(obj.binaryData) ? obj.binaryData : {};
  let total = 0;
  for (const k of Object.keys(data).sort()) {
    errs.push(...each(`data[${k}]`, k, configKeyErrors(k)));
    if (k in bin) errs.push(invalid(`data[${k}]`, k, 'duplicate of key present in binaryData'));
    total += Buffer.byteLength(String(data[k] ?? ''));
  }
  for (const k of Object.keys(bin).sort()) {
    errs.push(...each(`binaryData[${k}]`, k, configKeyErrors(k)));
    if (k in data) errs.push(invalid(`binaryData[${k}]`, k, 'duplicate of key present in data'));
    total += base64Length(String(bin[k] ?? ''));
  }
  if (total > MAX_SIZE) errs.push(tooLong('', MAX_SIZE));
  return errs;
}

function immutableData(obj: any, old: any, keys: string[]): FieldError[] {
  const errs: FieldError[] = [];
  if (old.immutable !== true) return errs;
  if (obj.immutable !== true) errs.push(forbidden('immutable', 'field is immutable when `immutable` is set'));
  for (const k of keys) {
    const a = isObj(obj[k]) && Object.keys(obj[k]).length ? obj[k] : null;
    const b = isObj(old[k]) && Object.keys(old[k]).length ? old[k] : null;
    if (!sameValue(a, b)) errs.push(forbidden(k, 'field is immutable when `immutable` is set'));
  }
  return errs;
}

export function validateConfigMapUpdate(obj: any, old: any): FieldError[] {
  return immutableData(obj, old, ['data', 'binaryData']);
}

export function validateSecret(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const data = isObj(obj.data) ? obj.data : {};
  let total = 0;
  for (const k of Object.keys(data).sort()) {
    errs.push(...each(`data[${k}]`, k, configKeyErrors(k)));
    total += base64Length(String(data[k] ?? ''));
  }
  if (total > MAX_SIZE) errs.push(tooLong('data', MAX_SIZE));
  const has = (k: string) => Object.prototype.hasOwnProperty.call(data, k);
  const decoded = (k: string) => Buffer.from(String(data[k] ?? ''), 'base64').toString('utf8');
  const jsonError = (k: string): string => {
    try {
      const v = JSON.parse(decoded(k));
      return v !== null && typeof v === 'object' && !Array.isArray(v) ? '' : 'json: cannot unmarshal into Go value of type map[string]interface {}';
    } catch (e) {
      return (e as Error).message;
    }
  };
  switch (obj.type) {
    case 'kubernetes.io/service-account-token':
      if (!obj.metadata?.annotations?.['kubernetes.io/service-account.name']) {
        errs.push(required('metadata.annotations[kubernetes.io/service-account.name]'));
      }
      break;
    case 'kubernetes.io/dockercfg':
      if (!has('.dockercfg')) errs.push(required('data[.dockercfg]'));
      else {
        const e = jsonError('.dockercfg');
        if (e) errs.push(invalid('data[.dockercfg]', '<secret contents redacted>', e));
      }
      break;
    case 'kubernetes.io/dockerconfigjson':
      if (!has('.dockerconfigjson')) errs.push(required('data[.dockerconfigjson]'));
      else {
        const e = jsonError('.dockerconfigjson');
        if (e) errs.push(invalid('data[.dockerconfigjson]', '<secret contents redacted>', e));
      }
      break;
    case 'kubernetes.io/basic-auth':
      if (!has('username') && !has('password')) errs.push(required('data[username]'), required('data[password]'));
      break;
    case 'kubernetes.io/ssh-auth':
      if (!data['ssh-privatekey']) errs.push(required('data[ssh-privatekey]'));
      break;
    case 'kubernetes.io/tls':
      if (!has('tls.crt')) errs.push(required('data[tls.crt]'));
      if (!has('tls.key')) errs.push(required('data[tls.key]'));
      break;
  }
  if (typeof obj.type === 'string' && obj.type !== '') {
    errs.push(...each('type', obj.type, qualifiedNameErrors(obj.type)));
  }
  return errs;
}

export function validateSecretUpdate(obj: any, old: any): FieldError[] {
  return [...immutable('type', obj.type, old.type), ...immutableData(obj, old, ['data'])];
}

// ---------------------------------------------------------------- Lease

export function validateLease(obj: any): FieldError[] {
  const spec = isObj(obj.spec) ? obj.spec : {};
  const errs: FieldError[] = [];
  if (spec.leaseDurationSeconds != null && isInt(spec.leaseDurationSeconds) && spec.leaseDurationSeconds <= 0) {
    errs.push(invalid('spec.leaseDurationSeconds', spec.leaseDurationSeconds, 'must be greater than 0'));
  }
  if (spec.leaseTransitions != null && isInt(spec.leaseTransitions) && spec.leaseTransitions < 0) {
    errs.push(invalid('spec.leaseTransitions', spec.leaseTransitions, 'must be greater than or equal to 0'));
  }
  if (spec.strategy != null && spec.strategy !== 'OldestEmulationVersion') {
    errs.push(notSupported('spec.strategy', spec.strategy, ['OldestEmulationVersion']));
  }
  if (spec.preferredHolder && !spec.strategy) errs.push(forbidden('spec.preferredHolder', 'may only be specified if `strategy` is defined'));
  return errs;
}

// ---------------------------------------------------------------- Event

/**
 * Events, validated as kube validates its internal Event: an events.k8s.io/v1 object is read
 * through the internal field names (regarding is involvedObject, note is message ...), which
 * are also the names its errors carry.
 */
export function validateEvent(obj: any, group: string): FieldError[] {
  const strict = group === 'events.k8s.io';
  const e = strict
    ? {
        namespace: obj.metadata?.namespace ?? '',
        involvedObject: obj.regarding ?? {},
        eventTime: obj.eventTime,
        reportingController: obj.reportingController,
        reportingInstance: obj.reportingInstance,
        action: obj.action,
        reason: obj.reason,
        message: obj.note,
        type: obj.type,
        firstTimestamp: obj.deprecatedFirstTimestamp,
        lastTimestamp: obj.deprecatedLastTimestamp,
        count: obj.deprecatedCount,
        source: obj.deprecatedSource,
        series: obj.series,
      }
    : {
        namespace: obj.metadata?.namespace ?? '',
        involvedObject: obj.involvedObject ?? {},
        eventTime: obj.eventTime,
        reportingController: obj.reportingComponent,
        reportingInstance: obj.reportingInstance,
        action: obj.action,
        reason: obj.reason,
        message: obj.message,
        type: obj.type,
        firstTimestamp: obj.firstTimestamp,
        lastTimestamp: obj.lastTimestamp,
        count: obj.count,
        source: obj.source,
        series: obj.series,
      };
  const errs: FieldError[] = [];
  const rcField = strict ? 'reportingController' : 'reportingComponent';
  const invNs = String(e.involvedObject?.namespace ?? '');
  if (!e.eventTime) {
    if (invNs === '') {
      if (e.namespace !== '' && e.namespace !== 'default') errs.push(invalid('involvedObject.namespace', invNs, 'does not match event.namespace'));
    } else if (e.namespace !== invNs) errs.push(invalid('involvedObject.namespace', invNs, 'does not match event.namespace'));
  } else {
    if (invNs === '' && e.namespace !== 'default' && e.namespace !== 'kube-system') {
      errs.push(invalid('involvedObject.namespace', invNs, 'does not match event.namespace'));
    }
    const rc = String(e.reportingController ?? '');
    if (!rc) errs.push(required(rcField));
    errs.push(...each(rcField, rc, qualifiedNameErrors(rc)));
    const ri = String(e.reportingInstance ?? '');
    if (!ri) errs.push(required('reportingInstance'));
    if (ri.length > 128) errs.push(invalid('reportingInstance', '', 'can have at most 128 characters'));
    const action = String(e.action ?? '');
    if (!action) errs.push(required('action'));
    if (action.length > 128) errs.push(invalid('action', '', 'can have at most 128 characters'));
    const reason = String(e.reason ?? '');
    if (!reason) errs.push(required('reason'));
    if (reason.length > 128) errs.push(invalid('reason', '', 'can have at most 128 characters'));
    if (String(e.message ?? '').length > 1024) errs.push(invalid('message', '', 'can have at most 1024 characters'));
  }
  if (e.namespace) errs.push(...each('namespace', e.namespace, dns1123SubdomainErrors(e.namespace)));
  if (!strict) return errs;
  if (isObj(e.series)) {
    if (!isInt(e.series.count) || e.series.count < 2) errs.push(invalid('series.count', '', 'should be at least 2'));
    if (!e.series.lastObservedTime) errs.push(required('series.lastObservedTime'));
  }
  if (!e.eventTime) errs.push(required('eventTime'));
  if (e.type !== 'Normal' && e.type !== 'Warning') errs.push(invalid('type', '', `has invalid value: ${e.type ?? ''}`));
  if (e.firstTimestamp) errs.push(invalid('firstTimestamp', '', 'needs to be unset'));
  if (e.lastTimestamp) errs.push(invalid('lastTimestamp', '', 'needs to be unset'));
  if (e.count) errs.push(invalid('count', '', 'needs to be unset'));
  if (isObj(e.source) && (e.source.component || e.source.host)) errs.push(invalid('source', '', 'needs to be unset'));
  return errs;
}
