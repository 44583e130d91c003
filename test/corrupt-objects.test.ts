// Objects whose stored bytes cannot be read back (spec 3.1, KEP-3926). The test corrupts
// them for real: with the server stopped it overwrites their newest revision in the shard's
// LMDB environment (the lmdb package, the shard's own key layout), then starts the server
// on the same data. Without the gate AllowUnsafeMalformedObjectDeletion reads fail and the
// delete option is dropped; with it, reads name the corrupt key, lists fail with
// StorageReadError, and a DELETE with ignoreStoreReadErrorWithClusterBreakingPotential
// removes the object, ignoring its finalizer. The option's rules give 422 as kube words them.
import { describe, it, expect, afterAll } from 'vitest';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { openShardEnv } from '../workers/shard/layout.js';
import { decodeRecord, encodePayload } from '../workers/shard/record.js';
import { onEtcd, openWatch, request, startServer, until, type TestServer } from './helpers/server.js';

const NS = '/api/v1/namespaces/broken';
const GATE = ['--feature-gates', 'AllowUnsafeMalformedObjectDeletion=true'];
let s: TestServer | undefined;
let dataDir = '';

afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

/** Replaces the newest revision of each key with `bytes` (flag byte 0 = live), in whichever shard holds it. */
async function corrupt(dir: string, gr: string, values: Record<string, Buffer>): Promise<void> {
  const left = new Set(Object.keys(values));
  for (const d of readdirSync(dir).filter((n) => n.startsWith('shard-'))) {
    const env = openShardEnv(join(dir, d));
    // hist is in version order: the last record of a key is its newest revision
    const newest = new Map<string, number>();
    for (const { key: rv, value } of env.hist.getRange({})) {
      const r = decodeRecord(value);
      if (r.gr === gr && left.has(r.key)) newest.set(r.key, rv);
    }
    for (const [key, rv] of newest) {
      const r = decodeRecord(env.hist.get(rv)!);
      await env.hist.put(rv, encodePayload({ ...r, value: Buffer.concat([Buffer.from([0]), values[key]]) }));
      left.delete(key);
    }
    await env.root.close();
  }
  expect([...left]).toEqual([]);
}

const q = 'ignoreStoreReadErrorWithClusterBreakingPotential=true';

// (the objects are corrupted inside the LMDB shards)
describe.skipIf(onEtcd)('corrupt objects', () => {
  it('are reported on read, and removed only by the unsafe delete under its gate', async () => {
    // 1. Objects written normally; "held" carries a finalizer nobody will remove.
    s = await startServer();
    dataDir = s.dataDir;
    expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'broken' } })).status).toBe(201);
    for (const m of [{ name: 'fine' }, { name: 'held', finalizers: ['example.com/never'] }, { name: 'cut' }]) {
      expect((await request(s, 'POST', `${NS}/configmaps`, { metadata: m, data: { k: 'v' } })).status).toBe(201);
    }
    const heldNow = (await request(s, 'GET', `${NS}/configmaps/held`)).json();
    const heldUid = heldNow.metadata.uid;
    const heldRv = Number(heldNow.metadata.resourceVersion);
    await s.stop();
    // The server must keep nothing else open on the data while we write.
    expect(existsSync(join(dataDir, 'shard-0'))).toBe(true);

    // 2. Garbage bytes for one, a truncated document for the other.
    await corrupt(dataDir, 'configmaps', {
      'broken/held': Buffer.from([0x00, 0xff, 0x13, 0x37, 0x67, 0x61, 0x72, 0x62]),
      'broken/cut': Buffer.from('{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cut"'),
    });

    // 3. Gate off: the server starts and serves the rest; the corrupt ones fail as kube's
    //    decode errors do, and the option is dropped (a normal delete, which fails too).
    s = await startServer({ dataDir });
    expect((await request(s, 'GET', `${NS}/configmaps/fine`)).status).toBe(200);
    let r = await request(s, 'GET', `${NS}/configmaps/held`);
    expect(r.status).toBe(500);
    expect(r.json().reason).toBe('InternalError');
    expect(r.json().message).toMatch(/^Internal error occurred: couldn't get version\/kind; json parse error/);
    r = await request(s, 'GET', `${NS}/configmaps`);
    expect(r.status).toBe(500);
    expect(r.json().reason).toBe('InternalError');
    expect((await request(s, 'GET', '/api/v1/namespaces/default/configmaps')).status).toBe(200);
    // a watch replaying history through the corrupt revision ends with an error, no garbage
    const old = openWatch(s, `${NS}/configmaps?watch=true&resourceVersion=${heldRv - 1}`);
    expect(await old.status).toBe(200);
    const errEv = await until(() => old.events.find((e) => e.type === 'ERROR'));
    expect(errEv.object).toMatchObject({ kind: 'Status', code: 500, reason: 'InternalError' });
    expect(old.events.filter((e) => e.type !== 'ERROR').map((e) => e.object.metadata.name)).toEqual([]);
    old.close();
    r = await request(s, 'DELETE', `${NS}/configmaps/held?${q}`);
    expect(r.status).toBe(500);
    // dropped before validation: combined with dryRun it is still just a (failing) delete
    expect((await request(s, 'DELETE', `${NS}/configmaps/held?${q}&dryRun=All`)).status).toBe(500);
    // update and patch read the object first
    expect((await request(s, 'PATCH', `${NS}/configmaps/held`, '{"data":{"x":"y"}}', { 'content-type': 'application/merge-patch+json' })).status).toBe(500);
    // its key is taken in storage: a create of the same name is a conflict, as on etcd
    expect((await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'held' } })).status).toBe(409);
    await s.stop();

    // 4. Gate on.
    s = await startServer({ dataDir, args: GATE });
    r = await request(s, 'GET', `${NS}/configmaps/held`);
    expect(r.status).toBe(500);
    expect(r.json().reason).toBe('InternalError');
    expect(r.json().message).toMatch(/^Internal error occurred: StorageError: corrupt object, Code: 7, Key: \/registry\/configmaps\/broken\/held, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=\d+: /);

    r = await request(s, 'GET', `${NS}/configmaps`);
    expect(r.status).toBe(500);
    const listErr = r.json();
    expect(listErr.reason).toBe('StorageReadError');
    expect(listErr.message).toBe('failed to read one or more configmaps from the storage');
    expect(listErr.details.kind).toBe('configmaps');
    expect(listErr.details.causes.map((c: any) => [c.reason, c.field])).toEqual([
      ['UnexpectedServerResponse', '/registry/configmaps/broken/cut'],
      ['UnexpectedServerResponse', '/registry/configmaps/broken/held'],
    ]);
    // all namespaces too
    expect((await request(s, 'GET', '/api/v1/configmaps')).json().reason).toBe('StorageReadError');

    // a normal delete reads the object first
    r = await request(s, 'DELETE', `${NS}/configmaps/held`);
    expect(r.status).toBe(500);
    expect(r.json().message).toContain('StorageError: corrupt object');

    // the option's rules (kube's ValidateIgnoreStoreReadError), every violation reported
    r = await request(s, 'DELETE', `${NS}/configmaps/held?dryRun=All`, {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      ignoreStoreReadErrorWithClusterBreakingPotential: true,
      gracePeriodSeconds: 0,
      propagationPolicy: 'Foreground',
      preconditions: { uid: heldUid },
    });
    expect(r.status).toBe(422);
    expect(r.json().reason).toBe('Invalid');
    expect(r.json().details.causes.map((c: any) => c.message)).toEqual([
      'Invalid value: true: cannot be set together with .dryRun',
      'Invalid value: true: cannot be set together with .propagationPolicy',
      'Invalid value: true: cannot be set together with .gracePeriodSeconds',
      'Invalid value: true: cannot be set together with .preconditions',
    ]);
    expect(r.json().message).toMatch(/^DeleteOptions\.meta\.k8s\.io "" is invalid: \[ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: cannot be set together with \.dryRun, /);
    r = await request(s, 'DELETE', `${NS}/configmaps/held?${q}&orphanDependents=false`);
    expect(r.status).toBe(422);
    expect(r.json().details.causes[0].message).toBe('Invalid value: true: cannot be set together with .orphanDependents');
    // not with deletecollection
    r = await request(s, 'DELETE', `${NS}/configmaps?${q}`);
    expect(r.status).toBe(422);
    expect(r.json().message).toBe('DeleteOptions.meta.k8s.io "" is invalid: ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: is not allowed with DELETECOLLECTION, try again after removing the option');
    // only for objects that cannot be read: a readable one, or one that is not there, is refused
    for (const name of ['fine', 'absent']) {
      r = await request(s, 'DELETE', `${NS}/configmaps/${name}?${q}`);
      expect(r.status).toBe(422);
      expect(r.json().message).toBe(`configmaps "${name}" is invalid: ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: is exclusively used to delete corrupt object(s), try again by removing this option`);
    }
    expect((await request(s, 'GET', `${NS}/configmaps/fine`)).status).toBe(200);

    // the unsafe delete: its finalizer does not hold it; a watcher sees it go
    const w = openWatch(s, `${NS}/configmaps?watch=true&resourceVersion=0`);
    expect(await w.status).toBe(200);
    await until(() => w.events.some((e) => e.object?.metadata?.name === 'fine'));
    r = await request(s, 'DELETE', `${NS}/configmaps/held?${q}`);
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ kind: 'Status', status: 'Success', details: { name: 'held', kind: 'ConfigMap' } });
    const gone = await until(() => w.events.find((e) => e.type === 'DELETED' && e.object?.metadata?.name === 'held'));
    expect(gone.object).toMatchObject({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { namespace: 'broken' } });
    w.close();
    expect((await request(s, 'GET', `${NS}/configmaps/held`)).status).toBe(404);
    // the other one still breaks the list, and the option may come in the body
    r = await request(s, 'GET', `${NS}/configmaps`);
    expect(r.json().details.causes.map((c: any) => c.field)).toEqual(['/registry/configmaps/broken/cut']);
    r = await request(s, 'DELETE', `${NS}/configmaps/cut`, { ignoreStoreReadErrorWithClusterBreakingPotential: true });
    expect(r.status).toBe(200);
    r = await request(s, 'GET', `${NS}/configmaps`);
    expect(r.status).toBe(200);
    expect(r.json().items.map((i: any) => i.metadata.name).filter((n: string) => n !== 'kube-root-ca.crt')).toEqual(['fine']); // (the namespace's CA bundle is there too, as in kube)
    // the names are free again
    expect((await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'held' } })).status).toBe(201);
    await s.stop();

    // 5. What was written stays readable across a restart (no garbage left in storage).
    s = await startServer({ dataDir, args: GATE });
    r = await request(s, 'GET', `${NS}/configmaps`);
    expect(r.status).toBe(200);
    expect(r.json().items.map((i: any) => i.metadata.name).filter((n: string) => n !== 'kube-root-ca.crt')).toEqual(['fine', 'held']);
    expect((await request(s, 'GET', `${NS}/configmaps/held`)).json().metadata.finalizers).toBeUndefined();
  }, 120_000);
});
