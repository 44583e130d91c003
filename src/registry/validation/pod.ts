// Pod and pod-template validation: the parts of kube's ValidatePodSpec a client meets most
// (containers, names, images, ports, env, resources, volumes and mounts, restart and DNS
// policies), with its field paths and wording.
import type { FieldError } from '../strategy.js';
import { compareQuantity, canonicalQuantity, isWholeQuantity, parseQuantity, quantitySign } from '../quantity.js';
import { VOLUME_SOURCE_KEYS } from '../defaults/pod.js';
import { validatePvcSpec } from './storage.js';
import { labelValueErrors, qualifiedNameErrors, validateTemplateMeta } from '../validation.js';
import { setOwn } from '../own-keys.js';
import {
  dns1123LabelErrors,
  dns1123SubdomainErrors as dns1123SubdomainOf,
  duplicate,
  each,
  forbidden,
  invalid,
  isInt,
  isObj,
  list,
  notFound,
  notSupported,
  PORT_RANGE_MSG,
  portNameErrors,
  required,
  validPort,
} from './field.js';

const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
const TERMINATION_MESSAGE_POLICIES = ['FallbackToLogsOnError', 'File'];
const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];
const DNS_POLICIES = ['ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None'];


function validatePorts(ports: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  list(ports).forEach((p, i) => {
    const ip = `${path}[${i}]`;
    if (!isObj(p)) return;
    if (typeof p.name === 'string' && p.name.length > 0) {
      const msgs = portNameErrors(p.name);
      if (msgs.length) errs.push(...each(`${ip}.name`, p.name, msgs));
      else if (names.has(p.name)) errs.push(duplicate(`${ip}.name`, p.name));
      else names.add(p.name);
    }
    if (!p.containerPort) errs.push(required(`${ip}.containerPort`));
    else if (!validPort(p.containerPort)) errs.push(invalid(`${ip}.containerPort`, p.containerPort, PORT_RANGE_MSG));
    if (p.hostPort && !validPort(p.hostPort)) errs.push(invalid(`${ip}.hostPort`, p.hostPort, PORT_RANGE_MSG));
    if (!p.protocol) errs.push(required(`${ip}.protocol`));
    else if (!PROTOCOLS.includes(p.protocol)) errs.push(notSupported(`${ip}.protocol`, p.protocol, PROTOCOLS));
  });
  return errs;
}

function validateEnv(env: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  list(env).forEach((e, i) => {
    const ip = `${path}[${i}]`;
    if (!isObj(e)) return;
    if (!e.name) errs.push(required(`${ip}.name`));
    // RelaxedEnvironmentVariableValidation (beta, on in 1.33): printable ASCII except '='.
    else if (!/^[\x20-\x7e]+$/.test(e.name) || e.name.includes('=')) {
      errs.push(invalid(`${ip}.name`, e.name, "a valid environment variable name must consist only of printable ASCII characters other than '='"));
    }
    if (isObj(e.valueFrom)) {
      const sources = ['fieldRef', 'resourceFieldRef', 'configMapKeyRef', 'secretKeyRef', 'fileKeyRef'].filter((k) => e.valueFrom[k] != null);
      if (e.value) errs.push(invalid(`${ip}.valueFrom`, '', 'may not be specified when `value` is not empty'));
      if (sources.length === 0) errs.push(invalid(`${ip}.valueFrom`, '', 'must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`'));
      else if (sources.length > 1) errs.push(invalid(`${ip}.valueFrom`, '', 'may not have more than one field specified at a time'));
    }
  });
  return errs;
}

/** The names IsStandardResourceName knows besides the container ones (quota names). */
const STANDARD_RESOURCES = new Set([
  'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory',
  'limits.ephemeral-storage', 'pods', 'resourcequotas', 'services', 'replicationcontrollers', 'secrets', 'persistentvolumeclaims', 'storage',
  'requests.storage', 'services.nodeports', 'services.loadbalancers',
]);
const CONTAINER_RESOURCES = new Set(['cpu', 'memory', 'ephemeral-storage']);
const isNative = (name: string) => !name.includes('/') || name.includes('kubernetes.io/');
const isHugePages = (name: string) => name.startsWith('hugepages-');
const isExtended = (name: string) => !isNative(name) && !name.startsWith('requests.') && qualifiedNameErrors('requests.' + name).length === 0;
/** Extended resources cannot be overcommitted, nor can huge pages. */
const overcommitAllowed = (name: string) => isNative(name) && !isHugePages(name);

/** validateContainerResourceName: a plain name must be a container resource; a prefixed one native or extended. */
function containerResourceNameErrors(name: string, path: string): FieldError[] {
  const qn = qualifiedNameErrors(name);
  if (qn.length) return qn.map((m) => invalid(path, name, m));
  const errs: FieldError[] = [];
  if (!name.includes('/')) {
    if (!STANDARD_RESOURCES.has(name) && !isHugePages(name) && !name.startsWith('requests.hugepages-')) {
      errs.push(invalid(path, name, 'must be a standard resource type or fully qualified'));
    }
    if (!CONTAINER_RESOURCES.has(name) && !isHugePages(name)) errs.push(invalid(path, name, 'must be a standard resource for containers'));
  } else if (!isNative(name) && !isExtended(name)) {
    errs.push(invalid(path, name, "doesn't follow extended resource name standard"));
  }
  return errs;
}

/** ValidateResourceQuantityValue: not negative; whole numbers for extended resources. */
function quantityValueErrors(name: string, q: ReturnType<typeof parseQuantity>, path: string): FieldError[] {
  if (!q) return [];
  if (quantitySign(q) < 0) return [invalid(path, canonicalQuantity(q), 'must be greater than or equal to 0')];
  if (isExtended(name) && !isWholeQuantity(q)) return [invalid(path, canonicalQuantity(q), 'must be an integer')];
  return [];
}

function validateResources(r: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(r)) return errs;
  const limits = isObj(r.limits) ? r.limits : {};
  const requests = isObj(r.requests) ? r.requests : {};
  for (const name of Object.keys(limits).sort()) {
    const p = `${path}.limits[${name}]`;
    errs.push(...containerResourceNameErrors(name, p), ...quantityValueErrors(name, parseQuantity(limits[name]), p));
  }
  for (const name of Object.keys(requests).sort()) {
    const p = `${path}.requests[${name}]`;
    const rq = parseQuantity(requests[name]);
    errs.push(...containerResourceNameErrors(name, p), ...quantityValueErrors(name, rq, p));
    const lq = parseQuantity(limits[name]);
    if (rq && lq) {
      const cmp = compareQuantity(rq, lq);
      if (cmp !== 0 && !overcommitAllowed(name)) {
        errs.push(invalid(`${path}.requests`, canonicalQuantity(rq), `must be equal to ${name} limit of ${canonicalQuantity(lq)}`));
      } else if (cmp > 0) {
        errs.push(invalid(p, canonicalQuantity(rq), `must be less than or equal to ${name} limit of ${canonicalQuantity(lq)}`));
      }
    } else if (rq && !overcommitAllowed(name)) {
      errs.push(required(`${path}.limits`, 'Limit must be set for non overcommitable resources'));
    }
  }
  return errs;
}

function validateContainer(c: any, path: string, volumes: Set<string>, isEphemeral: boolean, isPod: boolean): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(c)) return errs;
  if (!c.image) {
    errs.push(required(`${path}.image`));
  } else if (isPod && typeof c.image === 'string' && c.image.trim() !== c.image) {
    // Pods only: a template's image may be a placeholder some tools fill in later.
    errs.push(invalid(`${path}.image`, c.image, 'must not have leading or trailing whitespace'));
  }
  if (c.imagePullPolicy && !PULL_POLICIES.includes(c.imagePullPolicy)) errs.push(notSupported(`${path}.imagePullPolicy`, c.imagePullPolicy, PULL_POLICIES));
  if (c.terminationMessagePolicy && !TERMINATION_MESSAGE_POLICIES.includes(c.terminationMessagePolicy)) {
    errs.push(notSupported(`${path}.terminationMessagePolicy`, c.terminationMessagePolicy, TERMINATION_MESSAGE_POLICIES));
  }
  if (isEphemeral) {
    if (list(c.ports).length) errs.push(forbidden(`${path}.ports`, 'cannot be set on ephemeral containers'));
  } else errs.push(...validatePorts(c.ports, `${path}.ports`));
  errs.push(...validateEnv(c.env, `${path}.env`));
  const mountPaths = new Set<string>();
  list(c.volumeMounts).forEach((m, i) => {
    const ip = `${path}.volumeMounts[${i}]`;
    if (!isObj(m)) return;
    if (!m.name) errs.push(required(`${ip}.name`));
    else if (!volumes.has(m.name)) errs.push(notFound(`${ip}.name`, m.name));
    if (!m.mountPath) errs.push(required(`${ip}.mountPath`));
    else if (mountPaths.has(m.mountPath)) errs.push(invalid(`${ip}.mountPath`, m.mountPath, 'must be unique'));
    else mountPaths.add(m.mountPath);
  });
  errs.push(...validateResources(c.resources, `${path}.resources`));
  return errs;
}

function validateVolumes(volumes: unknown, path: string): { errs: FieldError[]; names: Set<string> } {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  list(volumes).forEach((v, i) => {
    const ip = `${path}[${i}]`;
    if (!isObj(v)) return;
    let nameOk = true;
    if (!v.name) {
      errs.push(required(`${ip}.name`));
      nameOk = false;
    } else {
      const msgs = dns1123LabelErrors(String(v.name));
      if (msgs.length) {
        errs.push(...each(`${ip}.name`, v.name, msgs));
        nameOk = false;
      }
    }
    if (nameOk) {
      if (names.has(v.name)) errs.push(duplicate(`${ip}.name`, v.name));
      else names.add(v.name);
    }
    const sources = VOLUME_SOURCE_KEYS.filter((k) => v[k] !== undefined && v[k] !== null);
    if (sources.length === 0) errs.push(required(ip, 'must specify a volume type'));
    for (const extra of sources.slice(1)) errs.push(forbidden(`${ip}.${extra}`, 'may not specify more than 1 volume type'));
    if (isObj(v.persistentVolumeClaim) && !v.persistentVolumeClaim.claimName) errs.push(required(`${ip}.persistentVolumeClaim.claimName`));
    if (isObj(v.configMap) && !v.configMap.name) errs.push(required(`${ip}.configMap.name`));
    if (isObj(v.secret) && !v.secret.secretName) errs.push(required(`${ip}.secret.secretName`));
    if (isObj(v.hostPath) && !v.hostPath.path) errs.push(required(`${ip}.hostPath.path`));
    if (isObj(v.ephemeral)) {
      // ValidatePersistentVolumeClaimTemplate: the claim's spec as a claim's.
      const t = v.ephemeral.volumeClaimTemplate;
      if (!isObj(t)) errs.push(required(`${ip}.ephemeral.volumeClaimTemplate`));
      else errs.push(...validatePvcSpec(t.spec, `${ip}.ephemeral.volumeClaimTemplate.spec`));
    }
  });
  return { errs, names };
}

const TOLERATION_OPERATORS = ['Equal', 'Exists'];
const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** The internal core.Toleration a field error prints (Go field names: the internal type has no JSON tags). */
function internalToleration(t: any): unknown {
  return { Key: t.key ?? '', Operator: t.operator ?? '', Value: t.value ?? '', Effect: t.effect ?? '', TolerationSeconds: t.tolerationSeconds ?? null };
}

/**
 * ValidateTolerations, with kube's paths: a bad Equal value and a value given with Exists are
 * both reported against `operator`, as kube does.
 */
export function validateTolerations(tolerations: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  list(tolerations).forEach((t, i) => {
    const ip = `${path}[${i}]`;
    if (!isObj(t)) return;
    const key = typeof t.key === 'string' ? t.key : '';
    const op = typeof t.operator === 'string' ? t.operator : '';
    const value = typeof t.value === 'string' ? t.value : '';
    const effect = typeof t.effect === 'string' ? t.effect : '';
    if (key) errs.push(...qualifiedNameErrors(key).map((m) => invalid(`${ip}.key`, key, m)));
    if (!key && op !== 'Exists') {
      errs.push(invalid(`${ip}.operator`, op, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'));
    }
    if (t.tolerationSeconds != null && effect !== 'NoExecute') {
      errs.push(invalid(`${ip}.effect`, effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    if (op === '' || op === 'Equal') {
      const msgs = labelValueErrors(value);
      if (msgs.length) errs.push(invalid(`${ip}.operator`, value, msgs.join(';')));
    } else if (op === 'Exists') {
      if (value) errs.push(invalid(`${ip}.operator`, internalToleration(t), "value must be empty when `operator` is 'Exists'"));
    } else errs.push(notSupported(`${ip}.operator`, op, TOLERATION_OPERATORS));
    if (effect && !TAINT_EFFECTS.includes(effect)) errs.push(notSupported(`${ip}.effect`, effect, TAINT_EFFECTS));
  });
  return errs;
}

/** ValidatePodSpec (the common subset). `path` is e.g. "spec" or "spec.template.spec". */
/** ValidatePodSpec; `isPod` adds the checks kube makes of a Pod and not of a template. */
export function validatePodSpec(spec: any, path: string, isPod = false): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(spec)) return [required(path)];
  const vol = validateVolumes(spec.volumes, `${path}.volumes`);
  errs.push(...vol.errs);
  const containers = list(spec.containers);
  if (containers.length === 0) errs.push(required(`${path}.containers`));
  // Container names are unique across init, regular and ephemeral containers.
  const seen = new Set<string>();
  const groups: Array<[string, any[], boolean]> = [
    ['initContainers', list(spec.initContainers), false],
    ['containers', containers, false],
    ['ephemeralContainers', list(spec.ephemeralContainers), true],
  ];
  const groupErrs: FieldError[][] = [];
  for (const [key, cs, eph] of groups) {
    const ge: FieldError[] = [];
    cs.forEach((c, i) => {
      const ip = `${path}.${key}[${i}]`;
      if (!isObj(c)) return;
      if (!c.name) ge.push(required(`${ip}.name`));
      else {
        const msgs = dns1123LabelErrors(String(c.name));
        if (msgs.length) ge.push(...each(`${ip}.name`, c.name, msgs));
        else if (seen.has(c.name)) ge.push(duplicate(`${ip}.name`, c.name));
        else seen.add(c.name);
      }
      ge.push(...validateContainer(c, ip, vol.names, eph, isPod));
    });
    groupErrs.push(ge);
  }
  // kube reports regular containers first, then init containers, then ephemeral ones.
  errs.push(...groupErrs[1], ...groupErrs[0], ...groupErrs[2]);
  if (!spec.restartPolicy) errs.push(required(`${path}.restartPolicy`));
  else if (!RESTART_POLICIES.includes(spec.restartPolicy)) errs.push(notSupported(`${path}.restartPolicy`, spec.restartPolicy, RESTART_POLICIES));
  if (!spec.dnsPolicy) errs.push(required(`${path}.dnsPolicy`));
  else if (!DNS_POLICIES.includes(spec.dnsPolicy)) errs.push(notSupported(`${path}.dnsPolicy`, spec.dnsPolicy, DNS_POLICIES));
  else if (spec.dnsPolicy === 'None' && !isObj(spec.dnsConfig)) errs.push(required(`${path}.dnsConfig`, 'must provide `dnsConfig` when `dnsPolicy` is None'));
  if (spec.activeDeadlineSeconds != null && isInt(spec.activeDeadlineSeconds) && spec.activeDeadlineSeconds <= 0) {
    errs.push(invalid(`${path}.activeDeadlineSeconds`, spec.activeDeadlineSeconds, 'must be between 1 and 2147483647, inclusive'));
  }
  if (spec.serviceAccountName) {
    for (const m of dns1123SubdomainOf(spec.serviceAccountName)) errs.push(invalid(`${path}.serviceAccountName`, spec.serviceAccountName, m));
  }
  errs.push(...validateTolerations(spec.tolerations, `${path}.tolerations`));
  if (spec.hostname) for (const m of dns1123LabelErrors(String(spec.hostname))) errs.push(invalid(`${path}.hostname`, spec.hostname, m));
  if (spec.nodeName) for (const m of dns1123SubdomainOf(spec.nodeName)) errs.push(invalid(`${path}.nodeName`, spec.nodeName, m));
  return errs;
}

/** ValidatePodTemplateSpec: the template's labels and annotations, then its spec. */
export function validatePodTemplate(tmpl: any, path: string): FieldError[] {
  if (!isObj(tmpl)) return [required(path)];
  return [...validateTemplateMeta(tmpl.metadata, `${path}.metadata`), ...validatePodSpec(tmpl.spec, `${path}.spec`)];
}

/** Fields of a Pod's spec that an update may change (ValidatePodUpdate). */
export function validatePodSpecUpdate(spec: any, old: any): FieldError[] {
  if (!isObj(spec) || !isObj(old)) return [];
  const strip = (s: any) => {
    const c = structuredClone(s);
    for (const k of ['containers', 'initContainers']) for (const ct of list(c[k])) if (isObj(ct)) delete ct.image;
    delete c.activeDeadlineSeconds;
    delete c.tolerations;
    delete c.terminationGracePeriodSeconds;
    delete c.schedulingGates;
    delete c.ephemeralContainers;
    return c;
  };
  const errs: FieldError[] = [];
  errs.push(...validateOnlyAddedTolerations(spec.tolerations, old.tolerations));
  if (JSON.stringify(sortDeep(strip(spec))) !== JSON.stringify(sortDeep(strip(old)))) {
    errs.push(
      forbidden(
        'spec',
        'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
      ),
    );
  }
  return errs;
}

/**
 * validateOnlyAddedTolerations: every toleration the pod had must still be there, with at
 * most its tolerationSeconds changed; then the new list is validated again (as kube does, so
 * a bad toleration is reported twice among the causes of an update).
 */
function validateOnlyAddedTolerations(now: unknown, before: unknown): FieldError[] {
  const norm = (t: any, seconds: unknown) =>
    JSON.stringify([t?.key ?? '', t?.operator ?? '', t?.value ?? '', t?.effect ?? '', seconds ?? null]);
  const next = list(now);
  for (const o of list(before)) {
    if (!next.some((n) => norm(o, n?.tolerationSeconds) === norm(n, n?.tolerationSeconds))) {
      return [forbidden('spec.tolerations', 'existing toleration can not be modified except its tolerationSeconds')];
    }
  }
  return validateTolerations(now, 'spec.tolerations');
}

function sortDeep(v: any): any {
  if (Array.isArray(v)) return v.map(sortDeep);
  if (!isObj(v)) return v;
  const out: any = {};
  for (const k of Object.keys(v).sort()) if (v[k] !== undefined) setOwn(out, k, sortDeep(v[k]));
  return out;
}
