// Dry run (spec 4.7) with real kubectl --dry-run=server: every verb answers with the object
// that would be stored (generated fields included), nothing is stored, no watcher sees it.
import { describe, it, expect } from 'vitest';
import { openWatch, request, type TestServer, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;

// a bare API server, as kube-apiserver without kube-controller-manager: no ReplicaSet or Deployment controller writes the workloads these tests look at
useServer((started) => (s = started), { args: ['--controllers=*,-replicaset-controller,-deployment-controller'] });

const DEPLOY = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: dry-web
spec:
  selector:
    matchLabels: {app: dry-web}
  template:
    metadata:
      labels: {app: dry-web}
    spec:
      containers:
      - name: c
        image: nginx
`;

describe('kubectl --dry-run=server', () => {
  it('create, apply (both forms), label, scale, delete: answers as if, stores nothing, tells no watcher', async () => {
    const wcm = openWatch(s, '/api/v1/namespaces/default/configmaps?watch=true');
    const wdep = openWatch(s, '/apis/apps/v1/namespaces/default/deployments?watch=true');
    expect(await wcm.status).toBe(200);
    expect(await wdep.status).toBe(200);

    const c = await kubectl(s, ['create', 'configmap', 'dry-cm', '--from-literal=a=b', '--dry-run=server', '-o', 'json']);
    expect(c.code).toBe(0);
    const cm = JSON.parse(c.stdout);
    expect(cm.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(cm.metadata.creationTimestamp).toBeTruthy();
    expect((await request(s, 'GET', '/api/v1/namespaces/default/configmaps/dry-cm')).status).toBe(404);

    const ssa = await kubectl(s, ['apply', '--server-side', '--dry-run=server', '-o', 'json', '-f', '-'], { input: DEPLOY });
    expect(ssa.code).toBe(0);
    const dep = JSON.parse(ssa.stdout);
    expect(dep.spec.replicas).toBe(1); // defaulted
    expect(dep.metadata.generation).toBe(1);
    const csa = await kubectl(s, ['apply', '--dry-run=server', '-f', '-'], { input: DEPLOY });
    expect(csa.code).toBe(0);
    expect(csa.stdout).toContain('deployment.apps/dry-web created (server dry run)');
    expect((await request(s, 'GET', '/apis/apps/v1/namespaces/default/deployments/dry-web')).status).toBe(404);

    // On real objects: changes are answered, not kept.
    expect((await kubectl(s, ['create', 'configmap', 'real-cm', '--from-literal=a=b'])).code).toBe(0);
    expect((await kubectl(s, ['apply', '-f', '-'], { input: DEPLOY })).code).toBe(0);
    const realRv = (await request(s, 'GET', '/api/v1/namespaces/default/configmaps/real-cm')).json().metadata.resourceVersion;
    const depRv = (await request(s, 'GET', '/apis/apps/v1/namespaces/default/deployments/dry-web')).json().metadata.resourceVersion;
    const seen = () => [wcm.events.length, wdep.events.length];
    // Wait for the two real creates to reach the watchers, then remember how many there are.
    for (let i = 0; i < 100 && (wcm.events.length < 1 || wdep.events.length < 1); i++) await new Promise((r) => setTimeout(r, 20));
    const before = seen();

    const label = await kubectl(s, ['label', 'configmap', 'real-cm', 'x=y', '--dry-run=server', '-o', 'json']);
    expect(label.code).toBe(0);
    expect(JSON.parse(label.stdout).metadata.labels).toEqual({ x: 'y' });
    // Nothing was written, so the answer carries the version the object has now.
    expect(JSON.parse(label.stdout).metadata.resourceVersion).toBe(realRv);
    // kubectl diff is a dry-run apply: only what would change shows, not the version.
    const diff = await kubectl(s, ['diff', '-f', '-'], { input: DEPLOY.replace('image: nginx', 'image: nginx:3') });
    expect(diff.code).toBe(1);
    expect(diff.stdout).toMatch(/^-\s+- image: nginx$/m);
    expect(diff.stdout).toMatch(/^\+\s+- image: nginx:3$/m);
    expect(diff.stdout).not.toMatch(/^[-+]\s+resourceVersion/m);
    const scale = await kubectl(s, ['scale', 'deployment', 'dry-web', '--replicas=4', '--dry-run=server']);
    expect(scale.code).toBe(0);
    const ssa2 = await kubectl(s, ['apply', '--server-side', '--dry-run=server', '-f', '-'], { input: DEPLOY.replace('image: nginx', 'image: nginx:2') });
    expect(ssa2.code).toBe(0);
    const del = await kubectl(s, ['delete', 'configmap', 'real-cm', '--dry-run=server']);
    expect(del.code).toBe(0);
    expect(del.stdout).toContain('configmap "real-cm" deleted (server dry run)');
    const delAll = await request(s, 'DELETE', '/api/v1/namespaces/default/configmaps?dryRun=All');
    expect(delAll.status).toBe(200);
    expect(delAll.json().items.length).toBeGreaterThan(0);

    const cmNow = (await request(s, 'GET', '/api/v1/namespaces/default/configmaps/real-cm')).json();
    expect(cmNow.metadata.resourceVersion).toBe(realRv);
    expect(cmNow.metadata.labels).toBeUndefined();
    const depNow = (await request(s, 'GET', '/apis/apps/v1/namespaces/default/deployments/dry-web')).json();
    expect(depNow.metadata.resourceVersion).toBe(depRv);
    expect(depNow.spec.replicas).toBe(1);
    // A real write afterwards is the next thing each watcher sees.
    await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'marker' } });
    for (let i = 0; i < 200 && wcm.events.length === before[0]; i++) await new Promise((r) => setTimeout(r, 20));
    expect(wcm.events.slice(before[0]).map((e) => e.object.metadata.name)).toEqual(['marker']);
    expect(wdep.events.length).toBe(before[1]);
    wcm.close();
    wdep.close();
  });

  it('only a bare dryRun or All is accepted', async () => {
    const r = await request(s, 'POST', '/api/v1/namespaces/default/configmaps?dryRun=Some', { metadata: { name: 'x' } });
    expect(r.status).toBe(400);
    const bare = await request(s, 'POST', '/api/v1/namespaces/default/configmaps?dryRun', { metadata: { name: 'bare' } });
    expect(bare.status).toBe(201);
    expect((await request(s, 'GET', '/api/v1/namespaces/default/configmaps/bare')).status).toBe(404);
  });
});
