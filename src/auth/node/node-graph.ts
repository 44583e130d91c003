// The Node authorizer's graph (kube's plugin/pkg/auth/authorizer/node graph and
// graph_populator): which objects each node may reach through the pods bound to it. Pods
// are the edges' source: a pod bound to a node links that node to its service account,
// secrets, config maps, claims and resource claims (per namespace). Claims lead on to their
// volume (spec.volumeName), and a volume to the secrets its source names; those hops are
// read from the caches when a request asks, so a claim or volume change needs no graph
// update. VolumeAttachments link to their node (spec.nodeName).
//
// Thread ownership: the front thread. Kept from the pods cache: built once from it, then
// updated by the pod events of each committed batch (an observer of the cache layer).

import { podReferences, pvSecretRefs, type PodRefs } from './pod-references.js';

export type VertexType = 'secret' | 'configmap' | 'pvc' | 'pv' | 'serviceaccount' | 'resourceclaim' | 'pod' | 'volumeattachment' | 'resourceslice';

export interface GraphSource {
  /** an object of the caches ('' group for core), or undefined */
  get(resource: 'persistentvolumeclaims' | 'persistentvolumes' | 'volumeattachments' | 'resourceslices', namespace: string, name: string): any;
}

interface PodEdge {
  node: string;
  ns: string;
  refs: PodRefs;
}

export class NodeGraph {
  /** pod key ("ns/name") to what it links */
  private pods = new Map<string, PodEdge>();
  /** node name to "<type>/<ns>/<name>" to how many of its pods link it */
  private reach = new Map<string, Map<string, number>>();

  constructor(private source: GraphSource) {}

  private bump(node: string, key: string, by: number): void {
    let m = this.reach.get(node);
    if (!m) this.reach.set(node, (m = new Map()));
    const n = (m.get(key) ?? 0) + by;
    if (n <= 0) m.delete(key);
    else m.set(key, n);
    if (m.size === 0) this.reach.delete(node);
  }

  private keysOf(podName: string, e: PodEdge): string[] {
    const k = [`pod/${e.ns}/${podName}`];
    if (e.refs.serviceAccount) k.push(`serviceaccount/${e.ns}/${e.refs.serviceAccount}`);
    for (const s of e.refs.secrets) k.push(`secret/${e.ns}/${s}`);
    for (const c of e.refs.configMaps) k.push(`configmap/${e.ns}/${c}`);
    for (const p of e.refs.pvcs) k.push(`pvc/${e.ns}/${p}`);
    for (const r of e.refs.resourceClaims) k.push(`resourceclaim/${e.ns}/${r}`);
    return k;
  }

  /** A pod as it now is (added or modified); one without spec.nodeName links nothing. */
  setPod(pod: any): void {
    const ns = pod?.metadata?.namespace ?? '';
    const name = pod?.metadata?.name ?? '';
    this.deletePod(ns, name);
    const node = pod?.spec?.nodeName;
    if (typeof node !== 'string' || !node) return;
    const e: PodEdge = { node, ns, refs: podReferences(pod) };
    this.pods.set(`${ns}/${name}`, e);
    for (const k of this.keysOf(name, e)) this.bump(node, k, 1);
  }

  deletePod(ns: string, name: string): void {
    const e = this.pods.get(`${ns}/${name}`);
    if (!e) return;
    this.pods.delete(`${ns}/${name}`);
    for (const k of this.keysOf(name, e)) this.bump(e.node, k, -1);
  }

  /** kube's hasPathFrom: whether the object is reachable from the node. */
  hasPathFrom(node: string, type: VertexType, ns: string, name: string): boolean {
    const m = this.reach.get(node);
    if (type === 'volumeattachment') return this.source.get('volumeattachments', '', name)?.spec?.nodeName === node;
    if (type === 'resourceslice') return this.source.get('resourceslices', '', name)?.spec?.nodeName === node;
    if (!m) return false;
    if (type === 'pv') return this.claimsOf(m).some((pvc) => pvc?.spec?.volumeName === name);
    if (m.has(`${type}/${ns}/${name}`)) return true;
    // a secret a volume of the node's claims names
    if (type === 'secret') {
      for (const pvc of this.claimsOf(m)) {
        const vol = pvc?.spec?.volumeName;
        if (vol && pvSecretRefs(this.source.get('persistentvolumes', '', vol)).includes(`${ns}/${name}`)) return true;
      }
    }
    return false;
  }

  private claimsOf(m: Map<string, number>): any[] {
    const out: any[] = [];
    for (const k of m.keys()) {
      if (!k.startsWith('pvc/')) continue;
      const [, ns, name] = k.split('/');
      const pvc = this.source.get('persistentvolumeclaims', ns, name);
      if (pvc) out.push(pvc);
    }
    return out;
  }
}
