// The MultiCIDRServiceAllocator objects of kube 1.33 against a started server: the default
// ServiceCIDR `kubernetes` (from --service-cluster-ip-range, Ready), one IPAddress per
// allocated ClusterIP created with its Service and deleted with it (also under 200
// concurrent creates and across a restart), a user's IPAddress taking its address, the
// repair of a deleted one, and kube's dry-run allocation.
import { describe, it, expect } from 'vitest';
import { request, type TestServer, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;
const SVC = '/api/v1/namespaces/default/services';
const IPS = '/apis/networking.k8s.io/v1/ipaddresses';
const CIDRS = '/apis/networking.k8s.io/v1/servicecidrs';

useServer((started) => (s = started), { args: ['--service-cluster-ip-range', '10.128.0.5/16'] });

function svc(name: string, spec: any = {}) {
  return { metadata: { name }, spec: { ports: [{ port: 80 }], ...spec } };
}

async function ipObjects(): Promise<Map<string, any>> {
  const items = (await request(s, 'GET', IPS)).json().items as any[];
  return new Map(items.map((i) => [i.metadata.name, i]));
}

describe('ServiceCIDR and IPAddress objects', () => {
  it('the default ServiceCIDR holds the flag range (canonical) and is Ready', async () => {
    const r = await request(s, 'GET', `${CIDRS}/kubernetes`);
    expect(r.status).toBe(200);
    const o = r.json();
    expect(o.spec.cidrs).toEqual(['10.128.0.0/16']);
    const ready = o.status.conditions.find((c: any) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'True', message: 'Kubernetes default Service CIDR is ready', reason: '' });
    expect(ready.lastTransitionTime).toMatch(/Z$/);
    // Its CIDRs are immutable; a second CIDR of the same family is refused.
    const p = await request(s, 'PATCH', `${CIDRS}/kubernetes`, { spec: { cidrs: ['10.0.0.0/8'] } }, { 'content-type': 'application/merge-patch+json' });
    expect(p.status).toBe(422);
    expect(p.json().message).toBe('ServiceCIDR.networking.k8s.io "kubernetes" is invalid: spec.cidrs: Invalid value: []string{"10.0.0.0/8"}: field is immutable');
    const two = await request(s, 'POST', CIDRS, { metadata: { name: 'two' }, spec: { cidrs: ['10.0.0.0/24', '10.1.0.0/24'] } });
    expect(two.status).toBe(422);
    expect(two.json().message).toContain('may specify no more than one IP for each IP family');
    const none = await request(s, 'POST', CIDRS, { metadata: { name: 'none' }, spec: {} });
    expect(none.json().message).toBe('ServiceCIDR.networking.k8s.io "none" is invalid: spec.cidrs: Required value: at least one CIDR required');
  });

  it('the default ServiceCIDR comes back when deleted, as kube\'s controller recreates it', async () => {
    const uid = (await request(s, 'GET', `${CIDRS}/kubernetes`)).json().metadata.uid;
    expect((await request(s, 'DELETE', `${CIDRS}/kubernetes`)).status).toBe(200);
    let back: any;
    for (let i = 0; i < 100 && !back; i++) {
      const r = await request(s, 'GET', `${CIDRS}/kubernetes`);
      if (r.status === 200 && r.json().status?.conditions?.length) back = r.json();
      else await new Promise((ok) => setTimeout(ok, 50));
    }
    expect(back.metadata.uid).not.toBe(uid);
    expect(back.spec.cidrs).toEqual(['10.128.0.0/16']);
    expect(back.status.conditions[0]).toMatchObject({ type: 'Ready', status: 'True' });
  });

  it('the kubernetes Service has its IPAddress', async () => {
    const ip = (await request(s, 'GET', `${IPS}/10.128.0.1`)).json();
    expect(ip.metadata.labels).toEqual({ 'ipaddress.kubernetes.io/ip-family': 'IPv4', 'ipaddress.kubernetes.io/managed-by': 'ipallocator.k8s.io' });
    expect(ip.spec.parentRef).toEqual({ resource: 'services', namespace: 'default', name: 'kubernetes' });
    expect(ip.metadata.managedFields[0]).toMatchObject({ manager: 'kube-apiserver', operation: 'Update', apiVersion: 'networking.k8s.io/v1' });
  });

  it('a Service gets an IPAddress with it and loses it when deleted', async () => {
    const c = await request(s, 'POST', SVC, svc('one'));
    expect(c.status).toBe(201);
    const ip = c.json().spec.clusterIP;
    const obj = (await request(s, 'GET', `${IPS}/${ip}`)).json();
    expect(obj.spec.parentRef).toEqual({ resource: 'services', namespace: 'default', name: 'one' });
    expect((await request(s, 'DELETE', `${SVC}/one`)).status).toBe(200);
    expect((await request(s, 'GET', `${IPS}/${ip}`)).status).toBe(404);
    // Headless and ExternalName Services have none.
    await request(s, 'POST', SVC, svc('headless', { clusterIP: 'None' }));
    await request(s, 'POST', SVC, { metadata: { name: 'ext' }, spec: { type: 'ExternalName', externalName: 'example.com' } });
    const owners = [...(await ipObjects()).values()].map((o) => o.spec.parentRef.name);
    expect(owners).not.toContain('headless');
    expect(owners).not.toContain('ext');
  });

  it('200 concurrent creates: 200 distinct addresses, each with its IPAddress; deleting them all removes them', async () => {
    const rs = await Promise.all(Array.from({ length: 200 }, (_, i) => request(s, 'POST', SVC, svc(`p${i}`))));
    expect(rs.map((r) => r.status)).toEqual(rs.map(() => 201));
    const ips = rs.map((r) => r.json().spec.clusterIP as string);
    expect(new Set(ips).size).toBe(200);
    const objs = await ipObjects();
    rs.forEach((r, i) => expect(objs.get(ips[i])?.spec.parentRef.name).toBe(`p${i}`));
    await Promise.all(rs.map((_, i) => request(s, 'DELETE', `${SVC}/p${i}`)));
    const after = await ipObjects();
    for (const ip of ips) expect(after.has(ip)).toBe(false);
  });

  it("a user's IPAddress takes its address; deleting it frees the address", async () => {
    const mine = await request(s, 'POST', IPS, { metadata: { name: '10.128.0.77' }, spec: { parentRef: { group: 'example.com', resource: 'things', name: 'x' } } });
    expect(mine.status).toBe(201);
    const taken = await request(s, 'POST', SVC, svc('wants77', { clusterIP: '10.128.0.77' }));
    expect(taken.status).toBe(422);
    expect(taken.json().message).toContain('failed to allocate IP 10.128.0.77: provided IP is already allocated');
    expect((await request(s, 'DELETE', `${IPS}/10.128.0.77`)).status).toBe(200);
    const ok = await request(s, 'POST', SVC, svc('wants77', { clusterIP: '10.128.0.77' }));
    expect(ok.status).toBe(201);
    // An address a Service holds cannot be claimed by hand.
    const dup = await request(s, 'POST', IPS, { metadata: { name: '10.128.0.77' }, spec: { parentRef: { resource: 'things', name: 'y' } } });
    expect(dup.status).toBe(409);
    expect(dup.json().reason).toBe('AlreadyExists');
  });

  it('an IPAddress deleted while its Service holds the address is put back', async () => {
    const c = (await request(s, 'POST', SVC, svc('kept'))).json();
    const ip = c.spec.clusterIP;
    expect((await request(s, 'DELETE', `${IPS}/${ip}`)).status).toBe(200);
    let back: any;
    for (let i = 0; i < 100 && !back; i++) {
      const r = await request(s, 'GET', `${IPS}/${ip}`);
      if (r.status === 200) back = r.json();
      else await new Promise((ok) => setTimeout(ok, 50));
    }
    expect(back.spec.parentRef.name).toBe('kept');
    // And the address stays the Service's.
    expect((await request(s, 'POST', SVC, svc('steal', { clusterIP: ip }))).status).toBe(422);
  });

  it('ClusterIP to ExternalName drops the address fields and releases the address; back to ClusterIP allocates anew', async () => {
    const c = (await request(s, 'POST', SVC, svc('switch', { selector: { app: 'x' } }))).json();
    const ip = c.spec.clusterIP;
    const merge = { 'content-type': 'application/merge-patch+json' };
    const toExt = await request(s, 'PATCH', `${SVC}/switch`, { spec: { type: 'ExternalName', externalName: 'a.example.com' } }, merge);
    expect(toExt.status).toBe(200);
    const ext = toExt.json().spec;
    expect(ext.clusterIP).toBeUndefined();
    expect(ext.clusterIPs).toBeUndefined();
    expect(ext.ipFamilies).toBeUndefined();
    expect(ext.ipFamilyPolicy).toBeUndefined();
    expect((await request(s, 'GET', `${IPS}/${ip}`)).status).toBe(404);
    const back = await request(s, 'PATCH', `${SVC}/switch`, { spec: { type: 'ClusterIP', externalName: null } }, merge);
    expect(back.status).toBe(200);
    const spec = back.json().spec;
    expect(spec.clusterIP).toMatch(/^10\.128\./);
    expect(spec.ipFamilies).toEqual(['IPv4']);
    expect(spec.ipFamilyPolicy).toBe('SingleStack');
    expect((await request(s, 'GET', `${IPS}/${spec.clusterIP}`)).json().spec.parentRef.name).toBe('switch');
  });

  it('IPAddress validation: names are canonical IPs; parentRef is required and immutable', async () => {
    const bad = await request(s, 'POST', IPS, { metadata: { name: 'not-an-ip' }, spec: { parentRef: { resource: 'things', name: 'x' } } });
    expect(bad.status).toBe(422);
    expect(bad.json().message).toBe('IPAddress.networking.k8s.io "not-an-ip" is invalid: metadata.name: Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)');
    const noRef = await request(s, 'POST', IPS, { metadata: { name: '192.168.1.1' }, spec: {} });
    expect(noRef.json().message).toBe('IPAddress.networking.k8s.io "192.168.1.1" is invalid: spec.parentRef: Required value');
    await request(s, 'POST', IPS, { metadata: { name: '192.168.1.2' }, spec: { parentRef: { resource: 'things', name: 'x' } } });
    const ch = await request(s, 'PATCH', `${IPS}/192.168.1.2`, { spec: { parentRef: { name: 'y' } } }, { 'content-type': 'application/merge-patch+json' });
    expect(ch.status).toBe(422);
    expect(ch.json().message).toContain('spec.parentRef: Invalid value');
    expect(ch.json().message).toContain('field is immutable');
  });

  it('out-of-range addresses are refused with the MetaAllocator wording', async () => {
    const out = await request(s, 'POST', SVC, svc('far', { clusterIP: '10.200.0.1' }));
    expect(out.status).toBe(422);
    expect(out.json().message).toBe(
      'Service "far" is invalid: spec.clusterIPs: Invalid value: []string{"10.200.0.1"}: failed to allocate IP 10.200.0.1: the provided network does not match the current range',
    );
    const net = await request(s, 'POST', SVC, svc('net', { clusterIP: '10.128.0.0' }));
    expect(net.json().message).toContain('failed to allocate IP 10.128.0.0: the provided IP (10.128.0.0) is not in the valid range. The range of valid IPs is 10.128.0.0/16');
  });

  it('a dry run reserves nothing: a dynamic address is answered with the network address, an asked one is only range-checked', async () => {
    const dyn = await request(s, 'POST', `${SVC}?dryRun=All`, svc('dry1'));
    expect(dyn.status).toBe(201);
    expect(dyn.json().spec.clusterIP).toBe('10.128.0.0');
    expect(dyn.json().spec.clusterIPs).toEqual(['10.128.0.0']);
    const held = await request(s, 'POST', `${SVC}?dryRun=All`, svc('dry2', { clusterIP: '10.128.0.1' }));
    expect(held.status).toBe(201);
    expect(held.json().spec.clusterIP).toBe('10.128.0.1');
    const owners = [...(await ipObjects()).values()].map((o) => o.spec.parentRef.name);
    expect(owners).not.toContain('dry1');
    expect((await request(s, 'GET', `${IPS}/10.128.0.1`)).json().spec.parentRef.name).toBe('kubernetes');
  });

  it('kubectl lists them', async () => {
    const r = await kubectl(s, ['get', 'ipaddresses', '10.128.0.1']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/10\.128\.0\.1\s+services\/default\/kubernetes/);
    const c = await kubectl(s, ['get', 'servicecidrs']);
    expect(c.stdout).toMatch(/kubernetes\s+10\.128\.0\.0\/16/);
  });

  it('after a restart the objects and the allocator agree', async () => {
    const before = (await request(s, 'POST', SVC, svc('pre-restart'))).json().spec.clusterIP;
    await s.stop();
    await s.restart();
    expect((await request(s, 'GET', `${IPS}/${before}`)).json().spec.parentRef.name).toBe('pre-restart');
    expect((await request(s, 'POST', SVC, svc('clash', { clusterIP: before }))).status).toBe(422);
    expect((await request(s, 'GET', `${CIDRS}/kubernetes`)).json().spec.cidrs).toEqual(['10.128.0.0/16']);
    const list = (await request(s, 'GET', SVC)).json().items as any[];
    const objs = await ipObjects();
    for (const i of list) if (i.spec.clusterIP && i.spec.clusterIP !== 'None') expect(objs.get(i.spec.clusterIP)?.spec.parentRef.name).toBe(i.metadata.name);
  });
});
