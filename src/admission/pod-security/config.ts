// The PodSecurity plugin's configuration: a PodSecurityConfiguration
// (pod-security.admission.config.k8s.io/v1, v1beta1 or v1alpha1) from the AdmissionConfiguration's
// plugin entry, defaulted and validated as kube's admission/api (v1/defaults.go,
// validation/validation.go): default enforce/audit/warn levels and versions (privileged, latest),
// and the exempt usernames, runtime classes and namespaces.
//
// Thread ownership: none (parsed once at start, then read only).
import { type Policy, parseLevel, parseVersion, type Level, type Version } from './api.js';

export interface PodSecurityConfig {
  defaults: Policy;
  exemptions: {
    usernames: Set<string>;
    runtimeClasses: Set<string>;
    namespaces: Set<string>;
  };
}

const API_VERSIONS = new Set(['pod-security.admission.config.k8s.io/v1', 'pod-security.admission.config.k8s.io/v1beta1', 'pod-security.admission.config.k8s.io/v1alpha1']);
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The configuration as kube loads it (podsecurityconfigloader.LoadFromData): no configuration
 * at all is the defaults; a wrong kind or version, an unknown field's wrong type, or an
 * invalid value is a start-up error naming each problem.
 */
export function loadPodSecurityConfig(config: unknown): PodSecurityConfig {
  const c: any = config ?? {};
  if (typeof c !== 'object' || Array.isArray(c)) throw new Error('PodSecurity configuration error: the configuration must be an object');
  if (config !== undefined && config !== null && (c.apiVersion !== undefined || c.kind !== undefined)) {
    if (c.kind !== 'PodSecurityConfiguration' || !API_VERSIONS.has(c.apiVersion)) {
      throw new Error(`PodSecurity configuration error: expected PodSecurityConfiguration in pod-security.admission.config.k8s.io/v1, got ${c.kind ?? ''} in ${c.apiVersion ?? ''}`);
    }
  }
  const errs: string[] = [];
  const d = c.defaults ?? {};
  const str = (v: unknown, dflt: string) => (v === undefined || v === null || v === '' ? dflt : String(v));
  const level = (key: string): Level => {
    const v = str(d[key], 'privileged');
    const r = parseLevel(v);
    if (r.err) errs.push(`defaults.${key}: Invalid value: ${JSON.stringify(v)}: ${r.err}`);
    return r.level;
  };
  const version = (key: string): Version => {
    const v = str(d[key], 'latest');
    const r = parseVersion(v);
    if (r.err) errs.push(`defaults.${key}: Invalid value: ${JSON.stringify(v)}: ${r.err}`);
    return r.version;
  };
  const defaults: Policy = {
    enforce: { level: level('enforce'), version: version('enforce-version') },
    audit: { level: level('audit'), version: version('audit-version') },
    warn: { level: level('warn'), version: version('warn-version') },
  };
  const ex = c.exemptions ?? {};
  const names = (key: string, check: (v: string) => string | undefined): Set<string> => {
    const raw = ex[key] ?? [];
    const out = new Set<string>();
    if (!Array.isArray(raw)) {
      errs.push(`exemptions.${key}: Invalid value: must be a list of strings`);
      return out;
    }
    raw.forEach((v: unknown, i: number) => {
      const s = String(v ?? '');
      const why = check(s);
      if (why) errs.push(`exemptions.${key}[${i}]: Invalid value: ${JSON.stringify(s)}: ${why}`);
      else if (out.has(s)) errs.push(`exemptions.${key}[${i}]: Duplicate value: ${JSON.stringify(s)}`);
      out.add(s);
    });
    return out;
  };
  const exemptions = {
    usernames: names('usernames', (s) => (s === '' ? 'username must not be empty' : undefined)),
    runtimeClasses: names('runtimeClasses', (s) =>
      s.length <= 253 && DNS1123_SUBDOMAIN.test(s) ? undefined : "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"),
    namespaces: names('namespaces', (s) =>
      s.length <= 63 && DNS1123_LABEL.test(s) ? undefined : "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"),
  };
  if (errs.length) throw new Error(`PodSecurity invalid: ${errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`}`);
  return { defaults, exemptions };
}
