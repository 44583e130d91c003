// The served catalog: the generated facts of every built-in kind, filtered by what a
// default 1.33 cluster serves and by --runtime-config.
import { catalogData } from './catalog-data.js';
import type { GroupVersionInfo, ResourceInfo } from './catalog-types.js';

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

/**
 * Applies --runtime-config: comma-separated key[=value], value omitted meaning true. Keys are
 * api/all, api/ga, api/beta, api/alpha, a group/version (core: v1 or api/v1), or a bare
 * version (which names the core group's). Later keys win over earlier ones.
 */
function applyRuntimeConfig(spec: string, data: GroupVersionInfo[]): Map<string, boolean> {
  const enabled = new Map<string, boolean>();
  for (const gv of data) enabled.set(gv.groupVersion, gv.enabledByDefault);
  for (const raw of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = raw.indexOf('=');
    const key = eq < 0 ? raw : raw.slice(0, eq);
    const val = eq < 0 ? 'true' : raw.slice(eq + 1);
    if (val !== 'true' && val !== 'false') throw new Error(`invalid value of ${key}: ${val}, err: strconv.ParseBool: parsing "${val}": invalid syntax`);
    const on = val === 'true';
    const all = { 'api/all': () => true, 'api/ga': (v: string) => stability(v) === 'ga', 'api/beta': (v: string) => stability(v) === 'beta', 'api/alpha': (v: string) => stability(v) === 'alpha' }[key];
    if (all) {
      for (const gv of data) if (all(gv.version)) enabled.set(gv.groupVersion, on);
      continue;
    }
    let gvKey = key;
    if (key === 'api/v1' || key === 'api/legacy') gvKey = 'v1';
    const parts = gvKey.split('/');
    if (parts.length > 2) {
      // group/version/resource: resource-level switches are accepted for the versions we know
      const gv = parts.slice(0, 2).join('/');
      if (!enabled.has(gv)) throw new Error(`unknown api groupVersion in --runtime-config: ${key}`);
      continue;
    }
    if (!enabled.has(gvKey)) throw new Error(`unknown api groupVersion in --runtime-config: ${key}`);
    enabled.set(gvKey, on);
  }
  return enabled;
}

export class Catalog {
  private served: GroupVersionInfo[];
  private byGvr = new Map<string, ResourceInfo>();
  private preferred = new Map<string, string>();

  constructor(opts: { runtimeConfig?: string } = {}) {
    const enabled = applyRuntimeConfig(opts.runtimeConfig ?? '', catalogData);
    const order = (g: string) => {
      const i = GROUP_ORDER.indexOf(g);
      return i < 0 ? GROUP_ORDER.length : i;
    };
    this.served = catalogData
      .filter((gv) => enabled.get(gv.groupVersion))
      .sort((a, b) => order(a.group) - order(b.group) || (a.group < b.group ? -1 : a.group > b.group ? 1 : 0) || compareVersions(a.version, b.version));
    for (const gv of this.served) {
      if (!this.preferred.has(gv.group)) this.preferred.set(gv.group, gv.version);
      for (const r of gv.resources) this.byGvr.set(`${gv.group}/${gv.version}/${r.resource}`, r);
    }
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
