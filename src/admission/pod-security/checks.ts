// The Pod Security Standards checks of kube-apiserver 1.33 (k8s.io/pod-security-admission/policy,
// one check_*.go each), with the policy versions each form of a check applies from, and kube's
// check registry (registry.go): for every level and version the list of checks to run, baseline
// checks first then restricted ones, each group in the order of their IDs, a restricted check
// replacing the baseline checks it overrides. Checks read the pod's metadata and spec as JSON.
//
// Thread ownership: none (the registry is built once at load and only read).
import { type LevelVersion } from './api.js';
import { features } from '../../features.js';
import { goQuote } from '../../errors.js';

export interface CheckResult {
  allowed: boolean;
  /** short, always shown: "host ports", "privileged" */
  reason?: string;
  /** the values that made it fail, shown for a single object */
  detail?: string;
}

type CheckFn = (meta: any, spec: any) => CheckResult;

interface VersionedCheck {
  /** the first policy minor version (1.x) this form applies to */
  minor: number;
  fn: CheckFn;
  /** baseline check IDs this restricted check replaces at restricted level */
  overrides?: string[];
}

export interface Check {
  id: string;
  level: 'baseline' | 'restricted';
  versions: VersionedCheck[];
}

const ALLOWED: CheckResult = Object.freeze({ allowed: true });
const deny = (reason: string, detail: string): CheckResult => ({ allowed: false, reason, detail });

const pluralize = (one: string, many: string, n: number) => (n === 1 ? one : many);
/** kube's joinQuote: "a", "b" */
const joinQuote = (items: string[]) => `"${items.join('", "')}"`;
/** sets.NewString(...).List(): unique and sorted */
const sortedSet = (s: Set<string>) => [...s].sort();

const obj = (v: any): any => (v !== null && typeof v === 'object' && !Array.isArray(v) ? v : undefined);
const list = (v: any): any[] => (Array.isArray(v) ? v : []);
const nameOf = (c: any): string => (typeof c?.name === 'string' ? c.name : '');

/** kube's visitContainers: init containers, then containers, then ephemeral containers. */
function containers(spec: any): any[] {
  const init = list(spec?.initContainers);
  const main = list(spec?.containers);
  const eph = list(spec?.ephemeralContainers);
  if (init.length === 0 && eph.length === 0) return main;
  return [...init, ...main, ...eph];
}

const sc = (c: any) => obj(c?.securityContext);

/**
 * kube's relaxPolicyForUserNamespacePod: a pod in its own user namespace (hostUsers: false)
 * passes the root and procMount checks, only under the UserNamespacesPodSecurityStandards
 * gate (alpha, off by default in 1.33).
 */
const relaxForUserNamespace = (spec: any): boolean => spec?.hostUsers === false && features.enabled('UserNamespacesPodSecurityStandards');
const podSc = (spec: any) => obj(spec?.securityContext);
const isWindows = (spec: any) => obj(spec?.os)?.name === 'windows';

/** "pod and containers "a", "b"" style setter lists. */
function setters(pod: boolean, bad: string[]): string[] {
  const out: string[] = [];
  if (pod) out.push('pod');
  if (bad.length) out.push(`${pluralize('container', 'containers', bad.length)} ${joinQuote(bad)}`);
  return out;
}

// ---------------------------------------------------------------- baseline

// check_privileged.go
function privileged(_m: any, spec: any): CheckResult {
  const bad = containers(spec).filter((c) => sc(c)?.privileged === true).map(nameOf);
  if (!bad.length) return ALLOWED;
  return deny('privileged', `${pluralize('container', 'containers', bad.length)} ${joinQuote(bad)} must not set securityContext.privileged=true`);
}

// check_hostNamespaces.go
function hostNamespaces(_m: any, spec: any): CheckResult {
  const host: string[] = [];
  if (spec?.hostNetwork === true) host.push('hostNetwork=true');
  if (spec?.hostPID === true) host.push('hostPID=true');
  if (spec?.hostIPC === true) host.push('hostIPC=true');
  return host.length ? deny('host namespaces', host.join(', ')) : ALLOWED;
}

// check_hostPathVolumes.go
function hostPathVolumes(_m: any, spec: any): CheckResult {
  const bad = list(spec?.volumes).filter((v) => obj(v?.hostPath) !== undefined).map(nameOf);
  if (!bad.length) return ALLOWED;
  return deny('hostPath volumes', `${pluralize('volume', 'volumes', bad.length)} ${joinQuote(bad)}`);
}

// check_hostPorts.go
function hostPorts(_m: any, spec: any): CheckResult {
  const bad: string[] = [];
  const ports = new Set<string>();
  for (const c of containers(spec)) {
    let valid = true;
    for (const p of list(c?.ports)) {
      const hp = p?.hostPort;
      if (typeof hp === 'number' && hp !== 0) {
        valid = false;
        ports.add(String(hp));
      }
    }
    if (!valid) bad.push(nameOf(c));
  }
  if (!bad.length) return ALLOWED;
  return deny(
    'hostPort',
    `${pluralize('container', 'containers', bad.length)} ${joinQuote(bad)} ${pluralize('uses', 'use', bad.length)} ${pluralize('hostPort', 'hostPorts', ports.size)} ${sortedSet(ports).join(', ')}`,
  );
}

// check_capabilities_baseline.go
const CAPABILITIES_ALLOWED_1_0 = new Set([
  'AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT',
]);
function capabilitiesBaseline(_m: any, spec: any): CheckResult {
  const bad: string[] = [];
  const caps = new Set<string>();
  for (const c of containers(spec)) {
    const capsObj = obj(sc(c)?.capabilities);
    if (!capsObj) continue;
    let valid = true;
    for (const cap of list(capsObj.add)) {
      if (!CAPABILITIES_ALLOWED_1_0.has(cap)) {
        valid = false;
        caps.add(String(cap));
      }
    }
    if (!valid) bad.push(nameOf(c));
  }
  if (!bad.length) return ALLOWED;
  return deny(
    'non-default capabilities',
    `${pluralize('container', 'containers', bad.length)} ${joinQuote(bad)} must not include ${joinQuote(sortedSet(caps))} in securityContext.capabilities.add`,
  );
}

// check_appArmorProfile.go (the field since 1.30, and the beta annotations)
const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';
const allowedAppArmorAnnotation = (v: string) => v === '' || v === 'runtime/default' || v.startsWith('localhost/');
const allowedAppArmorType = (t: unknown) => t === 'RuntimeDefault' || t === 'Localhost';
function appArmorProfile(meta: any, spec: any): CheckResult {
  const badSetters: string[] = [];
  const badValues = new Set<string>();
  const podProfile = obj(podSc(spec)?.appArmorProfile);
  if (podProfile && !allowedAppArmorType(podProfile.type)) {
    badSetters.push('pod');
    badValues.add(String(podProfile.type ?? ''));
  }
  const bad: string[] = [];
  for (const c of containers(spec)) {
    const p = obj(sc(c)?.appArmorProfile);
    if (p && !allowedAppArmorType(p.type)) {
      bad.push(nameOf(c));
      badValues.add(String(p.type ?? ''));
    }
  }
  if (bad.length) badSetters.push(`${pluralize('container', 'containers', bad.length)} ${joinQuote(bad)}`);
  const annotations = obj(meta?.annotations);
  const forbidden: string[] = [];
  if (annotations) {
    for (const [k, v] of Object.entries(annotations)) {
      if (k.startsWith(APPARMOR_ANNOTATION_PREFIX) && !allowedAppArmorAnnotation(String(v))) forbidden.push(`${k}=${goQuote(String(v))}`);
    }
  }
  const values = sortedSet(badValues);
  if (forbidden.length) {
    forbidden.sort();
    values.push(...forbidden);
    badSetters.push(pluralize('annotation', 'annotations', forbidden.length));
  }
  if (!badSetters.length) return ALLOWED;
  return deny(
    pluralize('forbidden AppArmor profile', 'forbidden AppArmor profiles', values.length),
    `${badSetters.join(' and ')} must not set AppArmor profile type to ${joinQuote(values)}`,
  );
}

// check_seLinuxOptions.go
const SELINUX_TYPES_1_0 = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t']);
const SELINUX_TYPES_1_31 = new Set([...SELINUX_TYPES_1_0, 'container_engine_t']);
function seLinuxOptions(allowedTypes: Set<string>): CheckFn {
  return (_m, spec) => {
    const badTypes = new Set<string>();
    let setUser = false;
    let setRole = false;
    const valid = (o: any): boolean => {
      let ok = true;
      const t = typeof o.type === 'string' ? o.type : '';
      if (!allowedTypes.has(t)) {
        ok = false;
        badTypes.add(t);
      }
      if (typeof o.user === 'string' && o.user.length > 0) {
        ok = false;
        setUser = true;
      }
      if (typeof o.role === 'string' && o.role.length > 0) {
        ok = false;
        setRole = true;
      }
      return ok;
    };
    const podOpts = obj(podSc(spec)?.seLinuxOptions);
    const podBad = podOpts !== undefined && !valid(podOpts);
    const bad: string[] = [];
    for (const c of containers(spec)) {
      const o = obj(sc(c)?.seLinuxOptions);
      if (o && !valid(o)) bad.push(nameOf(c));
    }
    const who = setters(podBad, bad);
    if (!who.length) return ALLOWED;
    const data: string[] = [];
    if (badTypes.size) data.push(`${pluralize('type', 'types', badTypes.size)} ${joinQuote(sortedSet(badTypes))}`);
    if (setUser) data.push('user may not be set');
    if (setRole) data.push('role may not be set');
    return deny('seLinuxOptions', `${who.join(' and ')} set forbidden securityContext.seLinuxOptions: ${data.join('; ')}`);
  };
}

// check_procMount.go
function procMount(_m: any, spec: any): CheckResult {
  if (relaxForUserNamespace(spec)) return ALLOWED;
  const bad: string[] = [];
  const types = new Set<string>();
  for (const c of containers(spec)) {
    const pm = sc(c)?.procMount;
    if (pm === undefined || pm === null) continue;
    if (pm !== 'Default') {
      bad.push(nameOf(c));
      types.add(String(pm));
    }
  }
  if (!bad.length) return ALLOWED;
  return deny('procMount', `${pluralize('container', 'containers', bad.length)} ${joinQuote(bad)} must not set securityContext.procMount to ${joinQuote(sortedSet(types))}`);
}

// check_seccompProfile_baseline.go
const SECCOMP_POD_ANNOTATION = 'seccomp.security.alpha.kubernetes.io/pod';
const SECCOMP_CONTAINER_ANNOTATION_PREFIX = 'container.seccomp.security.alpha.kubernetes.io/';
const validSeccomp = (t: unknown) => t === 'Localhost' || t === 'RuntimeDefault';
const validSeccompAnnotation = (v: string) => v === 'runtime/default' || v === 'docker/default' || v.startsWith('localhost/');

/** Before 1.19 the profile was given by the alpha annotations. */
function seccompProfileBaseline_1_0(meta: any, spec: any): CheckResult {
  const annotations = obj(meta?.annotations);
  if (!annotations) return ALLOWED;
  const forbidden = new Set<string>();
  const podVal = annotations[SECCOMP_POD_ANNOTATION];
  if (podVal !== undefined && !validSeccompAnnotation(String(podVal))) forbidden.add(`${SECCOMP_POD_ANNOTATION}=${goQuote(String(podVal))}`);
  for (const c of containers(spec)) {
    const key = SECCOMP_CONTAINER_ANNOTATION_PREFIX + nameOf(c);
    const v = annotations[key];
    if (v !== undefined && !validSeccompAnnotation(String(v))) forbidden.add(`${key}=${goQuote(String(v))}`);
  }
  if (!forbidden.size) return ALLOWED;
  return deny('seccompProfile', `forbidden ${pluralize('annotation', 'annotations', forbidden.size)} ${sortedSet(forbidden).join(', ')}`);
}

function seccompProfileBaseline_1_19(_m: any, spec: any): CheckResult {
  const badValues = new Set<string>();
  const pod = obj(podSc(spec)?.seccompProfile);
  let podBad = false;
  if (pod && !validSeccomp(pod.type)) {
    podBad = true;
    badValues.add(String(pod.type ?? ''));
  }
  const bad: string[] = [];
  for (const c of containers(spec)) {
    const p = obj(sc(c)?.seccompProfile);
    if (p && !validSeccomp(p.type)) {
      bad.push(nameOf(c));
      badValues.add(String(p.type ?? ''));
    }
  }
  const who = setters(podBad, bad);
  if (!who.length) return ALLOWED;
  return deny('seccompProfile', `${who.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(sortedSet(badValues))}`);
}

// check_sysctls.go
const SYSCTLS_1_0 = ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_unprivileged_port_start'];
const SYSCTLS_1_27 = [...SYSCTLS_1_0, 'net.ipv4.ip_local_reserved_ports'];
const SYSCTLS_1_29 = [...SYSCTLS_1_27, 'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes'];
const SYSCTLS_1_32 = [...SYSCTLS_1_29, 'net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem'];
function sysctls(allowed: string[]): CheckFn {
  const set = new Set(allowed);
  return (_m, spec) => {
    const forbidden = list(podSc(spec)?.sysctls).map((s) => String(s?.name ?? '')).filter((n) => !set.has(n));
    return forbidden.length ? deny('forbidden sysctls', forbidden.join(', ')) : ALLOWED;
  };
}

// check_windowsHostProcess.go
function windowsHostProcess(_m: any, spec: any): CheckResult {
  const bad = containers(spec).filter((c) => obj(sc(c)?.windowsOptions)?.hostProcess === true).map(nameOf);
  const pod = obj(podSc(spec)?.windowsOptions)?.hostProcess === true;
  const who = setters(pod, bad);
  if (!who.length) return ALLOWED;
  return deny('hostProcess', `${who.join(' and ')} must not set securityContext.windowsOptions.hostProcess=true`);
}

// ---------------------------------------------------------------- restricted

// check_allowPrivilegeEscalation.go
function allowPrivilegeEscalation_1_8(_m: any, spec: any): CheckResult {
  const bad = containers(spec).filter((c) => sc(c)?.allowPrivilegeEscalation !== false).map(nameOf);
  if (!bad.length) return ALLOWED;
  return deny('allowPrivilegeEscalation != false', `${pluralize('container', 'containers', bad.length)} ${joinQuote(bad)} must set securityContext.allowPrivilegeEscalation=false`);
}

/** From 1.25 a Windows pod is not checked (pod validation refuses the field there). */
const skipWindows = (fn: CheckFn): CheckFn => (m, spec) => (isWindows(spec) ? ALLOWED : fn(m, spec));

// check_capabilities_restricted.go
function capabilitiesRestricted_1_22(_m: any, spec: any): CheckResult {
  const missingDropAll: string[] = [];
  const adding: string[] = [];
  const forbidden = new Set<string>();
  for (const c of containers(spec)) {
    const caps = obj(sc(c)?.capabilities);
    if (!caps) {
      missingDropAll.push(nameOf(c));
      continue;
    }
    if (!list(caps.drop).includes('ALL')) missingDropAll.push(nameOf(c));
    let addedForbidden = false;
    for (const cap of list(caps.add)) {
      if (cap !== 'NET_BIND_SERVICE') {
        addedForbidden = true;
        forbidden.add(String(cap));
      }
    }
    if (addedForbidden) adding.push(nameOf(c));
  }
  const details: string[] = [];
  if (missingDropAll.length) {
    details.push(`${pluralize('container', 'containers', missingDropAll.length)} ${joinQuote(missingDropAll)} must set securityContext.capabilities.drop=["ALL"]`);
  }
  if (adding.length) {
    details.push(`${pluralize('container', 'containers', adding.length)} ${joinQuote(adding)} must not include ${joinQuote(sortedSet(forbidden))} in securityContext.capabilities.add`);
  }
  return details.length ? deny('unrestricted capabilities', details.join('; ')) : ALLOWED;
}

// check_restrictedVolumes.go: the allowed inline volume sources; the others named in
// kube's order (the first source set names the volume's type)
const ALLOWED_VOLUME_SOURCES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'image', 'persistentVolumeClaim', 'projected', 'secret'];
const RESTRICTED_VOLUME_SOURCES = [
  'hostPath', 'gcePersistentDisk', 'awsElasticBlockStore', 'gitRepo', 'nfs', 'iscsi', 'glusterfs', 'rbd', 'flexVolume', 'cinder', 'cephfs', 'flocker',
  'fc', 'azureFile', 'vsphereVolume', 'quobyte', 'azureDisk', 'photonPersistentDisk', 'portworxVolume', 'scaleIO', 'storageos',
];
function restrictedVolumes(_m: any, spec: any): CheckResult {
  const bad: string[] = [];
  const types = new Set<string>();
  for (const v of list(spec?.volumes)) {
    if (ALLOWED_VOLUME_SOURCES.some((k) => obj(v?.[k]) !== undefined)) continue;
    bad.push(nameOf(v));
    types.add(RESTRICTED_VOLUME_SOURCES.find((k) => obj(v?.[k]) !== undefined) ?? 'unknown');
  }
  if (!bad.length) return ALLOWED;
  return deny(
    'restricted volume types',
    `${pluralize('volume', 'volumes', bad.length)} ${joinQuote(bad)} ${pluralize('uses', 'use', bad.length)} ${pluralize('restricted volume type', 'restricted volume types', types.size)} ${joinQuote(sortedSet(types))}`,
  );
}

// check_runAsNonRoot.go
function runAsNonRoot(_m: any, spec: any): CheckResult {
  if (relaxForUserNamespace(spec)) return ALLOWED;
  const podVal = podSc(spec)?.runAsNonRoot;
  const podBad = podVal === false;
  const podNonRoot = podVal === true;
  const explicitlyBad: string[] = [];
  const implicitlyBad: string[] = [];
  for (const c of containers(spec)) {
    const v = sc(c)?.runAsNonRoot;
    if (typeof v === 'boolean') {
      if (!v) explicitlyBad.push(nameOf(c));
    } else if (!podNonRoot) implicitlyBad.push(nameOf(c));
  }
  const who = setters(podBad, explicitlyBad);
  if (who.length) return deny('runAsNonRoot != true', `${who.join(' and ')} must not set securityContext.runAsNonRoot=false`);
  if (implicitlyBad.length) {
    return deny('runAsNonRoot != true', `pod or ${pluralize('container', 'containers', implicitlyBad.length)} ${joinQuote(implicitlyBad)} must set securityContext.runAsNonRoot=true`);
  }
  return ALLOWED;
}

// check_runAsUser.go
function runAsUser(_m: any, spec: any): CheckResult {
  if (relaxForUserNamespace(spec)) return ALLOWED;
  const podBad = podSc(spec)?.runAsUser === 0;
  const bad = containers(spec).filter((c) => sc(c)?.runAsUser === 0).map(nameOf);
  const who = setters(podBad, bad);
  return who.length ? deny('runAsUser=0', `${who.join(' and ')} must not set runAsUser=0`) : ALLOWED;
}

// check_seccompProfile_restricted.go
function seccompProfileRestricted_1_19(_m: any, spec: any): CheckResult {
  const badValues = new Set<string>();
  const pod = obj(podSc(spec)?.seccompProfile);
  let podBad = false;
  let podSet = false;
  if (pod) {
    if (!validSeccomp(pod.type)) {
      podBad = true;
      badValues.add(String(pod.type ?? ''));
    } else podSet = true;
  }
  const explicitlyBad: string[] = [];
  const implicitlyBad: string[] = [];
  for (const c of containers(spec)) {
    const p = obj(sc(c)?.seccompProfile);
    if (p) {
      if (!validSeccomp(p.type)) {
        explicitlyBad.push(nameOf(c));
        badValues.add(String(p.type ?? ''));
      }
    } else if (!podSet) implicitlyBad.push(nameOf(c));
  }
  const who = setters(podBad, explicitlyBad);
  if (who.length) return deny('seccompProfile', `${who.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(sortedSet(badValues))}`);
  if (implicitlyBad.length) {
    return deny(
      'seccompProfile',
      `pod or ${pluralize('container', 'containers', implicitlyBad.length)} ${joinQuote(implicitlyBad)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`,
    );
  }
  return ALLOWED;
}

// ---------------------------------------------------------------- the 1.33 set

/** kube's policy.DefaultChecks() as of 1.33. */
export const DEFAULT_CHECKS: Check[] = [
  { id: 'allowPrivilegeEscalation', level: 'restricted', versions: [{ minor: 8, fn: allowPrivilegeEscalation_1_8 }, { minor: 25, fn: skipWindows(allowPrivilegeEscalation_1_8) }] },
  { id: 'appArmorProfile', level: 'baseline', versions: [{ minor: 0, fn: appArmorProfile }] },
  { id: 'capabilities_baseline', level: 'baseline', versions: [{ minor: 0, fn: capabilitiesBaseline }] },
  {
    id: 'capabilities_restricted',
    level: 'restricted',
    versions: [
      { minor: 22, fn: capabilitiesRestricted_1_22, overrides: ['capabilities_baseline'] },
      { minor: 25, fn: skipWindows(capabilitiesRestricted_1_22), overrides: ['capabilities_baseline'] },
    ],
  },
  { id: 'hostNamespaces', level: 'baseline', versions: [{ minor: 0, fn: hostNamespaces }] },
  { id: 'hostPathVolumes', level: 'baseline', versions: [{ minor: 0, fn: hostPathVolumes }] },
  { id: 'hostPorts', level: 'baseline', versions: [{ minor: 0, fn: hostPorts }] },
  { id: 'privileged', level: 'baseline', versions: [{ minor: 0, fn: privileged }] },
  { id: 'procMount', level: 'baseline', versions: [{ minor: 0, fn: procMount }] },
  { id: 'restrictedVolumes', level: 'restricted', versions: [{ minor: 0, fn: restrictedVolumes, overrides: ['hostPathVolumes'] }] },
  { id: 'runAsNonRoot', level: 'restricted', versions: [{ minor: 0, fn: runAsNonRoot }] },
  { id: 'runAsUser', level: 'restricted', versions: [{ minor: 23, fn: runAsUser }] },
  { id: 'seLinuxOptions', level: 'baseline', versions: [{ minor: 0, fn: seLinuxOptions(SELINUX_TYPES_1_0) }, { minor: 31, fn: seLinuxOptions(SELINUX_TYPES_1_31) }] },
  { id: 'seccompProfile_baseline', level: 'baseline', versions: [{ minor: 0, fn: seccompProfileBaseline_1_0 }, { minor: 19, fn: seccompProfileBaseline_1_19 }] },
  {
    id: 'seccompProfile_restricted',
    level: 'restricted',
    versions: [
      { minor: 19, fn: seccompProfileRestricted_1_19, overrides: ['seccompProfile_baseline'] },
      { minor: 25, fn: skipWindows(seccompProfileRestricted_1_19), overrides: ['seccompProfile_baseline'] },
    ],
  },
  {
    id: 'sysctls',
    level: 'baseline',
    versions: [{ minor: 0, fn: sysctls(SYSCTLS_1_0) }, { minor: 27, fn: sysctls(SYSCTLS_1_27) }, { minor: 29, fn: sysctls(SYSCTLS_1_29) }, { minor: 32, fn: sysctls(SYSCTLS_1_32) }],
  },
  { id: 'windowsHostProcess', level: 'baseline', versions: [{ minor: 0, fn: windowsHostProcess }] },
];

/** Go's sort.Strings order (bytewise, so upper case before lower case). */
const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * kube's checkRegistry: per minor version from 1.0 to the newest any check names, the
 * functions to run at baseline and at restricted; a later version (or latest) runs the newest.
 */
export class Evaluator {
  private readonly baseline: CheckFn[][] = [];
  private readonly restricted: CheckFn[][] = [];
  readonly maxMinor: number;

  constructor(checks: Check[] = DEFAULT_CHECKS) {
    this.maxMinor = Math.max(0, ...checks.map((c) => c.versions[c.versions.length - 1].minor));
    const baselineIds = checks.filter((c) => c.level === 'baseline').map((c) => c.id).sort(byteOrder);
    const restrictedIds = checks.filter((c) => c.level === 'restricted').map((c) => c.id).sort(byteOrder);
    const ordered = [...baselineIds, ...restrictedIds];
    const byId = new Map(checks.map((c) => [c.id, c]));
    // the form of a check that applies at minor v (undefined before its first)
    const at = (c: Check, v: number): VersionedCheck | undefined => {
      let found: VersionedCheck | undefined;
      for (const vc of c.versions) if (vc.minor <= v) found = vc;
      return found;
    };
    for (let v = 0; v <= this.maxMinor; v++) {
      const overridden = new Set<string>();
      for (const id of restrictedIds) for (const o of at(byId.get(id)!, v)?.overrides ?? []) overridden.add(o);
      const b: CheckFn[] = [];
      const r: CheckFn[] = [];
      for (const id of ordered) {
        const c = byId.get(id)!;
        const vc = at(c, v);
        if (!vc) continue;
        if (c.level === 'baseline') {
          b.push(vc.fn);
          if (!overridden.has(id)) r.push(vc.fn);
        } else r.push(vc.fn);
      }
      this.baseline.push(b);
      this.restricted.push(r);
    }
  }

  /** kube's EvaluatePod: every check's result for the level and version (none for privileged). */
  evaluate(lv: LevelVersion, meta: any, spec: any): CheckResult[] {
    if (lv.level === 'privileged') return [];
    const v = lv.version.latest || lv.version.minor > this.maxMinor ? this.maxMinor : lv.version.minor;
    const fns = lv.level === 'baseline' ? this.baseline[v] : this.restricted[v];
    const out: CheckResult[] = new Array(fns.length);
    for (let i = 0; i < fns.length; i++) out[i] = fns[i](meta, spec);
    return out;
  }
}

/** kube's AggregateCheckResult: the failed checks' reasons and details, in check order. */
export interface Aggregate {
  allowed: boolean;
  reasons: string[];
  details: string[];
}

export function aggregate(results: CheckResult[]): Aggregate {
  const reasons: string[] = [];
  const details: string[] = [];
  for (const r of results) {
    if (r.allowed) continue;
    reasons.push(r.reason || 'unknown forbidden reason');
    details.push(r.detail ?? '');
  }
  return { allowed: reasons.length === 0, reasons, details };
}

/** ForbiddenReason(): the reasons, comma-separated. */
export const forbiddenReason = (a: Aggregate): string => a.reasons.join(', ');

/** ForbiddenDetail(): each reason with its detail in parentheses when it has one. */
export function forbiddenDetail(a: Aggregate): string {
  let s = '';
  for (let i = 0; i < a.reasons.length; i++) {
    if (i) s += ', ';
    s += a.reasons[i];
    if (a.details[i]) s += ` (${a.details[i]})`;
  }
  return s;
}
