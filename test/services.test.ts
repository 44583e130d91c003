// Service allocation against a started server: ClusterIPs and NodePorts are unique under
// concurrent creates, stay in their ranges, are released on delete and on dry run, and a
// taken or out-of-range request is 422 with kube's wording.
import { describe, it, expect } from 'vitest';
import { request, type TestServer, useServer } from './helpers/server.js';

let s: TestServer;
const SVC = '/api/v1/namespaces/default/services';

useServer((started) => (s = started), { args: ['--service-node-port-range', '30000-30299'] });

function svc(name: string, spec: any = {}) {
  return { metadata: { name }, spec: { ports: [{ port: 80 }], ...spec } };
}

describe('service allocation', () => {
  it('the kubernetes Service holds the first address of the range', async () => {
    const r = await request(s, 'GET', `${SVC}/kubernetes`);
    expect(r.status).toBe(200);
    expect(r.json().spec.clusterIP).toBe('10.96.0.1');
    expect(r.json().spec.ports[0].port).toBe(443);
  });

  it('a taken address or port is 422 with kube wording; out of range too', async () => {
    const a = (await request(s, 'POST', SVC, svc('ask-ip', { clusterIP: '10.96.0.10' }))).json();
    expect(a.spec.clusterIP).toBe('10.96.0.10');
    const dup = await request(s, 'POST', SVC, svc('ask-ip2', { clusterIP: '10.96.0.10' }));
    expect(dup.status).toBe(422);
    expect(dup.json().reason).toBe('Invalid');
    expect(dup.json().message).toBe(
      'Service "ask-ip2" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.10"}: failed to allocate IP 10.96.0.10: provided IP is already allocated',
    );
    const out = await request(s, 'POST', SVC, svc('ask-ip3', { clusterIP: '10.200.0.1' }));
    expect(out.status).toBe(422);
    // Outside every ServiceCIDR: kube 1.33's MetaAllocator finds no allocator for it.
    expect(out.json().message).toContain('failed to allocate IP 10.200.0.1: the provided network does not match the current range');

    const np = await request(s, 'POST', SVC, svc('ask-port', { type: 'NodePort', ports: [{ port: 80, nodePort: 30290 }] }));
    expect(np.status).toBe(201);
    const npDup = await request(s, 'POST', SVC, svc('ask-port2', { type: 'NodePort', ports: [{ port: 80, nodePort: 30290 }] }));
    expect(npDup.status).toBe(422);
    expect(npDup.json().message).toBe('Service "ask-port2" is invalid: spec.ports[0].nodePort: Invalid value: 30290: provided port is already allocated');
    const npOut = await request(s, 'POST', SVC, svc('ask-port3', { type: 'NodePort', ports: [{ port: 80, nodePort: 31000 }] }));
    expect(npOut.status).toBe(422);
    expect(npOut.json().message).toContain('provided port is not in the valid range. The range of valid ports is 30000-30299');
    // The failed create of ask-port3 did not keep the address it was given.
    // IP and port both taken: only the IP error, as kube allocates IPs first and stops.
    const both = await request(s, 'POST', SVC, svc('ask-both', { clusterIP: '10.96.0.10', type: 'NodePort', ports: [{ port: 80, nodePort: 30290 }] }));
    expect(both.status).toBe(422);
    expect(both.json().message).toBe(
      'Service "ask-both" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.10"}: failed to allocate IP 10.96.0.10: provided IP is already allocated',
    );
  });

  it('200 concurrent creates get 200 distinct ClusterIPs; NodePorts unique and in range', async () => {
    const rs = await Promise.all(
      Array.from({ length: 200 }, (_, i) => request(s, 'POST', SVC, svc(`c${i}`, i % 2 ? { type: 'NodePort' } : {}))),
    );
    expect(rs.map((r) => r.status)).toEqual(rs.map(() => 201));
    const ips = rs.map((r) => r.json().spec.clusterIP as string);
    expect(new Set(ips).size).toBe(200);
    expect(ips).not.toContain('10.96.0.1');
    for (const ip of ips) {
      const [a, b] = ip.split('.').map(Number);
      expect(a).toBe(10);
      expect(b >= 96 && b < 112).toBe(true);
    }
    const ports = rs.filter((_, i) => i % 2).map((r) => r.json().spec.ports[0].nodePort as number);
    expect(new Set(ports).size).toBe(100);
    for (const p of ports) expect(p >= 30000 && p <= 30299).toBe(true);
    // What the list says agrees with what the creates answered.
    const listed = (await request(s, 'GET', SVC)).json().items.filter((i: any) => /^c\d+$/.test(i.metadata.name));
    expect(new Set(listed.map((i: any) => i.spec.clusterIP)).size).toBe(200);
  });

  it('delete releases the address and the port; dry run keeps nothing', async () => {
    expect((await request(s, 'DELETE', `${SVC}/ask-ip`)).status).toBe(200);
    expect((await request(s, 'DELETE', `${SVC}/ask-port`)).status).toBe(200);
    const again = await request(s, 'POST', SVC, svc('ask-again', { clusterIP: '10.96.0.10', type: 'NodePort', ports: [{ port: 80, nodePort: 30290 }] }));
    expect(again.status).toBe(201);
    const used = new Set((await request(s, 'GET', SVC)).json().items.flatMap((i: any) => i.spec.ports.map((p: any) => p.nodePort)));
    let free = 30000;
    while (used.has(free)) free++;
    const dry = await request(s, 'POST', `${SVC}?dryRun=All`, svc('dry', { clusterIP: '10.96.0.11', type: 'NodePort', ports: [{ port: 80, nodePort: free }] }));
    expect(dry.status).toBe(201);
    expect(dry.json().spec.clusterIP).toBe('10.96.0.11');
    expect((await request(s, 'GET', `${SVC}/dry`)).status).toBe(404);
    const real = await request(s, 'POST', SVC, svc('dry', { clusterIP: '10.96.0.11', type: 'NodePort', ports: [{ port: 80, nodePort: free }] }));
    expect(real.status).toBe(201);
  });

  it('changing type to NodePort allocates a port, back to ClusterIP releases it', async () => {
    await request(s, 'POST', SVC, svc('flip'));
    const up = await request(s, 'PATCH', `${SVC}/flip`, { spec: { type: 'NodePort' } }, { 'content-type': 'application/merge-patch+json' });
    expect(up.status).toBe(200);
    const port = up.json().spec.ports[0].nodePort;
    expect(port >= 30000 && port <= 30299).toBe(true);
    const down = await request(s, 'PATCH', `${SVC}/flip`, { spec: { type: 'ClusterIP' } }, { 'content-type': 'application/merge-patch+json' });
    expect(down.status).toBe(200);
    expect(down.json().spec.ports[0].nodePort).toBeUndefined();
    const take = await request(s, 'POST', SVC, svc('take', { type: 'NodePort', ports: [{ port: 80, nodePort: port }] }));
    expect(take.status).toBe(201);
  });

  it('NodePort to ClusterIP while changing the ports drops the node ports (the old ones cover the new)', async () => {
    const created = await request(s, 'POST', SVC, svc('reshape', { type: 'NodePort', ports: [{ name: 'a', port: 80 }, { name: 'b', port: 81 }] }));
    expect(created.status).toBe(201);
    const [pa] = created.json().spec.ports.map((p: any) => p.nodePort);
    // One port removed, one changed, the kept node port sent back: allowed, and cleared.
    const cur = (await request(s, 'GET', `${SVC}/reshape`)).json();
    cur.spec.type = 'ClusterIP';
    cur.spec.ports = [{ name: 'a', port: 8080, targetPort: 80, protocol: 'TCP', nodePort: pa }];
    const put = await request(s, 'PUT', `${SVC}/reshape`, cur);
    expect(put.status).toBe(200);
    expect(put.json().spec.ports).toEqual([{ name: 'a', port: 8080, targetPort: 80, protocol: 'TCP' }]);
    expect(put.json().spec.externalTrafficPolicy).toBeUndefined();
    // A node port the service did not have is refused on a ClusterIP service.
    const np = await request(s, 'POST', SVC, svc('reshape2', { type: 'NodePort', ports: [{ port: 80 }] }));
    const cur2 = np.json();
    cur2.spec.type = 'ClusterIP';
    cur2.spec.ports = [{ port: 80, targetPort: 80, protocol: 'TCP', nodePort: 30299 === cur2.spec.ports[0].nodePort ? 30298 : 30299 }];
    const bad = await request(s, 'PUT', `${SVC}/reshape2`, cur2);
    expect(bad.status).toBe(422);
    expect(bad.json().message).toContain('spec.ports[0].nodePort: Forbidden: may not be used when `type` is \'ClusterIP\'');
  });

  it('allocations survive a restart', async () => {
    await s.stop();
    await s.restart();
    const dup = await request(s, 'POST', SVC, svc('after-restart', { clusterIP: '10.96.0.11' }));
    expect(dup.status).toBe(422);
  });
});
