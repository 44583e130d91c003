// The authenticated context of a stored value on the LMDB backend: the etcd key kube-apiserver
// would store the object under (`/registry/<resource prefix>/<namespace>/<name>`,
// src/storage/etcd/keys.ts), so that a value encrypted on one backend decrypts on the other
// (kube binds every encrypted value to its key: aescbc and aesgcm authenticate it).
//
// Thread ownership: the memo belongs to the thread that imports this module.
import { resourcePrefix } from '../etcd/keys.js';

/** kube-apiserver's default --etcd-prefix */
export const DEFAULT_PREFIX = '/registry';

const prefixes = new Map<string, string>();

/** The etcd key of object `key` ("<ns>/<name>", "/<name>" when cluster-scoped) of group-resource gr ("secrets", "deployments.apps"). */
export function storageKeyOf(gr: string, key: string, prefix = DEFAULT_PREFIX): string {
  let p = prefixes.get(gr);
  if (p === undefined) {
    const dot = gr.indexOf('.');
    p = `${prefix}/${resourcePrefix(dot < 0 ? '' : gr.slice(dot + 1), dot < 0 ? gr : gr.slice(0, dot))}`;
    prefixes.set(gr, p);
  }
  return key.charCodeAt(0) === 47 ? p + key : `${p}/${key}`;
}
