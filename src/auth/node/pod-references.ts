// What a pod refers to, for the Node authorizer's graph (kube's graph_populator with
// podutil.VisitPodSecretNames / VisitPodConfigmapNames): its service account, the secrets
// and config maps of its volumes, projections, environment and image pull secrets (of every
// container, init and ephemeral ones too), its claims (persistentVolumeClaim volumes and
// the claims generic ephemeral volumes make, "<pod>-<volume>"), and its resource claims.
//
// Thread ownership: none (pure functions).

export interface PodRefs {
  serviceAccount: string;
  secrets: Set<string>;
  configMaps: Set<string>;
  pvcs: Set<string>;
  resourceClaims: Set<string>;
}

const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);
const addName = (set: Set<string>, v: unknown) => {
  if (typeof v === 'string' && v) set.add(v);
};

/** Secrets a PersistentVolume's source names, as "<namespace>/<name>" (kube's VisitPVSecretNames). */
export function pvSecretRefs(pv: any): string[] {
  const s = pv?.spec ?? {};
  const out: string[] = [];
  const ref = (r: any, defNs = '') => {
    if (r && typeof r.name === 'string' && r.name) out.push(`${r.namespace || defNs}/${r.name}`);
  };
  if (s.azureFile?.secretName) out.push(`${s.azureFile.secretNamespace || 'default'}/${s.azureFile.secretName}`);
  ref(s.cephfs?.secretRef, 'default');
  ref(s.cinder?.secretRef, 'default');
  ref(s.flexVolume?.secretRef, 'default');
  ref(s.iscsi?.secretRef, 'default');
  ref(s.rbd?.secretRef, 'default');
  ref(s.scaleIO?.secretRef, 'default');
  ref(s.storageos?.secretRef, 'default');
  for (const k of ['controllerPublishSecretRef', 'nodeStageSecretRef', 'nodePublishSecretRef', 'controllerExpandSecretRef', 'nodeExpandSecretRef']) ref(s.csi?.[k]);
  return out;
}

export function podReferences(pod: any): PodRefs {
  const spec = pod?.spec ?? {};
  const r: PodRefs = { serviceAccount: spec.serviceAccountName || '', secrets: new Set(), configMaps: new Set(), pvcs: new Set(), resourceClaims: new Set() };
  for (const s of arr(spec.imagePullSecrets)) addName(r.secrets, s?.name);
  const containers = [...arr(spec.initContainers), ...arr(spec.containers), ...arr(spec.ephemeralContainers)];
  for (const c of containers) {
    for (const ef of arr(c?.envFrom)) {
      addName(r.secrets, ef?.secretRef?.name);
      addName(r.configMaps, ef?.configMapRef?.name);
    }
    for (const e of arr(c?.env)) {
      addName(r.secrets, e?.valueFrom?.secretKeyRef?.name);
      addName(r.configMaps, e?.valueFrom?.configMapKeyRef?.name);
    }
  }
  for (const v of arr(spec.volumes)) {
    if (!v) continue;
    addName(r.secrets, v.secret?.secretName);
    addName(r.configMaps, v.configMap?.name);
    for (const src of arr(v.projected?.sources)) {
      addName(r.secrets, src?.secret?.name);
      addName(r.configMaps, src?.configMap?.name);
    }
    addName(r.secrets, v.azureFile?.secretName);
    for (const k of ['cephfs', 'cinder', 'flexVolume', 'iscsi', 'rbd', 'scaleIO', 'storageos']) addName(r.secrets, v[k]?.secretRef?.name);
    addName(r.secrets, v.csi?.nodePublishSecretRef?.name);
    addName(r.pvcs, v.persistentVolumeClaim?.claimName);
    if (v.ephemeral && typeof v.name === 'string') addName(r.pvcs, `${pod?.metadata?.name}-${v.name}`);
  }
  // resource claims: named directly, or made from a template (the name the status records)
  for (const c of arr(spec.resourceClaims)) addName(r.resourceClaims, c?.resourceClaimName);
  for (const s of arr(pod?.status?.resourceClaimStatuses)) addName(r.resourceClaims, s?.resourceClaimName);
  return r;
}
