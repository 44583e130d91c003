// pods/ephemeralcontainers, pods/resize and pods/log against a started server, with real
// kubectl (debug, patch --subresource, logs) where a user would use it.
import { describe, it, expect } from 'vitest';
import { request, type TestServer, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;
const PODS = '/api/v1/namespaces/default/pods';
const STRATEGIC = { 'content-type': 'application/strategic-merge-patch+json' };

useServer((started) => (s = started));

const pod = (name: string, resources?: any) => ({ metadata: { name }, spec: { containers: [{ name: 'c', image: 'x', ...(resources ? { resources } : {}) }] } });

describe('pods/ephemeralcontainers', () => {
  it('kubectl debug adds an ephemeral container; other spec changes are dropped; existing ones cannot be removed', async () => {
    await request(s, 'POST', PODS, pod('eph'));
    const dbg = await kubectl(s, ['debug', 'eph', '--image=busybox', '-c', 'dbg', '--profile=general']);
    expect(dbg.code).toBe(0);
    const got = (await request(s, 'GET', `${PODS}/eph/ephemeralcontainers`)).json();
    expect(got.kind).toBe('Pod');
    expect(got.spec.ephemeralContainers.map((c: any) => c.name)).toEqual(['dbg']);
    const other = await request(s, 'PATCH', `${PODS}/eph/ephemeralcontainers`, { spec: { activeDeadlineSeconds: 5, ephemeralContainers: [{ name: 'dbg2', image: 'busybox' }] } }, STRATEGIC);
    expect(other.status).toBe(200);
    expect(other.json().spec.activeDeadlineSeconds).toBeUndefined();
    expect(other.json().spec.ephemeralContainers.map((c: any) => c.name)).toEqual(['dbg', 'dbg2']);
    const removed = await request(s, 'PATCH', `${PODS}/eph/ephemeralcontainers`, [{ op: 'remove', path: '/spec/ephemeralContainers/0' }], { 'content-type': 'application/json-patch+json' });
    expect(removed.status).toBe(422);
    expect(removed.json().message).toBe('Pod "eph" is invalid: spec.ephemeralContainers: Not found: "dbg"');
    const dup = await request(s, 'PATCH', `${PODS}/eph/ephemeralcontainers`, { spec: { ephemeralContainers: [{ name: 'c', image: 'busybox' }] } }, STRATEGIC);
    expect(dup.status).toBe(422);
  });
});

describe('pods/resize', () => {
  it('changes container cpu and memory only, and never the QoS class', async () => {
    await request(s, 'POST', PODS, pod('rs', { requests: { cpu: '100m', memory: '64Mi' } }));
    const ok = await kubectl(s, ['patch', 'pod', 'rs', '--subresource', 'resize', '-p', '{"spec":{"containers":[{"name":"c","image":"y","resources":{"requests":{"cpu":"200m"}}}]}}']);
    expect(ok.code).toBe(0);
    const got = (await request(s, 'GET', `${PODS}/rs`)).json();
    expect(got.spec.containers[0].resources.requests.cpu).toBe('200m');
    expect(got.spec.containers[0].image).toBe('x');
    const qos = await request(s, 'PATCH', `${PODS}/rs/resize`, { spec: { containers: [{ name: 'c', resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } } }] } }, STRATEGIC);
    expect(qos.status).toBe(422);
    expect(qos.json().message).toContain('Pod QOS Class may not change as a result of resizing');
    const storage = await request(s, 'PATCH', `${PODS}/rs/resize`, { spec: { containers: [{ name: 'c', resources: { requests: { 'ephemeral-storage': '1Gi' } } }] } }, STRATEGIC);
    expect(storage.status).toBe(422);
    expect(storage.json().message).toContain('spec: Forbidden: only cpu and memory resources are mutable');
  });
});

describe('pods/log', () => {
  it('answers as kube-apiserver without a kubelet: container checks, empty log without a node, errors for a node', async () => {
    await request(s, 'POST', PODS, { metadata: { name: 'lg' }, spec: { containers: [{ name: 'a', image: 'x' }, { name: 'b', image: 'x' }] } });
    const which = await request(s, 'GET', `${PODS}/lg/log`);
    expect(which.status).toBe(400);
    expect(which.json().message).toBe('a container name must be specified for pod lg, choose one of: [a b]');
    expect((await request(s, 'GET', `${PODS}/lg/log?container=zz`)).json().message).toBe('container zz is not valid for pod lg');
    const empty = await kubectl(s, ['logs', 'lg', '-c', 'a']);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe('');
    await request(s, 'POST', `${PODS}/lg/binding`, { metadata: { name: 'lg' }, target: { name: 'n-missing' } });
    const noNode = await kubectl(s, ['logs', 'lg', '-c', 'a']);
    expect(noNode.stderr).toContain('Error from server (NotFound): nodes "n-missing" not found');
    await request(s, 'POST', '/api/v1/nodes', { metadata: { name: 'n-missing' }, status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: 1 } } } });
    const unreachable = await kubectl(s, ['logs', 'lg', '-c', 'a']);
    expect(unreachable.stderr).toContain('Error from server: Get "https://127.0.0.1:1/containerLogs/default/lg/a": dial tcp 127.0.0.1:1: connect: connection refused');
  });
});
