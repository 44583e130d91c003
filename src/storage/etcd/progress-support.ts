// Whether an etcd server's answers to progress requests can be trusted for consistent reads
// from the watch cache (kube's feature support checker for RequestWatchProgress,
// apiserver/pkg/storage/feature). etcd before 3.4.31 and 3.5.13 answers a progress request on
// the watch stream's control channel with its current revision at once, and that answer can
// overtake events of lower revisions still queued for the stream's watchers (etcd issue
// 15220); a cache that took it as "caught up" would serve a state without those events under
// a resourceVersion that claims them. kube serves consistent lists from etcd on such servers;
// kubeshard instead watches the whole key space there, so that every revision arrives as an
// event and the feed's own events say how far it has come (etcd-storage.ts).
//
// Thread ownership: pure functions.

/** The first fixed release of each minor line; every later minor line has the fix. */
const FIXED: Record<string, number> = { '3.4': 31, '3.5': 13 };

/** Whether etcd `version` (e.g. "3.4.23", "3.5.13", "3.6.0-rc.1") orders its progress answers after its events. */
export function progressRequestsOrdered(version: string): boolean {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  if (!m) return false;
  const [major, minor, patch] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (major !== 3) return major > 3;
  const fixedAt = FIXED[`${major}.${minor}`];
  if (fixedAt !== undefined) return patch >= fixedAt;
  return minor > 5;
}

/** Every endpoint must have the fix (kube's checker asks each member); an endpoint that does not answer counts as without it. */
export function allOrdered(versions: Array<string | undefined>): boolean {
  return versions.length > 0 && versions.every((v) => v !== undefined && progressRequestsOrdered(v));
}
