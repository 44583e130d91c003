// Discovery documents, built from the served catalog once at start-up.
import type { Catalog } from './catalog.js';
import type { ResourceInfo } from './catalog-types.js';

function gvOf(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}

export function versionDoc(): string {
  return JSON.stringify({
    major: '1',
    minor: '33',
    emulationMajor: '1',
    emulationMinor: '33',
    minCompatibilityMajor: '1',
    minCompatibilityMinor: '32',
    gitVersion: 'v1.33.0-kubeshard',
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-11-22T00:00:00Z',
    goVersion: `node${process.versions.node}`,
    compiler: 'tsc',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  });
}

export function apiVersionsDoc(serverAddress: string): string {
  return JSON.stringify({ kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] });
}

function groupEntry(catalog: Catalog, name: string, versions: string[]) {
  const preferred = catalog.preferredVersion(name)!;
  return {
    name,
    versions: versions.map((v) => ({ groupVersion: gvOf(name, v), version: v })),
    preferredVersion: { groupVersion: gvOf(name, preferred), version: preferred },
  };
}

export function apiGroupListDoc(catalog: Catalog): string {
  const groups = catalog.groups().filter((g) => g.name !== '').map((g) => groupEntry(catalog, g.name, g.versions));
  return JSON.stringify({ kind: 'APIGroupList', apiVersion: 'v1', groups });
}

export function apiGroupDoc(catalog: Catalog, group: string): string {
  const g = catalog.groups().find((x) => x.name === group);
  if (!g) throw new Error(`group ${group} is not served`);
  return JSON.stringify({ kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(catalog, group, g.versions) });
}

function resourceEntries(r: ResourceInfo): object[] {
  const main: Record<string, unknown> = { name: r.resource, singularName: r.singularName, namespaced: r.namespaced, kind: r.kind, verbs: r.verbs };
  if (r.shortNames.length) main.shortNames = r.shortNames;
  if (r.categories.length) main.categories = r.categories;
  if (r.storageVersionHash) main.storageVersionHash = r.storageVersionHash;
  const out: object[] = [main];
  for (const s of r.subresources) {
    const e: Record<string, unknown> = { name: `${r.resource}/${s.name}`, singularName: '', namespaced: r.namespaced };
    if (s.group !== undefined) e.group = s.group;
    if (s.version !== undefined) e.version = s.version;
    e.kind = s.kind;
    e.verbs = s.verbs;
    out.push(e);
  }
  return out;
}

export function apiResourceListDoc(catalog: Catalog, group: string, version: string): string {
  const gv = catalog.servedGroupVersions().find((x) => x.group === group && x.version === version);
  if (!gv) throw new Error(`${gvOf(group, version)} is not served`);
  const resources = [...gv.resources].sort((a, b) => (a.resource < b.resource ? -1 : 1)).flatMap(resourceEntries);
  const doc: Record<string, unknown> = { kind: 'APIResourceList' };
  if (group) doc.apiVersion = 'v1';
  doc.groupVersion = gv.groupVersion;
  doc.resources = resources;
  return JSON.stringify(doc);
}

function aggregatedResource(r: ResourceInfo): object {
  const e: Record<string, unknown> = {
    resource: r.resource,
    responseKind: { group: '', version: '', kind: r.kind },
    scope: r.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: r.singularName,
    verbs: r.verbs,
  };
  if (r.shortNames.length) e.shortNames = r.shortNames;
  if (r.categories.length) e.categories = r.categories;
  if (r.subresources.length) {
    e.subresources = r.subresources.map((s) => ({
      subresource: s.name,
      responseKind: { group: s.group ?? '', version: s.version ?? '', kind: s.kind },
      verbs: s.verbs,
    }));
  }
  return e;
}

/** The aggregated discovery document (apidiscovery.k8s.io) of /api or /apis. */
export function aggregatedDiscoveryDoc(catalog: Catalog, which: 'api' | 'apis', version: 'v2' | 'v2beta1'): string {
  const items = catalog
    .groups()
    .filter((g) => (which === 'api' ? g.name === '' : g.name !== ''))
    .map((g) => ({
      metadata: which === 'api' ? { creationTimestamp: null } : { name: g.name, creationTimestamp: null },
      versions: g.versions.map((v) => {
        const gv = catalog.servedGroupVersions().find((x) => x.group === g.name && x.version === v)!;
        return { version: v, resources: [...gv.resources].sort((a, b) => (a.resource < b.resource ? -1 : 1)).map(aggregatedResource), freshness: 'Current' };
      }),
    }));
  return JSON.stringify({ kind: 'APIGroupDiscoveryList', apiVersion: `apidiscovery.k8s.io/${version}`, metadata: {}, items });
}
