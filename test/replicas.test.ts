// Two kubeshard replicas on one etcd (issue 19, "several replicas"): an informer watching
// ConfigMaps through replica B while writes go to both; replica A killed with SIGKILL in the
// middle. The informer sees every acknowledged write once, in version order, without a
// relist; a write on A is read at once by a consistent GET on B; the controller Lease moves
// to B within its duration after A dies, and B's controllers work then; the kubernetes
// EndpointSlice lists both replicas' advertised addresses, then only B's.
//
// The replicas run with KUBESHARD_FAST_LEASES=1 (controller Lease 3 s instead of
// kube-controller-manager's 15 s, master lease TTL 3 s instead of kube's 15 s), so that the
// fail-over happens within seconds.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { CoreV1Api, KubeConfig, ListWatch, Watch, type V1ConfigMap } from '@kubernetes/client-node';
import { etcdAvailable, startCluster, ETCD_BIN, type TestCluster } from '../src/storage/etcd/test-cluster.js';
import { EtcdClient } from '../src/storage/etcd/client.js';
import { decodeRangeAllocation } from '../src/storage/etcd/range-allocation.js';
import { request, startServer, until, type TestServer } from './helpers/server.js';

const NS = 'replicas';
const PATH = `/api/v1/namespaces/${NS}/configmaps`;
const ADDR_A = '192.0.2.101';
const ADDR_B = '192.0.2.102';
const SERVICE_CIDR = '10.96.0.0/25';
const PORT_MIN = 30000;
const PORT_MAX = 30119;
/** KUBESHARD_FAST_LEASES's controller Lease duration */
const LEASE_SECONDS = 3;

const available = etcdAvailable();
if (!available) console.warn(`skipping the replica tests: ${ETCD_BIN} missing (apt-get install etcd-server)`);

let cluster: TestCluster | undefined;
let a: TestServer | undefined;
let b: TestServer | undefined;

const replica = (cluster: TestCluster, name: string, addr: string) =>
  startServer({
    // (small ranges: the two replicas' random picks collide often)
    args: ['--storage-backend', 'etcd3', '--etcd-servers', cluster.endpoints[0], '--advertise-address', addr, '--service-cluster-ip-range', SERVICE_CIDR, '--service-node-port-range', `${PORT_MIN}-${PORT_MAX}`],
    env: { KUBESHARD_HOSTNAME: name, KUBESHARD_FAST_LEASES: '1' },
  });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function sliceAddresses(s: TestServer): Promise<string[]> {
  const r = await request(s, 'GET', '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes');
  if (r.status !== 200) return [];
  return (r.json().endpoints ?? []).flatMap((e: any) => e.addresses).sort();
}

async function leaseHolder(s: TestServer): Promise<string> {
  const r = await request(s, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager');
  return r.status === 200 ? (r.json().spec?.holderIdentity ?? '') : '';
}

describe.skipIf(!available)('two replicas on one etcd', () => {
  beforeAll(async () => {
    cluster = await startCluster(1);
    a = await replica(cluster, 'replica-a', ADDR_A);
    b = await replica(cluster, 'replica-b', ADDR_B);
  }, 120_000);
  afterAll(async () => {
    for (const s of [a, b]) {
      await s?.stop();
      s?.cleanup();
    }
    await cluster?.stop();
  });

  it('both replicas keep an identity Lease, A leads, and the kubernetes endpoints list both', async () => {
    const ids = await until(async () => {
      const r = await request(b!, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?labelSelector=apiserver.kubernetes.io/identity%3Dkube-apiserver');
      const items = r.json().items ?? [];
      return items.length === 2 && items;
    });
    expect(ids.map((l: any) => l.metadata.labels['kubernetes.io/hostname']).sort()).toEqual(['replica-a', 'replica-b']);
    expect(await leaseHolder(b!)).toMatch(/^replica-a_[0-9a-f-]{36}$/);
    // B runs no controllers while A leads
    expect(a!.output()).toContain('successfully acquired lease kube-system/kube-controller-manager');
    expect(b!.output()).not.toContain('successfully acquired lease');
    await until(async () => JSON.stringify(await sliceAddresses(b!)) === JSON.stringify([ADDR_A, ADDR_B]), 15_000);
    const ep = (await request(a!, 'GET', '/api/v1/namespaces/default/endpoints/kubernetes')).json();
    expect(ep.subsets[0].addresses.map((x: any) => x.ip)).toEqual([ADDR_A, ADDR_B]);
    // (one port for every address, as kube's: replicas on one machine differ in port, and the last writer's is listed)
    expect(ep.subsets[0].ports).toHaveLength(1);
    expect([a!.port, b!.port]).toContain(ep.subsets[0].ports[0].port);
  }, 30_000);

  it("A's controllers act on what is written through B", async () => {
    expect((await request(b!, 'POST', '/api/v1/namespaces', { metadata: { name: 'via-b' } })).status).toBe(201);
    // the serviceaccount controller (on A) gives it its default ServiceAccount
    await until(async () => (await request(b!, 'GET', '/api/v1/namespaces/via-b/serviceaccounts/default')).status === 200);
    expect((await request(b!, 'POST', '/api/v1/namespaces/via-b/configmaps', { metadata: { name: 'c' } })).status).toBe(201);
    // deleted through B, which does not lead: A's namespace controller empties and finalizes it
    expect((await request(b!, 'DELETE', '/api/v1/namespaces/via-b')).status).toBe(200);
    await until(async () => (await request(b!, 'GET', '/api/v1/namespaces/via-b')).status === 404, 20_000);
  }, 30_000);

  it('a write on A is seen at once by a consistent read on B', async () => {
    expect((await request(a!, 'POST', '/api/v1/namespaces', { metadata: { name: NS } })).status).toBe(201);
    for (let i = 0; i < 30; i++) {
      const w = await request(a!, 'POST', PATH, { metadata: { name: `read-${i}` }, data: { i: String(i) } });
      expect(w.status).toBe(201);
      const r = await request(b!, 'GET', `${PATH}/read-${i}`);
      expect(r.status).toBe(200);
      expect(r.json().metadata.resourceVersion).toBe(w.json().metadata.resourceVersion);
      // and a list without a resourceVersion on B includes it
      const l = await request(b!, 'GET', `${PATH}?labelSelector=`);
      expect(Number(l.json().metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(w.json().metadata.resourceVersion));
      expect(l.json().items.some((o: any) => o.metadata.name === `read-${i}`)).toBe(true);
    }
  }, 60_000);

  it('Services created on both replicas at once never share a ClusterIP or a NodePort', async () => {
    const ns = 'svc-race';
    expect((await request(a!, 'POST', '/api/v1/namespaces', { metadata: { name: ns } })).status).toBe(201);
    await until(async () => (await request(b!, 'GET', `/api/v1/namespaces/${ns}`)).status === 200);
    const PER = 50;
    const create = (s: TestServer, tag: string, i: number) =>
      request(s, 'POST', `/api/v1/namespaces/${ns}/services`, {
        metadata: { name: `${tag}-${i}` },
        spec: i % 2 ? { type: 'NodePort', ports: [{ name: 'http', port: 80 }, { name: 'alt', port: 81 }] } : { ports: [{ port: 80 }] },
      });
    const replies = await Promise.all([...Array.from({ length: PER }, (_, i) => create(a!, 'a', i)), ...Array.from({ length: PER }, (_, i) => create(b!, 'b', i))]);
    for (const r of replies) expect(r.status, r.body).toBe(201);
    const svcs = (await request(b!, 'GET', `/api/v1/namespaces/${ns}/services`)).json().items;
    expect(svcs).toHaveLength(2 * PER);
    const ips = svcs.map((s: any) => s.spec.clusterIP);
    expect(new Set(ips).size).toBe(ips.length);
    const ports = svcs.flatMap((s: any) => s.spec.ports.map((p: any) => p.nodePort).filter(Boolean));
    expect(ports).toHaveLength(2 * PER);
    expect(new Set(ports).size).toBe(ports.length);
    for (const p of ports) expect(p >= PORT_MIN && p <= PORT_MAX).toBe(true);
    // each address has its IPAddress, pointing at its Service
    const addrs = new Map<string, any>((await request(a!, 'GET', '/apis/networking.k8s.io/v1/ipaddresses')).json().items.map((o: any) => [o.metadata.name, o]));
    for (const s of svcs) expect(addrs.get(s.spec.clusterIP)?.spec.parentRef).toEqual({ resource: 'services', namespace: ns, name: s.metadata.name });
    // the ports are claimed in kube's RangeAllocation: exactly the ports held
    const client = new EtcdClient({ endpoints: cluster!.endpoints });
    try {
      const bitsOf = async () => {
        const { kv } = await client.get('/registry/ranges/servicenodeports');
        const { range, bits } = decodeRangeAllocation(kv!.value);
        expect(range).toBe(`${PORT_MIN}-${PORT_MAX}`);
        const out: number[] = [];
        for (let p = PORT_MIN; p <= PORT_MAX; p++) if ((bits >> BigInt(p - PORT_MIN)) & 1n) out.push(p);
        return out;
      };
      expect(await bitsOf()).toEqual([...ports].sort((x, y) => x - y));
      // deleting them (through either replica) gives everything back
      const dels = await Promise.all(svcs.map((s: any, i: number) => request(i % 2 ? a! : b!, 'DELETE', `/api/v1/namespaces/${ns}/services/${s.metadata.name}`)));
      for (const r of dels) expect(r.status).toBe(200);
      expect(await bitsOf()).toEqual([]);
      await until(async () => {
        const left = (await request(b!, 'GET', '/apis/networking.k8s.io/v1/ipaddresses')).json().items.map((o: any) => o.metadata.name);
        return left.length === 1 && left[0] === '10.96.0.1';
      });
    } finally {
      client.close();
    }
  }, 60_000);

  it('an informer on B sees every event once, in order, without a relist, while A is killed', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(b!.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    let lists = 0;
    const seen: Array<{ type: string; name: string; rv: number }> = [];
    const listFn = async () => {
      lists++;
      return core.listNamespacedConfigMap({ namespace: NS });
    };
    class RecordingWatch extends Watch {
      override watch(path: string, q: any, cb: (type: string, obj: any, raw: any) => void, done: (err: any) => void) {
        return super.watch(path, q, (type, obj, raw) => {
          if (type !== 'ERROR' && type !== 'BOOKMARK') seen.push({ type, name: obj.metadata.name, rv: Number(obj.metadata.resourceVersion) });
          cb(type, obj, raw);
        }, done);
      }
    }
    const lw = new ListWatch<V1ConfigMap>(PATH, new RecordingWatch(kc), listFn, false);
    let errors = 0;
    lw.on('error', () => {
      errors++;
      setTimeout(() => lw.start().catch(() => undefined), 300);
    });
    await lw.start();
    const startRv = Number((await request(b!, 'GET', `${PATH}?limit=1`)).json().metadata.resourceVersion);

    // writers on both replicas: creates and updates, each acknowledged version recorded
    const acked = new Set<number>();
    let running = true;
    let aDead = false;
    let n = 0;
    const loop = async (s: () => TestServer, isA: boolean) => {
      while (running) {
        if (isA && aDead) return;
        const name = `w-${n++ % 200}`;
        try {
          let r = await request(s(), 'POST', PATH, { metadata: { name }, data: { v: '0' } });
          if (r.status === 409) r = await request(s(), 'PATCH', `${PATH}/${name}`, { data: { v: String(n) } }, { 'content-type': 'application/merge-patch+json' });
          if (r.status === 200 || r.status === 201) acked.add(Number(r.json().metadata.resourceVersion));
          else if (!(isA && aDead)) throw new Error(`write ${name}: ${r.status} ${r.body}`);
        } catch (e) {
          if (isA) return; // A died under this write: its outcome is unknown
          throw e;
        }
      }
    };
    const loops = [0, 1, 2].map(() => loop(() => a!, true)).concat([0, 1, 2].map(() => loop(() => b!, false)));
    await sleep(1500);
    aDead = true;
    await a!.kill9();
    const killedAt = Date.now();
    await sleep(1500);
    running = false;
    await Promise.all(loops);
    // a last write on B: once the informer has it, it has had everything before it
    const last = await request(b!, 'POST', PATH, { metadata: { name: 'last' }, data: {} });
    expect(last.status).toBe(201);
    const lastRv = Number(last.json().metadata.resourceVersion);
    await until(() => seen.some((e) => e.rv === lastRv), 20_000);
    lw.stop();

    expect(lists).toBe(1);
    expect(errors).toBe(0);
    const rvs = seen.map((e) => e.rv);
    // every event once, in version order
    for (let i = 1; i < rvs.length; i++) expect(rvs[i]).toBeGreaterThan(rvs[i - 1]);
    // every acknowledged write among them (writes on A and on B, before and after the kill)
    const seenRvs = new Set(rvs);
    const missing = [...acked].filter((rv) => rv > startRv && !seenRvs.has(rv));
    expect(missing).toEqual([]);
    expect(acked.size).toBeGreaterThan(50);
    // the informer's state is B's
    const final = (await request(b!, 'GET', PATH)).json();
    const mine = new Map(lw.list(NS).map((o) => [o.metadata!.name!, o.metadata!.resourceVersion!]));
    expect(mine.size).toBe(final.items.length);
    for (const o of final.items) expect(mine.get(o.metadata.name)).toBe(o.metadata.resourceVersion);

    // the controller Lease moves to B within its duration (after A's last renewal), and B's
    // controllers run: a new namespace gets its default ServiceAccount, a deleted one goes
    await until(async () => (await leaseHolder(b!)).startsWith('replica-b_'), (LEASE_SECONDS + 5) * 1000);
    const movedAfterMs = Date.now() - killedAt;
    await until(() => b!.output().includes('successfully acquired lease kube-system/kube-controller-manager'));
    console.log(`controller Lease moved to B ${movedAfterMs} ms after A was killed`);
    expect((await request(b!, 'POST', '/api/v1/namespaces', { metadata: { name: 'after-failover' } })).status).toBe(201);
    await until(async () => (await request(b!, 'GET', '/api/v1/namespaces/after-failover/serviceaccounts/default')).status === 200, 10_000);
    expect((await request(b!, 'POST', '/api/v1/namespaces/after-failover/configmaps', { metadata: { name: 'x' } })).status).toBe(201);
    expect((await request(b!, 'DELETE', '/api/v1/namespaces/after-failover')).status).toBe(200);
    await until(async () => (await request(b!, 'GET', '/api/v1/namespaces/after-failover')).status === 404, 20_000);

    // A's master lease expires: the endpoints list B alone
    await until(async () => JSON.stringify(await sliceAddresses(b!)) === JSON.stringify([ADDR_B]), 20_000);
    const ep = (await request(b!, 'GET', '/api/v1/namespaces/default/endpoints/kubernetes')).json();
    expect(ep.subsets[0].addresses.map((x: any) => x.ip)).toEqual([ADDR_B]);
  }, 120_000);
});
