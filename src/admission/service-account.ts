// ServiceAccount admission (kube's plugin/pkg/admission/serviceaccount), on Pod creation:
// a pod without serviceAccountName gets "default"; the named account must exist; unless
// automountServiceAccountToken is false (the pod's choice first, then the account's), the
// projected token volume kube-api-access-<5 chars> is added and mounted read-only at the
// token path in every container and init container (ephemeral containers never get it);
// the account's imagePullSecrets are copied when the pod names none. Mirror pods are left
// alone but may not name an account or mount secrets, config maps or projected sources.
import { randomInt } from 'node:crypto';
import { AdmissionPlugin, arr, forbidden, isObj, type Attributes } from './plugin.js';

export const DEFAULT_SERVICE_ACCOUNT = 'default';
export const TOKEN_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
export const TOKEN_VOLUME_PREFIX = 'kube-api-access-';
export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';
const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';
/** kube's WarnOnlyBoundTokenExpirationSeconds: an hour and seven seconds, so kubelets refresh it early. */
const TOKEN_EXPIRATION_SECONDS = 3607;
/** How long a pod's create waits for a namespace's `default` account (kube retries its lookup ~10 times). */
const DEFAULT_ACCOUNT_WAIT_MS = 1500;

const NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';
function suffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += NAME_CHARS[randomInt(NAME_CHARS.length)];
  return s;
}

/** The projected volume source kube's TokenVolumeSource builds (defaultMode made explicit, as kube does). */
function tokenVolume(name: string): any {
  return {
    name,
    projected: {
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { expirationSeconds: TOKEN_EXPIRATION_SECONDS, path: 'token' } },
        { configMap: { name: ROOT_CA_CONFIGMAP, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ],
    },
  };
}

export class ServiceAccountAdmission extends AdmissionPlugin {
  readonly name = 'ServiceAccount';

  handles(a: Attributes): boolean {
    return a.groupResource.resource === 'pods' && a.groupResource.group === '' && a.subresource === '' && a.operation === 'CREATE' && isObj(a.obj?.spec);
  }

  override async admit(a: Attributes): Promise<void> {
    const pod = a.obj;
    if (isMirror(pod)) return;
    const spec = pod.spec;
    if (!spec.serviceAccountName) spec.serviceAccountName = DEFAULT_SERVICE_ACCOUNT;
    const sa = await this.account(a.namespace, spec.serviceAccountName);
    if (!sa) {
      throw forbidden(a, `error looking up service account ${a.namespace}/${spec.serviceAccountName}: serviceaccount "${spec.serviceAccountName}" not found`);
    }
    if (shouldAutomount(sa, pod)) mountToken(spec);
    if (arr(spec.imagePullSecrets).length === 0 && arr(sa.imagePullSecrets).length > 0) {
      spec.imagePullSecrets = arr(sa.imagePullSecrets).map((r: any) => ({ name: r?.name ?? '' }));
    }
  }

  override async validate(a: Attributes): Promise<void> {
    const pod = a.obj;
    if (isMirror(pod)) {
      const spec = pod.spec;
      if (spec.serviceAccountName) throw forbidden(a, 'a mirror pod may not reference service accounts');
      for (const v of arr(spec.volumes)) {
        if (isObj(v?.secret)) throw forbidden(a, 'a mirror pod may not reference secrets');
        if (isObj(v?.configMap)) throw forbidden(a, 'a mirror pod may not reference configmaps');
        for (const p of arr(v?.projected?.sources)) {
          if (isObj(p?.secret)) throw forbidden(a, 'a mirror pod may not reference secrets');
          if (isObj(p?.configMap)) throw forbidden(a, 'a mirror pod may not reference configmaps');
          if (isObj(p?.serviceAccountToken)) throw forbidden(a, 'a mirror pod may not use ServiceAccountToken volume projections');
        }
      }
      return;
    }
    // The account may have gone between the steps (kube checks again).
    const name = pod.spec.serviceAccountName;
    if (name && !(await this.account(a.namespace, name))) {
      throw forbidden(a, `error looking up service account ${a.namespace}/${name}: serviceaccount "${name}" not found`);
    }
  }

  /** The account from the cache; the default one is waited for briefly, as its controller creates it with the namespace. */
  private async account(ns: string, name: string): Promise<any | undefined> {
    let sa = this.objects.get('serviceaccounts', ns, name);
    if (sa || name !== DEFAULT_SERVICE_ACCOUNT) return sa;
    const until = Date.now() + DEFAULT_ACCOUNT_WAIT_MS;
    while (!sa && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
      sa = this.objects.get('serviceaccounts', ns, name);
    }
    return sa;
  }
}

function isMirror(pod: any): boolean {
  return isObj(pod?.metadata?.annotations) && MIRROR_ANNOTATION in pod.metadata.annotations;
}

function shouldAutomount(sa: any, pod: any): boolean {
  if (typeof pod.spec.automountServiceAccountToken === 'boolean') return pod.spec.automountServiceAccountToken;
  if (typeof sa.automountServiceAccountToken === 'boolean') return sa.automountServiceAccountToken;
  return true;
}

function mountToken(spec: any): void {
  const volumes = arr(spec.volumes);
  // A volume already named like the token volume is reused (a pod re-created from a stored spec).
  const existing = volumes.find((v: any) => typeof v?.name === 'string' && v.name.startsWith(TOKEN_VOLUME_PREFIX));
  const volumeName: string = existing ? existing.name : TOKEN_VOLUME_PREFIX + suffix();
  let needed = false;
  for (const c of [...arr(spec.initContainers), ...arr(spec.containers)]) {
    if (!isObj(c)) continue;
    const mounts = arr(c.volumeMounts);
    // A mount at the token path already there keeps the container as it is.
    if (mounts.some((m: any) => m?.mountPath === TOKEN_MOUNT_PATH)) continue;
    c.volumeMounts = [...mounts, { name: volumeName, readOnly: true, mountPath: TOKEN_MOUNT_PATH }];
    needed = true;
  }
  if (!existing && needed) spec.volumes = [...volumes, tokenVolume(volumeName)];
}
