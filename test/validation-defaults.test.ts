// Issue #4 items 3-4 against a started server: kube-apiserver's validation of the common
// kinds (422 Invalid with per-field causes, worded as kube words them) and the 1.33 defaults,
// over HTTPS and through real kubectl.
import { describe, it, expect } from 'vitest';
import { request, type TestServer, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;
const NS = '/api/v1/namespaces/default';
const APPS = '/apis/apps/v1/namespaces/default';
const BATCH = '/apis/batch/v1/namespaces/default';

useServer((started) => (s = started), { args: ['--default-not-ready-toleration-seconds', '120'] });

const container = { name: 'c', image: 'nginx' };
const podSpec = { containers: [container] };

describe('defaults', () => {
  it('a Pod gets the pod, container and admission defaults, and a QoS class', async () => {
    const r = await request(s, 'POST', `${NS}/pods`, {
      metadata: { name: 'p1' },
      spec: { containers: [{ name: 'a', image: 'nginx:1.27', ports: [{ containerPort: 80 }], resources: { limits: { cpu: '1000m', memory: '1024Mi' } } }] },
    });
    expect(r.status).toBe(201);
    const p = r.json();
    expect(p.spec).toMatchObject({
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
      terminationGracePeriodSeconds: 30,
      securityContext: {},
      enableServiceLinks: true,
      priority: 0,
      preemptionPolicy: 'PreemptLowerPriority',
      serviceAccountName: 'default',
      serviceAccount: 'default',
    });
    const c = p.spec.containers[0];
    expect(c).toMatchObject({ imagePullPolicy: 'IfNotPresent', terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File' });
    expect(c.ports[0].protocol).toBe('TCP');
    expect(c.resources).toEqual({ limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '1', memory: '1Gi' } });
    expect(p.spec.tolerations).toEqual([
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 120 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ]);
    expect(p.status).toEqual({ phase: 'Pending', qosClass: 'Guaranteed' });
    const latest = (await request(s, 'POST', `${NS}/pods`, { metadata: { name: 'p2' }, spec: podSpec })).json();
    expect(latest.spec.containers[0].imagePullPolicy).toBe('Always');
    expect(latest.spec.containers[0].resources).toEqual({});
    expect(latest.status.qosClass).toBe('BestEffort');
  });

  it('a Deployment gets replicas, strategy, limits and pod-template defaults', async () => {
    const r = await request(s, 'POST', `${APPS}/deployments`, {
      metadata: { name: 'd1' },
      spec: { selector: { matchLabels: { app: 'd1' } }, template: { metadata: { labels: { app: 'd1' } }, spec: podSpec } },
    });
    expect(r.status).toBe(201);
    const d = r.json();
    expect(d.spec).toMatchObject({
      replicas: 1,
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
    });
    expect(d.spec.template.metadata.creationTimestamp).toBeNull();
    expect(d.spec.template.spec).toMatchObject({ restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler', terminationGracePeriodSeconds: 30, securityContext: {} });
    expect(d.spec.template.spec.enableServiceLinks).toBeUndefined();
    expect(d.spec.template.spec.tolerations).toBeUndefined();
    expect(d.status).toEqual({});
  });

  it('StatefulSet, DaemonSet, Job and CronJob defaults', async () => {
    const tmpl = { metadata: { labels: { app: 'x' } }, spec: podSpec };
    const claim = { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } };
    const stsRes = await request(s, 'POST', `${APPS}/statefulsets`, {
      metadata: { name: 's1' },
      spec: { selector: { matchLabels: { app: 'x' } }, template: tmpl, volumeClaimTemplates: [claim] },
    });
    const sts = stsRes.json();
    expect(sts.spec.volumeClaimTemplates).toEqual([
      { ...claim, apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data', creationTimestamp: null }, spec: { ...claim.spec, volumeMode: 'Filesystem' }, status: { phase: 'Pending' } },
    ]);
    // printed in kube's field order: apiVersion and kind first
    expect(stsRes.body).toContain('"volumeClaimTemplates":[{"kind":"PersistentVolumeClaim","apiVersion":"v1","metadata"');
    expect(sts.spec).toMatchObject({
      replicas: 1,
      podManagementPolicy: 'OrderedReady',
      revisionHistoryLimit: 10,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
    });
    const ds = (await request(s, 'POST', `${APPS}/daemonsets`, { metadata: { name: 'ds1' }, spec: { selector: { matchLabels: { app: 'x' } }, template: tmpl } })).json();
    expect(ds.spec).toMatchObject({ revisionHistoryLimit: 10, updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } } });
    const job = (
      await request(s, 'POST', `${BATCH}/jobs`, { metadata: { name: 'j1' }, spec: { template: { spec: { ...podSpec, restartPolicy: 'Never' } } } })
    ).json();
    expect(job.spec).toMatchObject({ completions: 1, parallelism: 1, backoffLimit: 6, completionMode: 'NonIndexed', suspend: false, podReplacementPolicy: 'TerminatingOrFailed' });
    expect(job.spec.manualSelector).toBeUndefined();
    const uid = job.metadata.uid;
    expect(job.spec.selector).toEqual({ matchLabels: { 'batch.kubernetes.io/controller-uid': uid } });
    expect(job.spec.template.metadata.labels).toEqual({
      'batch.kubernetes.io/controller-uid': uid,
      'batch.kubernetes.io/job-name': 'j1',
      'controller-uid': uid,
      'job-name': 'j1',
    });
    const cj = (
      await request(s, 'POST', `${BATCH}/cronjobs`, {
        metadata: { name: 'cj1' },
        spec: { schedule: '@hourly', jobTemplate: { spec: { template: { spec: { ...podSpec, restartPolicy: 'OnFailure' } } } } },
      })
    ).json();
    expect(cj.spec).toMatchObject({ concurrencyPolicy: 'Allow', suspend: false, successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 1 });
    expect(cj.spec.jobTemplate.spec.backoffLimit).toBeUndefined();
  });

  it('Service, Secret and PVC defaults', async () => {
    const svc = (await request(s, 'POST', `${NS}/services`, { metadata: { name: 'svc1' }, spec: { ports: [{ port: 80 }], selector: { app: 'x' } } })).json();
    expect(svc.spec).toMatchObject({ type: 'ClusterIP', sessionAffinity: 'None', ipFamilyPolicy: 'SingleStack', internalTrafficPolicy: 'Cluster' });
    expect(svc.spec.ports[0]).toMatchObject({ port: 80, protocol: 'TCP', targetPort: 80 });
    const sec = (await request(s, 'POST', `${NS}/secrets`, { metadata: { name: 'sec1' }, stringData: { a: 'hi' } })).json();
    expect(sec.type).toBe('Opaque');
    expect(sec.data).toEqual({ a: Buffer.from('hi').toString('base64') });
    expect(sec.stringData).toBeUndefined();
    const pvc = (
      await request(s, 'POST', `${NS}/persistentvolumeclaims`, {
        metadata: { name: 'pvc1' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      })
    ).json();
    expect(pvc.spec.volumeMode).toBe('Filesystem');
    expect(pvc.status).toEqual({ phase: 'Pending' });
  });
});

describe('port defaults outside Pods and Services', () => {
  it('Endpoints, EndpointSlice and NetworkPolicy ports are TCP; a NetworkPolicy gets its policyTypes', async () => {
    const ep = await request(s, 'POST', `${NS}/endpoints`, { metadata: { name: 'ep' }, subsets: [{ addresses: [{ ip: '10.1.2.3' }], ports: [{ port: 80 }] }] });
    expect(ep.json().subsets[0].ports).toEqual([{ port: 80, protocol: 'TCP' }]);
    const slice = await request(s, 'POST', '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices', {
      metadata: { name: 'es' },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.1.2.3'] }],
      ports: [{ port: 80 }],
    });
    expect(slice.status).toBe(201);
    expect(slice.json().ports).toEqual([{ name: '', port: 80, protocol: 'TCP' }]);
    const np = await request(s, 'POST', '/apis/networking.k8s.io/v1/namespaces/default/networkpolicies', {
      metadata: { name: 'np' },
      spec: { podSelector: {}, ingress: [{ ports: [{ port: 80 }] }], egress: [{}] },
    });
    expect(np.status).toBe(201);
    expect(np.json().spec).toMatchObject({ policyTypes: ['Ingress', 'Egress'], ingress: [{ ports: [{ port: 80, protocol: 'TCP' }] }] });
    expect(np.json().metadata.generation).toBe(1);
    const only = await request(s, 'POST', '/apis/networking.k8s.io/v1/namespaces/default/networkpolicies', { metadata: { name: 'np2' }, spec: { podSelector: {} } });
    expect(only.json().spec.policyTypes).toEqual(['Ingress']);
  });
});

describe('validation', () => {
  it('a Deployment without a selector: 422 naming both fields, worded as kube-apiserver', async () => {
    const r = await request(s, 'POST', `${APPS}/deployments`, { metadata: { name: 'bad' }, spec: { template: { metadata: { labels: { app: 'x' } }, spec: podSpec } } });
    expect(r.status).toBe(422);
    const st = r.json();
    expect(st.reason).toBe('Invalid');
    expect(st.message).toBe(
      'Deployment.apps "bad" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: {"app":"x"}: `selector` does not match template `labels`]',
    );
    expect(st.details).toEqual({
      name: 'bad',
      group: 'apps',
      kind: 'Deployment',
      causes: [
        { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.selector' },
        { reason: 'FieldValueInvalid', message: 'Invalid value: {"app":"x"}: `selector` does not match template `labels`', field: 'spec.template.metadata.labels' },
      ],
    });
  });

  it('a selector is immutable after create', async () => {
    const d = (await request(s, 'GET', `${APPS}/deployments/d1`)).json();
    d.spec.selector = { matchLabels: { app: 'other' } };
    d.spec.template.metadata.labels = { app: 'other' };
    const r = await request(s, 'PUT', `${APPS}/deployments/d1`, d);
    expect(r.status).toBe(422);
    expect(r.json().message).toBe('Deployment.apps "d1" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"other"}}: field is immutable');
  });

  it('Pod: containers, names, images, ports, resources, volumes', async () => {
    const r = await request(s, 'POST', `${NS}/pods`, {
      metadata: { name: 'badpod' },
      spec: {
        restartPolicy: 'Sometimes',
        volumes: [{ name: 'v' }, { name: 'v' }],
        initContainers: [{ name: 'a', image: 'x' }],
        containers: [
          { name: 'a', image: 'x', ports: [{ containerPort: 70000, protocol: 'HTTP' }] },
          { name: 'B', resources: { requests: { cpu: '2' }, limits: { cpu: '1' } }, volumeMounts: [{ name: 'nope', mountPath: '/x' }] },
        ],
      },
    });
    expect(r.status).toBe(422);
    const fields = r.json().details.causes.map((c: any) => `${c.field}: ${c.message}`);
    expect(fields).toEqual(
      expect.arrayContaining([
        'spec.volumes[1].name: Duplicate value: "v"',
        'spec.containers[0].name: Duplicate value: "a"',
        'spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive',
        'spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
        expect.stringMatching(/^spec\.containers\[1\]\.name: Invalid value: "B": a lowercase RFC 1123 label/),
        'spec.containers[1].image: Required value',
        'spec.containers[1].volumeMounts[0].name: Not found: "nope"',
        'spec.containers[1].resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1',
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
      ]),
    );
    const names = await request(s, 'POST', `${NS}/pods`, {
      metadata: { name: 'resnames' },
      spec: {
        containers: [
          {
            name: 'a',
            image: 'x',
            resources: { limits: { 'example.com/gpu': '2', 'example.com/fpga': '500m' }, requests: { ACTOKEY: '1', pods: '1', 'example.com/gpu': '1', 'example.com/nic': '1' } },
          },
        ],
      },
    });
    expect(names.status).toBe(422);
    expect(names.json().details.causes.map((c: any) => `${c.field}: ${c.message}`)).toEqual([
      'spec.containers[0].resources.limits[example.com/fpga]: Invalid value: "500m": must be an integer',
      'spec.containers[0].resources.requests[ACTOKEY]: Invalid value: "ACTOKEY": must be a standard resource type or fully qualified',
      'spec.containers[0].resources.requests[ACTOKEY]: Invalid value: "ACTOKEY": must be a standard resource for containers',
      // the pod's limits became its requests too (SetDefaults_Pod)
      'spec.containers[0].resources.requests[example.com/fpga]: Invalid value: "500m": must be an integer',
      'spec.containers[0].resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2',
      'spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources',
      'spec.containers[0].resources.requests[pods]: Invalid value: "pods": must be a standard resource for containers',
    ]);
    const noContainers = await request(s, 'POST', `${NS}/pods`, { metadata: { name: 'empty' }, spec: {} });
    expect(noContainers.json().message).toBe('Pod "empty" is invalid: spec.containers: Required value');
    const badQty = await request(s, 'POST', `${NS}/pods`, { metadata: { name: 'q' }, spec: { containers: [{ name: 'a', image: 'x', resources: { limits: { cpu: 'lots' } } }] } });
    expect(badQty.status).toBe(400);
    expect(badQty.json().message).toBe(
      `Pod in version "v1" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
    );
  });

  it('a Pod spec cannot change except for the allowed fields', async () => {
    const p = (await request(s, 'GET', `${NS}/pods/p2`)).json();
    p.spec.containers[0].image = 'nginx:2';
    expect((await request(s, 'PUT', `${NS}/pods/p2`, p)).status).toBe(200);
    const p2 = (await request(s, 'GET', `${NS}/pods/p2`)).json();
    p2.spec.containers[0].env = [{ name: 'A', value: 'b' }];
    const r = await request(s, 'PUT', `${NS}/pods/p2`, p2);
    expect(r.status).toBe(422);
    expect(r.json().details.causes[0]).toMatchObject({ reason: 'FieldValueForbidden', field: 'spec' });
  });

  it('Service: ports, names, type and ExternalName', async () => {
    const r = await request(s, 'POST', `${NS}/services`, { metadata: { name: 'badsvc' }, spec: { type: 'Weird', ports: [{ port: 80 }, { port: 0, name: 'b' }] } });
    expect(r.status).toBe(422);
    const msgs = r.json().details.causes.map((c: any) => `${c.field}: ${c.message}`);
    expect(msgs).toEqual(
      expect.arrayContaining([
        'spec.ports[0].name: Required value',
        'spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive',
        'spec.type: Unsupported value: "Weird": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"',
      ]),
    );
    const noPorts = await request(s, 'POST', `${NS}/services`, { metadata: { name: 'noports' }, spec: {} });
    expect(noPorts.json().message).toBe('Service "noports" is invalid: spec.ports: Required value');
    const ext = await request(s, 'POST', `${NS}/services`, { metadata: { name: 'ext' }, spec: { type: 'ExternalName' } });
    expect(ext.json().message).toBe('Service "ext" is invalid: spec.externalName: Required value');
    const badName = await request(s, 'POST', `${NS}/services`, { metadata: { name: '1svc' }, spec: { ports: [{ port: 80 }] } });
    expect(badName.json().details.causes[0].message).toMatch(/^Invalid value: "1svc": a DNS-1035 label must consist/);
  });

  it('Job restartPolicy, CronJob schedule and time zone', async () => {
    const job = await request(s, 'POST', `${BATCH}/jobs`, { metadata: { name: 'jbad' }, spec: { template: { spec: podSpec } } });
    expect(job.json().message).toBe('Job.batch "jbad" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"');
    const jt = { spec: { template: { spec: { ...podSpec, restartPolicy: 'Never' } } } };
    const cj = await request(s, 'POST', `${BATCH}/cronjobs`, { metadata: { name: 'cjbad' }, spec: { schedule: '* * * *', jobTemplate: jt } });
    expect(cj.json().message).toBe('CronJob.batch "cjbad" is invalid: spec.schedule: Invalid value: "* * * *": expected exactly 5 fields, found 4: [* * * *]');
    const range = await request(s, 'POST', `${BATCH}/cronjobs`, { metadata: { name: 'cjr' }, spec: { schedule: '0 25 * * *', jobTemplate: jt } });
    expect(range.json().message).toBe('CronJob.batch "cjr" is invalid: spec.schedule: Invalid value: "0 25 * * *": end of range (25) above maximum (23): 25');
    const tz = await request(s, 'POST', `${BATCH}/cronjobs`, { metadata: { name: 'cjtz' }, spec: { schedule: '*/5 * * * 1-5', timeZone: 'Mars/Base', jobTemplate: jt } });
    expect(tz.json().message).toBe('CronJob.batch "cjtz" is invalid: spec.timeZone: Invalid value: "Mars/Base": unknown time zone Mars/Base');
    const ok = await request(s, 'POST', `${BATCH}/cronjobs`, { metadata: { name: 'cjok' }, spec: { schedule: '*/5 * * jan-mar mon-fri', timeZone: 'Europe/Berlin', jobTemplate: jt } });
    expect(ok.status).toBe(201);
  });

  it('ConfigMap and Secret keys, immutability, and typed secrets', async () => {
    const cm = await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'cmbad' }, data: { 'a/b': 'x' } });
    expect(cm.json().message).toBe(
      `ConfigMap "cmbad" is invalid: data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
    );
    const big = await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'big' }, data: { a: 'x'.repeat(1024 * 1024 + 1) } });
    expect(big.status).toBe(422);
    expect(big.json().message).toBe('ConfigMap "big" is invalid: : Too long: may not be more than 1048576 bytes');
    await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'frozen' }, data: { a: '1' }, immutable: true });
    const upd = await request(s, 'PATCH', `${NS}/configmaps/frozen`, { data: { a: '2' } }, { 'content-type': 'application/merge-patch+json' });
    expect(upd.json().message).toBe('ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set');
    const tls = await request(s, 'POST', `${NS}/secrets`, { metadata: { name: 'tls' }, type: 'kubernetes.io/tls', data: {} });
    expect(tls.json().message).toBe('Secret "tls" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]');
    await request(s, 'POST', `${NS}/secrets`, { metadata: { name: 'typed' }, data: {} });
    const retype = await request(s, 'PATCH', `${NS}/secrets/typed`, { type: 'kubernetes.io/basic-auth', data: { username: 'dQ==' } }, { 'content-type': 'application/merge-patch+json' });
    expect(retype.json().message).toBe('Secret "typed" is invalid: type: Invalid value: "kubernetes.io/basic-auth": field is immutable');
    const b64 = await request(s, 'POST', `${NS}/secrets`, { metadata: { name: 'b64' }, data: { a: 'not base64!' } });
    expect(b64.status).toBe(400);
  });

  it('labels, annotations, Lease and Event', async () => {
    const r = await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'lbl', labels: { 'bad key': 'v' } } });
    expect(r.json().details.causes[0]).toEqual({
      reason: 'FieldValueInvalid',
      message:
        `Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
      field: 'metadata.labels',
    });
    const ann = await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'ann', annotations: { a: 'x'.repeat(256 * 1024) } } });
    expect(ann.json().message).toBe('ConfigMap "ann" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes');
    const lease = await request(s, 'POST', `/apis/coordination.k8s.io/v1/namespaces/default/leases`, { metadata: { name: 'l' }, spec: { holderIdentity: 'me', leaseDurationSeconds: 0 } });
    expect(lease.json().message).toBe('Lease.coordination.k8s.io "l" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0');
    const ev = await request(s, 'POST', `${NS}/events`, { metadata: { name: 'e' }, involvedObject: { kind: 'Pod', name: 'p', namespace: 'other' }, reason: 'R' });
    expect(ev.json().message).toBe('Event "e" is invalid: involvedObject.namespace: Invalid value: "other": does not match event.namespace');
    const ev2 = await request(s, 'POST', '/apis/events.k8s.io/v1/namespaces/default/events', {
      metadata: { name: 'e2' },
      eventTime: '2025-01-01T00:00:00.000000Z',
      regarding: { kind: 'Pod', name: 'p', namespace: 'default' },
      type: 'Normal',
    });
    expect(ev2.status).toBe(422);
    expect(ev2.json().details.causes.map((c: any) => c.field)).toEqual([
      'reportingController',
      'reportingController',
      'reportingController',
      'reportingInstance',
      'action',
      'reason',
    ]);
  });
});

describe('kubectl', () => {
  it('create deployment and run show the defaults in get -o yaml; an invalid manifest is refused', async () => {
    expect((await kubectl(s, ['create', 'deployment', 'web', '--image=nginx'])).code).toBe(0);
    const y = await kubectl(s, ['get', 'deployment', 'web', '-o', 'yaml']);
    expect(y.stdout).toContain('progressDeadlineSeconds: 600');
    expect(y.stdout).toContain('maxSurge: 25%');
    expect(y.stdout).toContain('terminationMessagePath: /dev/termination-log');
    expect(y.stdout).toContain('imagePullPolicy: Always');
    expect((await kubectl(s, ['run', 'runpod', '--image=busybox:1.36'])).code).toBe(0);
    const p = await kubectl(s, ['get', 'pod', 'runpod', '-o', 'yaml']);
    expect(p.stdout).toContain('dnsPolicy: ClusterFirst');
    expect(p.stdout).toContain('imagePullPolicy: IfNotPresent');
    expect(p.stdout).toContain('tolerationSeconds: 300');
    expect(p.stdout).toContain('qosClass: BestEffort');
    const bad = await kubectl(s, ['create', '-f', '-'], {
      input: 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nosel\nspec:\n  template:\n    metadata:\n      labels:\n        app: x\n    spec:\n      containers:\n      - name: c\n        image: nginx\n',
    });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('The Deployment "nosel" is invalid');
    expect(bad.stderr).toContain('spec.selector: Required value');
  });
});

describe('kubectl create: generated fields and ownership', () => {
  it('kubectl create job: the job carries the generated labels, so -l job-name= finds it; the creator owns neither them nor the selector', async () => {
    expect((await kubectl(s, ['create', 'job', 'j3', '--image=busybox'])).code).toBe(0);
    const got = await kubectl(s, ['get', 'job', '-l', 'job-name=j3', '-o', 'name']);
    expect(got.stdout.trim()).toBe('job.batch/j3');
    const j = (await request(s, 'GET', '/apis/batch/v1/namespaces/default/jobs/j3')).json();
    expect(Object.keys(j.metadata.labels).sort()).toEqual(['batch.kubernetes.io/controller-uid', 'batch.kubernetes.io/job-name', 'controller-uid', 'job-name']);
    expect(j.metadata.labels['job-name']).toBe('j3');
    const mf = j.metadata.managedFields.find((e: any) => e.manager === 'kubectl-create');
    expect(mf.fieldsV1['f:spec']['f:selector']).toBeUndefined();
    expect(mf.fieldsV1['f:metadata']).toBeUndefined();
    expect(mf.fieldsV1['f:spec']['f:backoffLimit']).toEqual({});
  });

  it('kubectl run owns what it sent and the defaults, not what admission added', async () => {
    expect((await kubectl(s, ['run', 'owned-pod', '--image=busybox:1.36'])).code).toBe(0);
    const p = (await request(s, 'GET', '/api/v1/namespaces/default/pods/owned-pod')).json();
    expect(p.spec.priority).toBe(0);
    expect(p.spec.tolerations).toHaveLength(2);
    const spec = p.metadata.managedFields.find((e: any) => e.manager === 'kubectl-run').fieldsV1['f:spec'];
    for (const k of ['f:priority', 'f:preemptionPolicy', 'f:serviceAccountName', 'f:serviceAccount', 'f:tolerations']) expect(spec[k]).toBeUndefined();
    for (const k of ['f:dnsPolicy', 'f:restartPolicy', 'f:schedulerName', 'f:terminationGracePeriodSeconds', 'f:containers']) expect(spec[k]).toBeDefined();
  });

  it('kubectl create service owns its defaults but not the IP family fields', async () => {
    expect((await kubectl(s, ['create', 'service', 'clusterip', 'owned-svc', '--tcp=80:8080'])).code).toBe(0);
    const v = (await request(s, 'GET', '/api/v1/namespaces/default/services/owned-svc')).json();
    expect(v.spec.ipFamilyPolicy).toBe('SingleStack');
    const spec = v.metadata.managedFields.find((e: any) => e.manager === 'kubectl-create').fieldsV1['f:spec'];
    for (const k of ['f:internalTrafficPolicy', 'f:ports', 'f:selector', 'f:sessionAffinity', 'f:type']) expect(spec[k]).toBeDefined();
    for (const k of ['f:ipFamilyPolicy', 'f:ipFamilies', 'f:clusterIP', 'f:clusterIPs']) expect(spec[k]).toBeUndefined();
  });
});

describe('every write path defaults and validates', () => {
  const causes = (r: any) => r.json().details.causes.map((c: any) => `${c.field}: ${c.message}`);

  it('name rules per kind: Namespace is a DNS-1123 label, Service a DNS-1035 label, ConfigMap a subdomain', async () => {
    const ns = await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'a.b' } });
    expect(ns.status).toBe(422);
    expect(ns.json().message).toMatch(/^Namespace "a\.b" is invalid: metadata\.name: Invalid value: "a\.b": a lowercase RFC 1123 label must consist of/);
    const svc = await request(s, 'POST', `${NS}/services`, { metadata: { name: 'a.b' }, spec: { ports: [{ port: 80 }] } });
    expect(svc.json().details.causes[0].message).toMatch(/^Invalid value: "a\.b": a DNS-1035 label must consist/);
    expect((await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'a.b' } })).status).toBe(201);
    const long = await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'x'.repeat(254) } });
    expect(causes(long)[0]).toContain('must be no more than 253 characters');
    const gen = await request(s, 'POST', `${NS}/configmaps`, { metadata: { generateName: 'Bad-' } });
    expect(gen.status).toBe(422);
    expect(gen.json().details.causes[0]).toMatchObject({ field: 'metadata.generateName', message: expect.stringMatching(/^Invalid value: "Bad-": a lowercase RFC 1123 subdomain/) });
    const okGen = await request(s, 'POST', `${NS}/configmaps`, { metadata: { generateName: 'good-' } });
    expect(okGen.status).toBe(201);
    expect(okGen.json().metadata.name).toMatch(/^good-[a-z0-9]{5}$/);
    const upper = await kubectl(s, ['create', 'namespace', 'Upper']);
    expect(upper.code).not.toBe(0);
    expect(upper.stderr).toContain('The Namespace "Upper" is invalid: metadata.name: Invalid value: "Upper": a lowercase RFC 1123 label');
  });

  it('annotation keys are checked, with case ignored; label values too', async () => {
    const r = await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'ak', annotations: { 'Example.COM/Key': 'v', '/x': 'y' }, labels: { a: '-bad' } } });
    expect(r.status).toBe(422);
    expect(causes(r)).toEqual([
      expect.stringMatching(/^metadata\.labels: Invalid value: "-bad": a valid label must be an empty string or consist of/),
      'metadata.annotations: Invalid value: "/x": prefix part must be non-empty',
    ]);
  });

  it('Service: protocol, duplicate port names and ports, clusterIP syntax; ipFamilies default', async () => {
    const r = await request(s, 'POST', `${NS}/services`, {
      metadata: { name: 'svc2' },
      spec: { clusterIP: '10.0.0.300', ports: [{ name: 'a', port: 80, protocol: 'ICMP' }, { name: 'a', port: 81 }, { name: 'b', port: 81 }] },
    });
    expect(r.status).toBe(422);
    expect(causes(r)).toEqual(
      expect.arrayContaining([
        'spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
        'spec.ports[1].name: Duplicate value: "a"',
        expect.stringMatching(/^spec\.ports\[2\]: Duplicate value: /),
        'spec.clusterIPs[0]: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
      ]),
    );
    const headless = await request(s, 'POST', `${NS}/services`, { metadata: { name: 'headless' }, spec: { clusterIP: 'None', selector: { app: 'x' } } });
    expect(headless.status).toBe(201);
    expect(headless.json().spec).toMatchObject({ clusterIP: 'None', clusterIPs: ['None'], type: 'ClusterIP', ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack' });
    // headless without a selector: the endpoints are the user's, of any family
    const manual = await request(s, 'POST', `${NS}/services`, { metadata: { name: 'manual' }, spec: { clusterIP: 'None', ports: [{ port: 80 }] } });
    expect(manual.json().spec).toMatchObject({ clusterIPs: ['None'], ipFamilies: ['IPv4', 'IPv6'], ipFamilyPolicy: 'RequireDualStack' });
    const np = await request(s, 'POST', `${NS}/services`, { metadata: { name: 'np' }, spec: { type: 'NodePort', clusterIP: 'None', ports: [{ port: 80 }] } });
    expect(causes(np)).toContain("spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services");
  });

  it('ReplicaSet, StatefulSet and DaemonSet: selector required and matching the template', async () => {
    const tmpl = { metadata: { labels: { app: 'x' } }, spec: podSpec };
    for (const [res, kind] of [
      ['replicasets', 'ReplicaSet'],
      ['statefulsets', 'StatefulSet'],
      ['daemonsets', 'DaemonSet'],
    ]) {
      const none = await request(s, 'POST', `${APPS}/${res}`, { metadata: { name: 'nosel' }, spec: { template: tmpl } });
      expect(none.status).toBe(422);
      expect(none.json().details.kind).toBe(kind);
      expect(causes(none)).toContain('spec.selector: Required value');
      const other = await request(s, 'POST', `${APPS}/${res}`, { metadata: { name: 'other' }, spec: { selector: { matchLabels: { app: 'y' } }, template: tmpl } });
      expect(causes(other)).toContain('spec.template.metadata.labels: Invalid value: {"app":"x"}: `selector` does not match template `labels`');
      const bad = await request(s, 'POST', `${APPS}/${res}`, { metadata: { name: 'badexpr' }, spec: { selector: { matchExpressions: [{ key: 'app', operator: 'Near' }] }, template: tmpl } });
      expect(causes(bad)).toContain('spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator');
    }
  });

  it('ReplicationController: selector defaulted from the template, or checked against it', async () => {
    const tmpl = { metadata: { labels: { app: 'rc' } }, spec: podSpec };
    const ok = await request(s, 'POST', `${NS}/replicationcontrollers`, { metadata: { name: 'rc1' }, spec: { template: tmpl } });
    expect(ok.status).toBe(201);
    expect(ok.json().spec).toMatchObject({ replicas: 1, selector: { app: 'rc' } });
    expect(ok.json().metadata.labels).toEqual({ app: 'rc' });
    const bad = await request(s, 'POST', `${NS}/replicationcontrollers`, {
      metadata: { name: 'rc2' },
      spec: { replicas: -1, selector: { app: 'other' }, template: { ...tmpl, spec: { ...podSpec, restartPolicy: 'Never' } } },
    });
    expect(bad.status).toBe(422);
    expect(causes(bad)).toEqual([
      'spec.replicas: Invalid value: -1: must be greater than or equal to 0',
      'spec.template.metadata.labels: Invalid value: {"app":"rc"}: `selector` does not match template `labels`',
      'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]);
  });

  it('CronJob schedules: @macros and 5-field forms pass, bad ones fail as kube words it', async () => {
    const jt = { spec: { template: { spec: { ...podSpec, restartPolicy: 'Never' } } } };
    const post = (name: string, schedule: string, extra: any = {}) =>
      request(s, 'POST', `${BATCH}/cronjobs`, { metadata: { name }, spec: { schedule, jobTemplate: jt, ...extra } });
    let i = 0;
    for (const ok of ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly', '0 0 1 1 *', '*/15 0-6,18-23 ? * SUN', '5 4 * * 6', '@every 1h30m']) {
      const r = await post(`cjok${i++}`, ok);
      expect(r.status, ok).toBe(201);
    }
    expect((await post('cjbad1', '@every soon')).json().message).toBe(
      'CronJob.batch "cjbad1" is invalid: spec.schedule: Invalid value: "@every soon": failed to parse duration @every soon: time: invalid duration "soon"',
    );
    expect((await post('cjbad2', '@sometimes')).json().message).toBe('CronJob.batch "cjbad2" is invalid: spec.schedule: Invalid value: "@sometimes": unrecognized descriptor: @sometimes');
    expect((await post('cjbad3', '60 * * * *')).json().message).toBe('CronJob.batch "cjbad3" is invalid: spec.schedule: Invalid value: "60 * * * *": end of range (60) above maximum (59): 60');
    expect((await post('cjbad6', '5 4 * * 7')).json().message).toBe('CronJob.batch "cjbad6" is invalid: spec.schedule: Invalid value: "5 4 * * 7": end of range (7) above maximum (6): 7');
    expect((await post('cjbad4', '')).json().message).toBe('CronJob.batch "cjbad4" is invalid: spec.schedule: Required value');
    const tzInSchedule = await post('cjbad5', 'TZ=UTC 0 * * * *');
    expect(tzInSchedule.status).toBe(422);
    expect(tzInSchedule.json().details.causes[0].field).toBe('spec.schedule');
    expect((await post('cjutc', '0 * * * *', { timeZone: 'UTC' })).status).toBe(201);
  });

  it('dry run validates and answers with the defaults, storing nothing', async () => {
    const bad = await request(s, 'POST', `${NS}/pods?dryRun=All`, { metadata: { name: 'dry' }, spec: { containers: [{ name: 'a' }] } });
    expect(bad.status).toBe(422);
    expect(bad.json().message).toBe('Pod "dry" is invalid: spec.containers[0].image: Required value');
    const ok = await request(s, 'POST', `${NS}/pods?dryRun=All`, { metadata: { name: 'dry' }, spec: podSpec });
    expect(ok.status).toBe(201);
    expect(ok.json().spec).toMatchObject({ restartPolicy: 'Always', dnsPolicy: 'ClusterFirst' });
    expect((await request(s, 'GET', `${NS}/pods/dry`)).status).toBe(404);
  });

  it('patch and server-side apply are validated; apply defaults a field its manager removed', async () => {
    const patch = await request(s, 'PATCH', `${APPS}/deployments/d1`, { spec: { replicas: -1 } }, { 'content-type': 'application/merge-patch+json' });
    expect(patch.status).toBe(422);
    expect(patch.json().message).toBe('Deployment.apps "d1" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0');
    const applied = (strategy?: any) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'ssa' },
      spec: { selector: { matchLabels: { app: 'ssa' } }, template: { metadata: { labels: { app: 'ssa' } }, spec: podSpec }, ...(strategy ? { strategy } : {}) },
    });
    const apply = (body: any) =>
      request(s, 'PATCH', `${APPS}/deployments/ssa?fieldManager=me`, body, { 'content-type': 'application/apply-patch+yaml' });
    const first = await apply(applied({ type: 'Recreate' }));
    expect(first.status).toBe(201);
    expect(first.json().spec.strategy).toEqual({ type: 'Recreate' });
    const second = await apply(applied());
    expect(second.status).toBe(200);
    expect(second.json().spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } });
    const invalid = await apply({ ...applied(), spec: { ...applied().spec, selector: { matchLabels: { app: 'other' } } } });
    expect(invalid.status).toBe(422);
    expect(causes(invalid)).toContain('spec.selector: Invalid value: {"matchLabels":{"app":"other"}}: field is immutable');
  });
});

describe('kubectl sees kube-apiserver answers', () => {
  it('replace with the sparse manifest it was created from is no spec change (generation stays)', async () => {
    const manifest =
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: sparse\nspec:\n  selector:\n    matchLabels:\n      app: sparse\n  template:\n    metadata:\n      labels:\n        app: sparse\n    spec:\n      containers:\n      - name: c\n        image: nginx\n        ports:\n        - containerPort: 80\n';
    expect((await kubectl(s, ['create', '-f', '-'], { input: manifest })).code).toBe(0);
    const r = await kubectl(s, ['replace', '-f', '-'], { input: manifest });
    expect(r.code, r.stderr).toBe(0);
    const d = (await request(s, 'GET', `${APPS}/deployments/sparse`)).json();
    expect(d.metadata.generation).toBe(1);
    const changed = await kubectl(s, ['replace', '-f', '-'], { input: manifest.replace('image: nginx', 'image: nginx:2') });
    expect(changed.code).toBe(0);
    expect((await request(s, 'GET', `${APPS}/deployments/sparse`)).json().metadata.generation).toBe(2);
  });

  it('create cronjob and service show their defaults; bad ones are refused as kube words it', async () => {
    const bad = await kubectl(s, ['create', 'cronjob', 'cjk', '--image=busybox', '--schedule=61 * * * *']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('CronJob.batch "cjk" is invalid: spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61');
    expect((await kubectl(s, ['create', 'cronjob', 'cjk', '--image=busybox', '--schedule=@daily'])).code).toBe(0);
    const cj = await kubectl(s, ['get', 'cronjob', 'cjk', '-o', 'yaml']);
    expect(cj.stdout).toContain('concurrencyPolicy: Allow');
    expect(cj.stdout).toContain('successfulJobsHistoryLimit: 3');
    expect(cj.stdout).toContain('restartPolicy: OnFailure');
    expect((await kubectl(s, ['create', 'service', 'clusterip', 'websvc', '--tcp=80:8080'])).code).toBe(0);
    const svc = await kubectl(s, ['get', 'service', 'websvc', '-o', 'yaml']);
    for (const line of ['sessionAffinity: None', 'ipFamilyPolicy: SingleStack', 'internalTrafficPolicy: Cluster', 'type: ClusterIP', 'protocol: TCP', 'targetPort: 8080']) {
      expect(svc.stdout).toContain(line);
    }
    const twoPorts = await kubectl(s, ['apply', '-f', '-'], {
      input: 'apiVersion: v1\nkind: Service\nmetadata:\n  name: twoports\nspec:\n  ports:\n  - port: 80\n  - port: 443\n',
    });
    expect(twoPorts.code).not.toBe(0);
    expect(twoPorts.stderr).toContain('The Service "twoports" is invalid: ');
    expect(twoPorts.stderr).toContain('spec.ports[0].name: Required value');
    expect(twoPorts.stderr).toContain('spec.ports[1].name: Required value');
    const cm = await kubectl(s, ['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cmkey\ndata:\n  "a b": x\n' });
    expect(cm.code).not.toBe(0);
    expect(cm.stderr).toContain(`The ConfigMap "cmkey" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters`);
  });

  it('a CronJob update keeps its own rules (the name-length rule is for create only)', async () => {
    const name = 'c'.repeat(52);
    const jt = { spec: { template: { spec: { ...podSpec, restartPolicy: 'Never' } } } };
    expect((await request(s, 'POST', `${BATCH}/cronjobs`, { metadata: { name: name + 'x' }, spec: { schedule: '@daily', jobTemplate: jt } })).json().message).toBe(
      `CronJob.batch "${name}x" is invalid: metadata.name: Invalid value: "${name}x": must be no more than 52 characters`,
    );
    expect((await request(s, 'POST', `${BATCH}/cronjobs`, { metadata: { name }, spec: { schedule: '@daily', jobTemplate: jt } })).status).toBe(201);
    const upd = await request(s, 'PATCH', `${BATCH}/cronjobs/${name}`, { spec: { suspend: true } }, { 'content-type': 'application/merge-patch+json' });
    expect(upd.status).toBe(200);
    const tz = await request(s, 'PATCH', `${BATCH}/cronjobs/${name}`, { spec: { schedule: 'TZ=UTC @daily' } }, { 'content-type': 'application/merge-patch+json' });
    expect(tz.json().message).toBe(
      `CronJob.batch "${name}" is invalid: spec.schedule: Invalid value: "TZ=UTC @daily": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`,
    );
  });
});
