// Who may read what the server writes. The data dir holds every stored object (Secrets
// among them), the admin token and kubeconfig, the service-account signing key and the
// serving keys: like etcd's data dir (0700 directories, 0600 files), none of it is for
// other local users.
//
// Two halves: a process umask of 0o077, set before anything is written, so that every
// file and directory created from then on (LMDB's data.mdb and lock.mdb, write-ahead log
// segments, layout.json, certificates made by the openssl command, audit logs, in this
// thread, the shard workers and child processes alike) has no group or other bits; and,
// because a umask does not change files that already exist, a pass that takes those
// bits off what an earlier version left in the data dir and the cert dir (only the
// server's own entries there: a user's other files are not ours to change).
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

/** Takes group and other bits off one path (owner bits kept); a path we may not change is a warning. */
function tighten(path: string, mode: number, warn: (m: string) => void): void {
  if (!(mode & PRIVATE_UMASK)) return;
  try {
    chmodSync(path, mode & 0o7700);
  } catch (e) {
    warn(`could not restrict the permissions of ${path}: ${(e as Error).message}`);
  }
}

/**
 * Takes group and other permissions off a path and, for a directory, everything under it
 * (0755 to 0700, 0644 to 0600). Symbolic links are neither changed nor followed.
 */
export function tightenTree(root: string, warn: (m: string) => void): void {
  const visit = (path: string) => {
    let st;
    try {
      st = lstatSync(path);
    } catch {
      return; // not there (yet)
    }
    if (st.isSymbolicLink()) return;
    tighten(path, st.mode, warn);
    if (st.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
  };
  visit(root);
}

/**
 * A directory the server was given to write in (the data dir, --cert-dir): what it writes
 * there, by name, is closed (recursively for directories: a shard's LMDB files and log
 * segments); anything else a user keeps there is left alone. The directory itself is made
 * 0700 when it is the server's: empty, or holding one of its entries. A shared directory
 * (sticky bit, as /tmp) or someone else's is only warned about, as etcd warns about a
 * data dir it did not create.
 */
export function tightenOwnDir(dir: string, owned: (name: string) => boolean, warn: (m: string) => void): void {
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    return;
  }
  if (!st.isDirectory()) return;
  const names = readdirSync(dir);
  const mine = names.filter(owned);
  for (const name of mine) tightenTree(join(dir, name), warn);
  if (!(st.mode & PRIVATE_UMASK)) return;
  if (st.mode & 0o1000) warn(`${dir} is a shared directory (sticky bit), open to other users: give the server a directory of its own`);
  else if (names.length > 0 && mine.length === 0) warn(`${dir} (mode ${(st.mode & 0o777).toString(8)}) holds files that are not the server's: left open; the recommended mode is 700`);
  else tighten(dir, st.mode, warn);
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
