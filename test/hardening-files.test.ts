// Issue 17, item 5: what the server stores was readable by every local user (0644 shard
// files in 0755 directories: Secrets included). As etcd's data dir: every directory the
// server writes is 0700 and every file 0600, whatever the umask it was started with: the
// shards (LMDB data and lock files, write-ahead log segments), the layout file, the admin
// token and kubeconfig, the service-account key, the generated certificates and keys, and
// the audit log with its directory. A data dir an older version left open is closed at start.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request, startServer, until, type TestServer, onEtcd } from './helpers/server.js';

const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
`;

let s: TestServer;
let auditDir: string;
let work: string;
beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'kubeshard-files-'));
  writeFileSync(join(work, 'policy.yaml'), POLICY);
  auditDir = join(work, 'audit', 'logs'); // made by the server
  // the server inherits the common 022 umask, which alone would leave its files 0644
  process.umask(0o022);
  s = await startServer({ args: ['--audit-policy-file', join(work, 'policy.yaml'), '--audit-log-path', join(auditDir, 'audit.log')] });
}, 90_000);
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
  rmSync(work, { recursive: true, force: true });
});

/** Every directory and file under root (root included), with its permission bits. */
function walk(root: string): Array<{ path: string; dir: boolean; mode: number }> {
  const out: Array<{ path: string; dir: boolean; mode: number }> = [];
  const visit = (p: string) => {
    const st = lstatSync(p);
    out.push({ path: p, dir: st.isDirectory(), mode: st.mode & 0o7777 });
    if (st.isDirectory()) for (const n of readdirSync(p)) visit(join(p, n));
  };
  visit(root);
  return out;
}

/** The entries that grant anything to group or others, as "0755 path". */
const open = (root: string) => walk(root).filter((e) => e.mode & 0o077).map((e) => `${e.mode.toString(8)} ${e.path}`);

async function writeSomething(tag: string): Promise<void> {
  const secret = await request(s, 'POST', '/api/v1/namespaces/default/secrets', { metadata: { name: `files-${tag}` }, stringData: { password: 'hunter2' } });
  expect(secret.status).toBe(201);
  expect((await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: `files-${tag}` }, data: { a: 'b' } })).status).toBe(201);
}

describe('files the server writes', () => {
  it('a fresh data dir: directories 0700, files 0600, after writes reached the log and the B-tree', async () => {
    await writeSomething('fresh');
    // let the B-tree take the log's records (--storage-batch-interval, 100ms), then stop so all is flushed
    await new Promise((r) => setTimeout(r, 500));
    await s.stop();
    const entries = walk(s.dataDir);
    const names = entries.map((e) => e.path.slice(s.dataDir.length + 1));
    // the data dir does hold what the issue lists
    for (const expected of ['admin-token.csv', 'admin.kubeconfig', 'sa.key', 'certs/ca.key', 'certs/apiserver.key', 'certs/apiserver.crt']) expect(names).toContain(expected);
    // (the LMDB shards' files: on etcd the objects are etcd's)
    if (!onEtcd) {
      expect(names.some((n) => /^shard-\d+\/data\.mdb$/.test(n))).toBe(true);
      expect(names.some((n) => /^shard-\d+\/wal-.*\.log$/.test(n))).toBe(true);
    }
    expect(open(s.dataDir)).toEqual([]);
    for (const e of entries) expect(e.mode & 0o700, e.path).toBe(e.dir ? 0o700 : 0o600);
    // the audit log (Request bodies: the Secret above) and the directories made for it
    expect(open(join(work, 'audit'))).toEqual([]);
    expect(lstatSync(join(auditDir, 'audit.log')).mode & 0o777).toBe(0o600);
  });

  it('a data dir an older version left 0755/0644 is closed at start; so is an existing audit log', async () => {
    for (const e of walk(s.dataDir)) chmodSync(e.path, e.dir ? 0o755 : 0o644);
    chmodSync(join(auditDir, 'audit.log'), 0o644);
    // a file of the user's own in the data dir is not the server's to change
    writeFileSync(join(s.dataDir, 'NOTES.txt'), 'mine', { mode: 0o644 });
    chmodSync(join(s.dataDir, 'NOTES.txt'), 0o644);
    expect(open(s.dataDir).length).toBeGreaterThan(5);
    await s.restart();
    expect(open(s.dataDir)).toEqual([`644 ${join(s.dataDir, 'NOTES.txt')}`]);
    rmSync(join(s.dataDir, 'NOTES.txt'));
    expect(lstatSync(join(auditDir, 'audit.log')).mode & 0o777).toBe(0o600);
    // and what it writes from then on stays closed
    await writeSomething('after');
    await until(async () => (await request(s, 'GET', '/api/v1/namespaces/default/secrets/files-after')).status === 200);
    await new Promise((r) => setTimeout(r, 300));
    expect(open(s.dataDir)).toEqual([]);
  });
});
