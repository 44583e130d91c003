// Conversion between the versions of one resource, against the real server: one storage
// per group-resource, every read and write converted to and from the request's version
// (src/registry/conversion.ts), as kube-apiserver's storage codec does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import protobuf from 'protobufjs';
import { protoSchema } from '../src/codec/proto-schema.js';
import { openWatch, request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

const V1 = '/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers';
const V2 = '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers';
const CORE_EV = '/api/v1/namespaces/default/events';
const NEW_EV = '/apis/events.k8s.io/v1/namespaces/default/events';
const PB = 'application/vnd.kubernetes.protobuf';
const METRICS = 'autoscaling.alpha.kubernetes.io/metrics';

let s: TestServer;
beforeAll(async () => {
  // admissionregistration v1beta1 served next to v1: one storage, two versions
  s = await startServer({ args: ['--runtime-config=admissionregistration.k8s.io/v1beta1=true,resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true'] });
}, 60_000);
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

const cpu = (n: number) => ({ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: n } } });

describe('HorizontalPodAutoscaler: autoscaling/v1 and v2 are one storage', () => {
  it('kubectl autoscale (v2) reads back through v1 with the CPU target as a field', async () => {
    expect((await kubectl(s, ['create', 'deployment', 'web', '--image=nginx'])).code).toBe(0);
    const r = await kubectl(s, ['autoscale', 'deploy', 'web', '--max', '5', '--cpu-percent', '60']);
    expect(r.code, r.stderr).toBe(0);
    const v2 = (await request(s, 'GET', `${V2}/web`)).json();
    expect(v2.apiVersion).toBe('autoscaling/v2');
    expect(v2.spec.metrics).toEqual([cpu(60)]);
    const got = await request(s, 'GET', `${V1}/web`);
    expect(got.status).toBe(200);
    const v1 = got.json();
    expect(v1.apiVersion).toBe('autoscaling/v1');
    expect(v1.metadata.uid).toBe(v2.metadata.uid);
    expect(v1.metadata.resourceVersion).toBe(v2.metadata.resourceVersion);
    expect(v1.spec).toEqual({ scaleTargetRef: { kind: 'Deployment', name: 'web', apiVersion: 'apps/v1' }, minReplicas: 1, maxReplicas: 5, targetCPUUtilizationPercentage: 60 });
    expect(v1.spec.metrics).toBeUndefined();
    expect(v1.status).toEqual({ currentReplicas: 0, desiredReplicas: 0 });
    expect(v1.metadata.annotations?.[METRICS]).toBeUndefined();
    // kubectl reads through its preferred version and the v1 one alike
    const k = await kubectl(s, ['get', 'horizontalpodautoscalers.v1.autoscaling', 'web', '-o', 'jsonpath={.apiVersion} {.spec.targetCPUUtilizationPercentage}']);
    expect(k.stdout).toBe('autoscaling/v1 60');
  });

  it('v2-only metrics ride through v1 in the metrics annotation, and a v1 round trip keeps them', async () => {
    const mem = { type: 'Resource', resource: { name: 'memory', target: { type: 'AverageValue', averageValue: '100Mi' } } };
    const p = await request(s, 'PATCH', `${V2}/web`, { spec: { metrics: [cpu(50), mem] } }, { 'content-type': 'application/merge-patch+json' });
    expect(p.status, p.body).toBe(200);
    const v1 = (await request(s, 'GET', `${V1}/web`)).json();
    expect(v1.spec.targetCPUUtilizationPercentage).toBe(50);
    expect(JSON.parse(v1.metadata.annotations[METRICS])).toEqual([{ type: 'Resource', resource: { name: 'memory', targetAverageValue: '100Mi' } }]);
    // a client that knows only v1 writes the object back: nothing of v2 is lost
    v1.spec.maxReplicas = 6;
    const put = await request(s, 'PUT', `${V1}/web`, v1);
    expect(put.status, put.body).toBe(200);
    expect(put.json().apiVersion).toBe('autoscaling/v1');
    const v2 = (await request(s, 'GET', `${V2}/web`)).json();
    expect(v2.spec.maxReplicas).toBe(6);
    expect(v2.spec.metrics).toEqual([mem, cpu(50)]);
    expect(v2.metadata.annotations?.[METRICS]).toBeUndefined();
  });

  it('created through v1, read through v2: converted, with v1 implicit 80% CPU made explicit', async () => {
    const mk = (name: string, target?: number) => ({
      apiVersion: 'autoscaling/v1',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name },
      spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 1, maxReplicas: 3, ...(target ? { targetCPUUtilizationPercentage: target } : {}) },
    });
    const c = await request(s, 'POST', `${V1}?fieldManager=v1-writer`, mk('v1-made', 70));
    expect(c.status, c.body).toBe(201);
    expect(c.json().apiVersion).toBe('autoscaling/v1');
    expect(c.json().spec.targetCPUUtilizationPercentage).toBe(70);
    // a dry run answers what a real write would: the v1 object as it reads back from v2
    const dry = await request(s, 'POST', `${V1}?dryRun=All`, mk('dry'));
    expect(dry.status, dry.body).toBe(201);
    expect(dry.json().spec.targetCPUUtilizationPercentage).toBe(80);
    expect((await request(s, 'GET', `${V2}/dry`)).status).toBe(404);
    const v2 = (await request(s, 'GET', `${V2}/v1-made`)).json();
    expect(v2.apiVersion).toBe('autoscaling/v2');
    expect(v2.spec.metrics).toEqual([cpu(70)]);
    expect(v2.spec.targetCPUUtilizationPercentage).toBeUndefined();
    // managed fields keep the version of the request that wrote them
    expect(v2.metadata.managedFields.map((m: any) => [m.manager, m.apiVersion])).toEqual([['v1-writer', 'autoscaling/v1']]);
    await request(s, 'POST', V1, mk('v1-default'));
    expect((await request(s, 'GET', `${V2}/v1-default`)).json().spec.metrics).toEqual([cpu(80)]);
    // both versions list the same objects, each in its own version
    const l1 = (await request(s, 'GET', V1)).json();
    const l2 = (await request(s, 'GET', V2)).json();
    expect(l1.apiVersion).toBe('autoscaling/v1');
    expect(l1.items.map((i: any) => i.metadata.name).sort()).toEqual(l2.items.map((i: any) => i.metadata.name).sort());
    // (a built-in type's list items carry no apiVersion: each list's version shows in its fields)
    expect(l2.apiVersion).toBe('autoscaling/v2');
    for (const i of l1.items) expect([i.apiVersion, i.spec.metrics, typeof i.spec.targetCPUUtilizationPercentage]).toEqual([undefined, undefined, 'number']);
    for (const i of l2.items) expect([i.apiVersion, i.spec.targetCPUUtilizationPercentage, Array.isArray(i.spec.metrics)]).toEqual([undefined, undefined, true]);
  });

  it('a watch through v1 sees a write through v2, converted', async () => {
    const rv = (await request(s, 'GET', `${V1}/web`)).json().metadata.resourceVersion;
    const w = openWatch(s, `${V1}?watch=1&resourceVersion=${rv}&fieldSelector=metadata.name%3Dweb`);
    try {
      expect(await w.status).toBe(200);
      const p = await request(s, 'PATCH', `${V2}/web`, { spec: { metrics: [cpu(55)] } }, { 'content-type': 'application/merge-patch+json' });
      expect(p.status, p.body).toBe(200);
      const ev = await until(() => w.events.find((e) => e.type === 'MODIFIED'));
      expect(ev.object.apiVersion).toBe('autoscaling/v1');
      expect(ev.object.spec.targetCPUUtilizationPercentage).toBe(55);
      expect(ev.object.spec.metrics).toBeUndefined();
    } finally {
      w.close();
    }
  });

  it('protobuf through v1 carries the converted fields', async () => {
    const root = protobuf.Root.fromJSON(protoSchema);
    const Unknown = root.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown');
    const Hpa = root.lookupType('k8s.io.api.autoscaling.v1.HorizontalPodAutoscaler');
    const r = await request(s, 'GET', `${V1}/web`, undefined, { accept: PB });
    expect(r.status).toBe(200);
    const u: any = Unknown.decode(r.raw.subarray(4));
    expect(u.typeMeta).toEqual({ apiVersion: 'autoscaling/v1', kind: 'HorizontalPodAutoscaler' });
    const hpa: any = Hpa.toObject(Hpa.decode(u.raw), { defaults: false });
    expect(hpa.spec.targetCPUUtilizationPercentage).toBe(55);
    expect(hpa.spec.maxReplicas).toBe(6);
    // and the list through v1 too
    const l = await request(s, 'GET', V1, undefined, { accept: PB });
    const lu: any = Unknown.decode(l.raw.subarray(4));
    const list: any = root.lookupType('k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerList').decode(lu.raw);
    const web = list.items.find((i: any) => i.metadata.name === 'web');
    expect(web.spec.targetCPUUtilizationPercentage).toBe(55);
  });
});

describe('Events: core/v1 and events.k8s.io/v1 are one storage', () => {
  const coreEvent = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'web.1' },
    involvedObject: { kind: 'Deployment', namespace: 'default', name: 'web', apiVersion: 'apps/v1' },
    reason: 'ScalingReplicaSet',
    message: 'Scaled up replica set web-1 to 1',
    source: { component: 'deployment-controller' },
    firstTimestamp: '2026-01-01T00:00:00Z',
    lastTimestamp: '2026-01-01T00:01:00Z',
    count: 2,
    type: 'Normal',
  };

  it('a core Event reads and lists through events.k8s.io/v1 with its fields mapped', async () => {
    const c = await request(s, 'POST', CORE_EV, coreEvent);
    expect(c.status, c.body).toBe(201);
    const g = await request(s, 'GET', `${NEW_EV}/web.1`);
    expect(g.status, g.body).toBe(200);
    const e = g.json();
    expect(e.apiVersion).toBe('events.k8s.io/v1');
    expect(e.metadata.uid).toBe(c.json().metadata.uid);
    expect(e.regarding).toEqual(coreEvent.involvedObject);
    expect(e.note).toBe(coreEvent.message);
    expect(e.reason).toBe('ScalingReplicaSet');
    expect(e.type).toBe('Normal');
    expect(e.deprecatedSource).toEqual({ component: 'deployment-controller' });
    expect(e.deprecatedFirstTimestamp).toBe('2026-01-01T00:00:00Z');
    expect(e.deprecatedLastTimestamp).toBe('2026-01-01T00:01:00Z');
    expect(e.deprecatedCount).toBe(2);
    for (const k of ['involvedObject', 'message', 'source', 'count', 'firstTimestamp', 'lastTimestamp', 'reportingComponent']) expect(e[k], k).toBeUndefined();
    const l = (await request(s, 'GET', NEW_EV)).json();
    expect(l.kind).toBe('EventList');
    expect(l.apiVersion).toBe('events.k8s.io/v1');
    expect(l.items.find((i: any) => i.metadata.name === 'web.1')?.note).toBe(coreEvent.message);
  });

  it('an events.k8s.io/v1 Event reads through core/v1, and field selectors map regarding.* onto the shared storage', async () => {
    const ev = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'db.1' },
      eventTime: '2026-01-01T00:00:00.000000Z',
      reportingController: 'example.com/ctl',
      reportingInstance: 'ctl-1',
      action: 'Sync',
      reason: 'Synced',
      regarding: { kind: 'StatefulSet', namespace: 'default', name: 'db', apiVersion: 'apps/v1' },
      note: 'synced',
      type: 'Normal',
    };
    const c = await request(s, 'POST', NEW_EV, ev);
    expect(c.status, c.body).toBe(201);
    expect(c.json().apiVersion).toBe('events.k8s.io/v1');
    expect(c.json().regarding).toEqual(ev.regarding);
    const core = (await request(s, 'GET', `${CORE_EV}/db.1`)).json();
    expect(core.apiVersion).toBe('v1');
    expect(core.involvedObject).toEqual(ev.regarding);
    expect(core.message).toBe('synced');
    expect(core.reportingComponent).toBe('example.com/ctl');
    expect(core.reportingInstance).toBe('ctl-1');
    expect(core.regarding).toBeUndefined();
    const byRegarding = (await request(s, 'GET', `${NEW_EV}?fieldSelector=regarding.name%3Ddb`)).json();
    expect(byRegarding.items.map((i: any) => i.metadata.name)).toEqual(['db.1']);
    const byController = (await request(s, 'GET', `${NEW_EV}?fieldSelector=reportingController%3Dexample.com%2Fctl`)).json();
    expect(byController.items.map((i: any) => i.metadata.name)).toEqual(['db.1']);
    const coreSel = (await request(s, 'GET', `${CORE_EV}?fieldSelector=involvedObject.name%3Dweb`)).json();
    // (the deployment controller's own ScalingReplicaSet events about 'web', created above, match too)
    expect(coreSel.items.map((i: any) => i.metadata.name)).toContain('web.1');
    expect(coreSel.items.every((i: any) => i.involvedObject.name === 'web')).toBe(true);
    expect(coreSel.items.some((i: any) => i.metadata.name === 'db.1')).toBe(false);
    const bad = await request(s, 'GET', `${NEW_EV}?fieldSelector=involvedObject.name%3Dweb`);
    expect(bad.status).toBe(400);
    // a delete through either version removes the one object
    expect((await request(s, 'DELETE', `${CORE_EV}/db.1`)).status).toBe(200);
    expect((await request(s, 'GET', `${NEW_EV}/db.1`)).status).toBe(404);
  });

  it('a watch through events.k8s.io/v1 sees core writes converted', async () => {
    const rv = (await request(s, 'GET', NEW_EV)).json().metadata.resourceVersion;
    const w = openWatch(s, `${NEW_EV}?watch=1&resourceVersion=${rv}`);
    try {
      expect(await w.status).toBe(200);
      const c = await request(s, 'POST', CORE_EV, { ...coreEvent, metadata: { name: 'web.2' } });
      expect(c.status, c.body).toBe(201);
      const ev = await until(() => w.events.find((e) => e.type === 'ADDED' && e.object.metadata.name === 'web.2'));
      expect(ev.object.apiVersion).toBe('events.k8s.io/v1');
      expect(ev.object.note).toBe(coreEvent.message);
      expect(ev.object.message).toBeUndefined();
    } finally {
      w.close();
    }
    // a field selector in events.k8s.io's own labels filters the watch of the shared storage
    const rv2 = (await request(s, 'GET', NEW_EV)).json().metadata.resourceVersion;
    const sel = openWatch(s, `${NEW_EV}?watch=1&resourceVersion=${rv2}&fieldSelector=regarding.name%3Dapi`);
    try {
      expect(await sel.status).toBe(200);
      await request(s, 'POST', CORE_EV, { ...coreEvent, metadata: { name: 'web.3' } });
      await request(s, 'POST', CORE_EV, { ...coreEvent, metadata: { name: 'api.1' }, involvedObject: { ...coreEvent.involvedObject, name: 'api' } });
      const ev = await until(() => sel.events.find((e) => e.type === 'ADDED'));
      expect(ev.object.metadata.name).toBe('api.1');
      expect(ev.object.regarding.name).toBe('api');
      expect(sel.events.map((e) => e.object.metadata.name)).not.toContain('web.3');
    } finally {
      sel.close();
    }
  });
});

describe('a beta version enabled by --runtime-config shares the GA storage', () => {
  it('ValidatingAdmissionPolicy through v1beta1 and v1 is one object', async () => {
    const vap = {
      apiVersion: 'admissionregistration.k8s.io/v1beta1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'p1' },
      spec: { failurePolicy: 'Fail', matchConstraints: { resourceRules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments'] }] }, validations: [{ expression: 'object.spec.replicas <= 5' }] },
    };
    const c = await request(s, 'POST', '/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies', vap);
    expect(c.status, c.body).toBe(201);
    expect(c.json().apiVersion).toBe('admissionregistration.k8s.io/v1beta1');
    const v1 = await request(s, 'GET', '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/p1');
    expect(v1.status, v1.body).toBe(200);
    expect(v1.json().apiVersion).toBe('admissionregistration.k8s.io/v1');
    expect(v1.json().metadata.uid).toBe(c.json().metadata.uid);
    expect(v1.json().spec.validations).toEqual(vap.spec.validations);
    const l = (await request(s, 'GET', '/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies')).json();
    expect(l.apiVersion).toBe('admissionregistration.k8s.io/v1beta1');
    expect(l.items.map((i: any) => [i.apiVersion, i.metadata.name])).toEqual([[undefined, 'p1']]);
    const d = await request(s, 'DELETE', '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/p1');
    expect(d.status).toBe(200);
    expect((await request(s, 'GET', '/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies/p1')).status).toBe(404);
  });
});

describe('resource.k8s.io v1beta2 next to the stored v1beta1', () => {
  it('a ResourceClaim written through v1beta2 reads through v1beta1 with its request flattened', async () => {
    const claim = {
      apiVersion: 'resource.k8s.io/v1beta2',
      kind: 'ResourceClaim',
      metadata: { name: 'gpu' },
      spec: { devices: { requests: [{ name: 'r', exactly: { deviceClassName: 'gpu.example.com', allocationMode: 'ExactCount', count: 1 } }] } },
    };
    const c = await request(s, 'POST', '/apis/resource.k8s.io/v1beta2/namespaces/default/resourceclaims', claim);
    expect(c.status, c.body).toBe(201);
    expect(c.json().spec.devices.requests[0].exactly.deviceClassName).toBe('gpu.example.com');
    const b1 = (await request(s, 'GET', '/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaims/gpu')).json();
    expect(b1.apiVersion).toBe('resource.k8s.io/v1beta1');
    expect(b1.spec.devices.requests[0]).toMatchObject({ name: 'r', deviceClassName: 'gpu.example.com', count: 1 });
    expect(b1.spec.devices.requests[0].exactly).toBeUndefined();
  });
});
