// Who may read what the server writes. The data dir holds every stored object (Secrets
// among them), the admin token and kubeconfig, the service-account signing key and the
// serving keys: like etcd's data dir (0700 directories, 0600 files), none of it is for
// other local users.
//
// Two halves: a process umask of 0o077, set before anything is written, so that every
// file and directory created from then on (LMDB's data.mdb and lock.mdb, write-ahead log
// segments, layout.json, certificates made by the openssl command, audit logs, in this
// thread, the shard workers and child processes alike) has no group or other bits; and,
// because a umask does not change files that already exist, a walk that takes those
// bits off what an earlier version left in the data dir and the cert dir.
//
// Thread ownership: main thread, at start-up (a worker cannot set the umask; it shares
// the process's).
import { chmodSync, closeSync, fchmodSync, lstatSync, openSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** What no file or directory of ours may grant: every group and other permission. */
export const PRIVATE_UMASK = 0o077;

export function restrictUmask(): void {
  process.umask(PRIVATE_UMASK);
}

/**
 * Takes group and other permissions off a directory and everything under it (0755 to
 * 0700, 0644 to 0600; owner bits kept). Symbolic links are neither changed nor followed.
 * A directory with the sticky bit (a shared one such as /tmp, named as the data dir by
 * mistake) is left as it is, and so is anything we may not change; each is a warning.
 */
export function tightenTree(root: string, warn: (m: string) => void): void {
  const visit = (path: string, top: boolean) => {
    let st;
    try {
      st = lstatSync(path);
    } catch {
      return; // gone meanwhile, or never there
    }
    if (st.isSymbolicLink()) return;
    if (st.isDirectory() && top && st.mode & 0o1000) {
      warn(`${path} is a shared directory (sticky bit): its permissions are left as they are; give the server a directory of its own`);
      return;
    }
    if (st.mode & PRIVATE_UMASK) {
      try {
        chmodSync(path, st.mode & 0o7700);
      } catch (e) {
        warn(`could not restrict the permissions of ${path}: ${(e as Error).message}`);
      }
    }
    if (st.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name), false);
  };
  visit(root, true);
}

/** Writes a file only its owner may read, whatever mode an earlier one had. */
export function writePrivateFile(path: string, data: string | Uint8Array): void {
  const fd = openSync(path, 'w', 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeFileSync(fd, data);
  } finally {
    closeSync(fd);
  }
}
