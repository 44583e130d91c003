// The served catalog: the generated facts of every built-in kind, filtered by what a
// default 1.33 cluster serves and by --runtime-config.
import { catalogData } from './catalog-data.js';
import type { GroupVersionInfo, ResourceInfo } from './catalog-types.js';
import { features } from '../features.js';

/**
 * Resources kube-apiserver installs only while a feature gate is on, whatever
 * --runtime-config says (its REST storage providers check the gate before they add the
 * storage): group/version/resource → gate.
 */
const GATED_RESOURCES: Record<string, string> = {
  'admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicies': 'MutatingAdmissionPolicy',
  'admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicybindings': 'MutatingAdmissionPolicy',
};

function gateAllows(groupVersion: string, resource: string): boolean {
  const gate = GATED_RESOURCES[`${groupVersion}/${resource}`];
  return gate === undefined || features.enabled(gate);
}

/** kube-apiserver's group order in discovery (the aggregator's group priorities). */
const GROUP_ORDER = [
  '',
  'apiregistration.k8s.io',
  'apps',
  'events.k8s.io',
  'authentication.k8s.io',
  'authorization.k8s.io',
  'autoscaling',
  'batch',
  'certificates.k8s.io',
  'networking.k8s.io',
  'policy',
  'rbac.authorization.k8s.io',
  'storage.k8s.io',
  'admissionregistration.k8s.io',
  'apiextensions.k8s.io',
  'scheduling.k8s.io',
  'coordination.k8s.io',
  'node.k8s.io',
  'discovery.k8s.io',
  'resource.k8s.io',
  'flowcontrol.apiserver.k8s.io',
  'internal.apiserver.k8s.io',
  'storagemigration.k8s.io',
];

/** Version priority: GA before beta before alpha, higher numbers first (v2 > v1 > v1beta2 > v1beta1 > v1alpha1). */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return [0, 0, 0];
    const stage = m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1;
    return [stage, Number(m[1]), Number(m[3] ?? 0)];
  };
  const pa = parse(a);
  const pb = parse(b);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pb[i] - pa[i];
  return a < b ? -1 : a > b ? 1 : 0;
}

function stability(version: string): 'ga' | 'beta' | 'alpha' {
  if (/^v\d+$/.test(version)) return 'ga';
  return version.includes('beta') ? 'beta' : 'alpha';
}

const PARSE_BOOL: Record<string, boolean> = { '1': true, t: true, T: true, TRUE: true, true: true, True: true, '0': false, f: false, F: false, FALSE: false, false: false, False: false };

/** What --runtime-config switched on or off: per group-version, and per group/version/resource. */
export interface RuntimeConfig {
  groupVersions: Map<string, boolean>;
  resources: Map<string, boolean>;
}

/**
 * Parses --runtime-config: comma-separated key[=value], value omitted meaning true (values
 * as Go's strconv.ParseBool reads them). Keys: api/all, api/ga, api/beta, api/alpha; a
 * group/version (core: v1 or api/v1); a group/version/resource (core: v1/resource or
 * api/v1/resource). A key given twice keeps its last value.
 *
 * As kube-apiserver's MergeAPIResourceConfigs applies them, whatever their order in the
 * flag: first the broad switches (api/all, then api/ga, api/beta, api/alpha), then the
 * group-version keys, and a resource key wins over its group-version.
 * A key naming nothing we know is a start-up error, as it is for kube-apiserver.
 */
export function parseRuntimeConfig(spec: string, data: GroupVersionInfo[]): RuntimeConfig {
  const groupVersions = new Map<string, boolean>();
  const resources = new Map<string, boolean>();
  for (const gv of data) groupVersions.set(gv.groupVersion, gv.enabledByDefault);
  const entries = new Map<string, boolean>();
  for (const raw of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = raw.indexOf('=');
    const key = eq < 0 ? raw : raw.slice(0, eq);
    const val = eq < 0 ? 'true' : raw.slice(eq + 1);
    const on = PARSE_BOOL[val];
    if (on === undefined) throw new Error(`--runtime-config: invalid value of ${key}: ${val}, err: strconv.ParseBool: parsing ${JSON.stringify(val)}: invalid syntax`);
    entries.delete(key); // a repeated key takes the later place and value
    entries.set(key, on);
  }
  const matchers: Record<string, (v: string) => boolean> = { 'api/all': () => true, 'api/ga': (v) => stability(v) === 'ga', 'api/beta': (v) => stability(v) === 'beta', 'api/alpha': (v) => stability(v) === 'alpha' };
  for (const [key, matches] of Object.entries(matchers)) {
    const on = entries.get(key);
    if (on !== undefined) for (const gv of data) if (matches(gv.version)) groupVersions.set(gv.groupVersion, on);
  }
  for (const [key, on] of entries) {
    if (key in matchers || key === 'api/legacy') continue; // api/legacy: an old alias kube-apiserver ignores
    const parts = (key.startsWith('api/') ? key.slice(4) : key).split('/');
    // core: v1 or v1/pods; named groups: apps/v1 or apps/v1/deployments
    const core = parts.length >= 1 && /^v\d/.test(parts[0]) && parts.length <= 2;
    const gvKey = core ? parts[0] : parts.slice(0, 2).join('/');
    const resource = core ? parts[1] : parts[2];
    const gv = data.find((x) => x.groupVersion === gvKey);
    if (!gv || parts.length > (core ? 2 : 3) || (!core && parts.length < 2)) throw new Error(`--runtime-config: unknown api groupVersion "${gvKey}" in key ${JSON.stringify(key)}`);
    if (resource === undefined) {
      groupVersions.set(gvKey, on);
      continue;
    }
    if (!gv.resources.some((r) => r.resource === resource)) throw new Error(`--runtime-config: unknown resource "${resource}" of ${gvKey} in key ${JSON.stringify(key)}`);
    resources.set(`${gvKey}/${resource}`, on);
  }
  return { groupVersions, resources };
}

/** The served group-versions, each with its served resources only. */
function servedData(spec: string, data: GroupVersionInfo[]): GroupVersionInfo[] {
  const rc = parseRuntimeConfig(spec, data);
  const out: GroupVersionInfo[] = [];
  for (const gv of data) {
    const gvOn = rc.groupVersions.get(gv.groupVersion) ?? false;
    const resources = gv.resources.filter((r) => (rc.resources.get(`${gv.groupVersion}/${r.resource}`) ?? gvOn) && gateAllows(gv.groupVersion, r.resource));
    // A group-version with no served resource is not installed at all.
    if (resources.length) out.push(resources.length === gv.resources.length ? gv : { ...gv, resources });
  }
  return out;
}

export class Catalog {
  private builtin: GroupVersionInfo[];
  private served: GroupVersionInfo[];
  private byGvr = new Map<string, ResourceInfo>();
  private preferred = new Map<string, string>();
  /** Bumped whenever the served set changes (CRDs come and go): discovery and OpenAPI rebuild on it. */
  generation = 0;

  constructor(opts: { runtimeConfig?: string } = {}) {
    const order = (g: string) => {
      const i = GROUP_ORDER.indexOf(g);
      return i < 0 ? GROUP_ORDER.length : i;
    };
    this.builtin = servedData(opts.runtimeConfig ?? '', catalogData).sort((a, b) => order(a.group) - order(b.group) || (a.group < b.group ? -1 : a.group > b.group ? 1 : 0) || compareVersions(a.version, b.version));
    this.served = this.builtin;
    this.index();
  }

  private index(): void {
    this.byGvr.clear();
    this.preferred.clear();
    for (const gv of this.served) {
      if (!this.preferred.has(gv.group)) this.preferred.set(gv.group, gv.version);
      for (const r of gv.resources) this.byGvr.set(`${gv.group}/${gv.version}/${r.resource}`, r);
    }
  }

  /**
   * The group-versions served for CustomResourceDefinitions (src/api/custom-resources.ts).
   * As the aggregator orders them: after every built-in group (CRD groups have the lowest
   * group priority), by group name, versions by kube's version priority. A group-version a
   * built-in already serves is not taken over.
   */
  setCustom(gvs: GroupVersionInfo[]): void {
    const taken = new Set(this.builtin.map((g) => g.groupVersion));
    const custom = gvs.filter((g) => !taken.has(g.groupVersion)).sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0) || compareVersions(a.version, b.version));
    this.served = custom.length ? [...this.builtin, ...custom] : this.builtin;
    this.index();
    this.generation++;
  }

  servedGroupVersions(): GroupVersionInfo[] {
    return this.served;
  }

  /** Served groups, each with its served versions in priority order. */
  groups(): Array<{ name: string; versions: string[] }> {
    const out: Array<{ name: string; versions: string[] }> = [];
    for (const gv of this.served) {
      const last = out[out.length - 1];
      if (last && last.name === gv.group) last.versions.push(gv.version);
      else out.push({ name: gv.group, versions: [gv.version] });
    }
    return out;
  }

  lookup(group: string, version: string, resource: string): ResourceInfo | undefined {
    return this.byGvr.get(`${group}/${version}/${resource}`);
  }

  preferredVersion(group: string): string | undefined {
    return this.preferred.get(group);
  }
}
