// Issue #4, the kinds past the common ones, against a started server: kube-apiserver 1.33's
// validation (422 Invalid, one cause per field, worded and pathed as kube's
// pkg/apis/*/validation) of tolerations, PVCs and PVs, PodDisruptionBudgets, Ingresses and
// IngressClasses, HPAs (v1 and v2), NetworkPolicies, StorageClasses and PriorityClasses.
import { describe, it, expect } from 'vitest';
import { request, type TestServer, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;
const NS = '/api/v1/namespaces/default';
const NET = '/apis/networking.k8s.io/v1';
const MERGE = { 'Content-Type': 'application/merge-patch+json' };

useServer((started) => (s = started));

const causes = (r: any) => r.json().details.causes.map((c: any) => `${c.field}: ${c.message}`);
const podSpec = (extra: object = {}) => ({ containers: [{ name: 'c', image: 'nginx' }], ...extra });

describe('Pod tolerations', () => {
  it('operator, value, effect and tolerationSeconds rules, in a Pod and a template', async () => {
    const r = await request(s, 'POST', `${NS}/pods`, {
      metadata: { name: 'tol' },
      spec: podSpec({
        tolerations: [
          { key: 'k', operator: 'Exists', value: 'v' },
          { key: 'k', operator: 'In', effect: 'Sometimes' },
          { key: 'k', value: 'v', effect: 'NoSchedule', tolerationSeconds: 5 },
          { operator: 'Equal', value: 'v' },
          { key: 'bad key', operator: 'Exists' },
          { key: 'k', value: 'not valid!' },
        ],
      }),
    });
    expect(r.status).toBe(422);
    expect(causes(r)).toEqual([
      'spec.tolerations[0].operator: Invalid value: {"Key":"k","Operator":"Exists","Value":"v","Effect":"","TolerationSeconds":null}: value must be empty when `operator` is \'Exists\'',
      'spec.tolerations[1].operator: Unsupported value: "In": supported values: "Equal", "Exists"',
      'spec.tolerations[1].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
      'spec.tolerations[2].effect: Invalid value: "NoSchedule": effect must be \'NoExecute\' when `tolerationSeconds` is set',
      'spec.tolerations[3].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"',
      "spec.tolerations[4].key: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
      "spec.tolerations[5].operator: Invalid value: \"not valid!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]);
    const d = await request(s, 'POST', '/apis/apps/v1/namespaces/default/deployments', {
      metadata: { name: 'toldep' },
      spec: {
        selector: { matchLabels: { a: 'b' } },
        template: { metadata: { labels: { a: 'b' } }, spec: podSpec({ tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 1 }] }) },
      },
    });
    expect(d.status).toBe(422);
    expect(causes(d)).toEqual(['spec.template.spec.tolerations[0].effect: Invalid value: "NoSchedule": effect must be \'NoExecute\' when `tolerationSeconds` is set']);
    const ok = await request(s, 'POST', `${NS}/pods`, {
      metadata: { name: 'tolok' },
      spec: podSpec({ tolerations: [{ operator: 'Exists' }, { key: 'k', operator: 'Equal', value: 'v', effect: 'NoExecute', tolerationSeconds: 10 }] }),
    });
    expect(ok.status).toBe(201);
  });

  it('an update may add tolerations and change tolerationSeconds, not drop or modify one', async () => {
    const pod = (await request(s, 'GET', `${NS}/pods/tolok`)).json();
    const tols = pod.spec.tolerations;
    const drop = await request(s, 'PATCH', `${NS}/pods/tolok`, { spec: { tolerations: tols.slice(1) } }, MERGE);
    expect(drop.status).toBe(422);
    expect(drop.json().message).toBe('Pod "tolok" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds');
    const seconds = tols.map((t: any) => (t.tolerationSeconds ? { ...t, tolerationSeconds: 1 } : t));
    const add = await request(s, 'PATCH', `${NS}/pods/tolok`, { spec: { tolerations: [...seconds, { key: 'extra', operator: 'Exists' }] } }, MERGE);
    expect(add.status).toBe(200);
    expect(add.json().spec.tolerations).toHaveLength(tols.length + 1);
  });
});

describe('PersistentVolumeClaim', () => {
  const pvcs = `${NS}/persistentvolumeclaims`;

  it('access modes and a positive storage request are required', async () => {
    const empty = await request(s, 'POST', pvcs, { metadata: { name: 'c0' }, spec: {} });
    expect(empty.status).toBe(422);
    expect(empty.json().message).toBe(
      'PersistentVolumeClaim "c0" is invalid: [spec.accessModes: Required value: at least 1 access mode is required, spec.resources[storage]: Required value]',
    );
    const bad = await request(s, 'POST', pvcs, {
      metadata: { name: 'c0' },
      spec: { accessModes: ['ReadWriteSometimes', 'ReadWriteOncePod', 'ReadWriteOnce'], resources: { requests: { storage: '0' } }, volumeMode: 'Raw', storageClassName: 'Fast_Disk' },
    });
    expect(bad.status).toBe(422);
    expect(causes(bad)).toEqual([
      'spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
      'spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes',
      'spec.resources[storage]: Invalid value: "0": must be greater than zero',
      "spec.storageClassName: Invalid value: \"Fast_Disk\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      'spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"',
    ]);
  });

  it('an ephemeral volume\'s claim template is checked as a claim', async () => {
    const r = await request(s, 'POST', `${NS}/pods`, {
      metadata: { name: 'eph' },
      spec: podSpec({ volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { resources: { requests: { storage: '1Gi' } } } } } }] }),
    });
    expect(r.status).toBe(422);
    expect(causes(r)).toEqual(['spec.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes: Required value: at least 1 access mode is required']);
  });

  it('the spec is immutable except the storage request of a bound claim, which may not shrink to its capacity', async () => {
    const c = await request(s, 'POST', pvcs, { metadata: { name: 'c1' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } });
    expect(c.status).toBe(201);
    const modes = await request(s, 'PATCH', `${pvcs}/c1`, { spec: { accessModes: ['ReadWriteMany'] } }, MERGE);
    expect(modes.status).toBe(422);
    expect(modes.json().details.causes).toHaveLength(1);
    expect(modes.json().details.causes[0].field).toBe('spec');
    expect(modes.json().details.causes[0].reason).toBe('FieldValueForbidden');
    expect(modes.json().details.causes[0].message).toMatch(
      /^Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n/,
    );
    // Pending: even the request is fixed.
    expect((await request(s, 'PATCH', `${pvcs}/c1`, { spec: { resources: { requests: { storage: '2Gi' } } } }, MERGE)).status).toBe(422);
    expect((await request(s, 'PATCH', `${pvcs}/c1/status`, { status: { phase: 'Bound', capacity: { storage: '1Gi' } } }, MERGE)).status).toBe(200);
    const grow = await request(s, 'PATCH', `${pvcs}/c1`, { spec: { resources: { requests: { storage: '2Gi' } } } }, MERGE);
    expect(grow.status).toBe(200);
    expect(grow.json().spec.resources.requests.storage).toBe('2Gi');
    const shrink = await request(s, 'PATCH', `${pvcs}/c1`, { spec: { resources: { requests: { storage: '1Gi' } } } }, MERGE);
    expect(shrink.status).toBe(422);
    expect(shrink.json().message).toBe('PersistentVolumeClaim "c1" is invalid: spec.resources.requests.storage: Forbidden: field can not be less than status.capacity');
    // The binder sets the volume name once; a claim without a class may get one.
    const bind = await request(s, 'PATCH', `${pvcs}/c1`, { spec: { volumeName: 'pv-1', storageClassName: 'standard' } }, MERGE);
    expect(bind.status).toBe(200);
    const mode = await request(s, 'PATCH', `${pvcs}/c1`, { spec: { volumeMode: 'Block' } }, MERGE);
    expect(mode.status).toBe(422);
    expect(causes(mode)[1]).toBe('volumeMode: Invalid value: "Block": field is immutable');
  });
});

describe('PersistentVolume', () => {
  it('capacity, access modes, one volume source, reclaim policy', async () => {
    const empty = await request(s, 'POST', '/api/v1/persistentvolumes', { metadata: { name: 'pv0' }, spec: {} });
    expect(empty.status).toBe(422);
    expect(causes(empty)).toEqual([
      'spec.accessModes: Required value',
      'spec.capacity: Required value',
      'spec.capacity: Unsupported value: null: supported values: "storage"',
      'spec: Required value: must specify a volume type',
    ]);
    const bad = await request(s, 'POST', '/api/v1/persistentvolumes', {
      metadata: { name: 'pv0' },
      spec: {
        capacity: { storage: '0' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Keep',
        hostPath: { path: '/data' },
        nfs: { server: 'nfs', path: '/export' },
      },
    });
    expect(bad.status).toBe(422);
    expect(causes(bad)).toEqual([
      'spec.capacity[storage]: Invalid value: "0": must be greater than zero',
      'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"',
      'spec.nfs: Forbidden: may not specify more than 1 volume type',
    ]);
    const local = await request(s, 'POST', '/api/v1/persistentvolumes', {
      metadata: { name: 'pv0' },
      spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], local: { path: '/mnt/disk' } },
    });
    expect(local.json().message).toBe('PersistentVolume "pv0" is invalid: spec.nodeAffinity: Required value: Local volume requires node affinity');
    const ok = await request(s, 'POST', '/api/v1/persistentvolumes', {
      metadata: { name: 'pv1' },
      spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/data' } },
    });
    expect(ok.status).toBe(201);
    const move = await request(s, 'PATCH', '/api/v1/persistentvolumes/pv1', { spec: { hostPath: { path: '/other' } } }, MERGE);
    expect(move.status).toBe(422);
    expect(causes(move)[0]).toMatch(/^spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n/);
    const grow = await request(s, 'PATCH', '/api/v1/persistentvolumes/pv1', { spec: { capacity: { storage: '2Gi' } } }, MERGE);
    expect(grow.status).toBe(200);
  });
});

describe('PodDisruptionBudget', () => {
  const pdbs = '/apis/policy/v1/namespaces/default/poddisruptionbudgets';
  it('minAvailable and maxUnavailable exclusive, int-or-percent, selector', async () => {
    const both = await request(s, 'POST', pdbs, { metadata: { name: 'b' }, spec: { minAvailable: 1, maxUnavailable: '150%', selector: { matchLabels: { app: 'a' } } } });
    expect(both.status).toBe(422);
    expect(both.json().message).toBe(
      'PodDisruptionBudget.policy "b" is invalid: [spec: Invalid value: {"MinAvailable":1,"Selector":{"matchLabels":{"app":"a"}},"MaxUnavailable":"150%","UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set, spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%]',
    );
    const bad = await request(s, 'POST', pdbs, {
      metadata: { name: 'b' },
      spec: { minAvailable: -1, selector: { matchExpressions: [{ key: 'app', operator: 'In' }] }, unhealthyPodEvictionPolicy: 'Never' },
    });
    expect(causes(bad)).toEqual([
      'spec.minAvailable: Invalid value: -1: must be greater than or equal to 0',
      "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
      'spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"',
    ]);
    const pct = await request(s, 'POST', pdbs, { metadata: { name: 'b' }, spec: { maxUnavailable: 'half' } });
    expect(causes(pct)).toEqual([
      "spec.maxUnavailable: Invalid value: \"half\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
    ]);
    expect((await request(s, 'POST', pdbs, { metadata: { name: 'ok' }, spec: { minAvailable: '50%', selector: { matchLabels: { app: 'a' } } } })).status).toBe(201);
  });
});

describe('Ingress and IngressClass', () => {
  const ings = `${NET}/namespaces/default/ingresses`;
  it('rules or a default backend; hosts; paths; backends', async () => {
    const none = await request(s, 'POST', ings, { metadata: { name: 'i' }, spec: {} });
    expect(none.json().message).toBe('Ingress.networking.k8s.io "i" is invalid: spec: Invalid value: null: either `defaultBackend` or `rules` must be specified');
    const bad = await request(s, 'POST', ings, {
      metadata: { name: 'i' },
      spec: {
        defaultBackend: { service: { name: 'web', port: { name: 'http', number: 80 } } },
        rules: [
          {
            host: 'foo.*.example.com',
            http: {
              paths: [
                { path: 'api', pathType: 'Prefix', backend: { service: { name: 'web' } } },
                { path: '/x', backend: { service: { name: 'web', port: { number: 80 } } } },
                { path: '/a//b', pathType: 'Exact', backend: { service: { name: 'Web', port: { number: 70000 } } } },
                { path: '/', pathType: 'Regex', backend: {} },
                { path: 'rel', pathType: 'ImplementationSpecific', backend: { resource: { kind: 'Bucket' }, service: { name: 'web' } } },
              ],
            },
          },
          { host: '10.0.0.1', http: { paths: [] } },
        ],
      },
    });
    expect(bad.status).toBe(422);
    const wildcard =
      "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    expect(causes(bad)).toEqual([
      'spec.defaultBackend: Invalid value: "": cannot set both port name & port number',
      `spec.rules[0].host: Invalid value: "foo.*.example.com": ${wildcard}`,
      'spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path',
      'spec.rules[0].http.paths[0].backend: Required value: port name or number is required',
      'spec.rules[0].http.paths[1].pathType: Required value: pathType must be specified',
      "spec.rules[0].http.paths[2].path: Invalid value: \"/a//b\": must not contain '//'",
      "spec.rules[0].http.paths[2].backend.service.name: Invalid value: \"Web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
      'spec.rules[0].http.paths[2].backend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive',
      'spec.rules[0].http.paths[3].pathType: Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix"',
      'spec.rules[0].http.paths[3].backend: Invalid value: "": resource or service backend is required',
      'spec.rules[0].http.paths[4].path: Invalid value: "rel": must be an absolute path',
      'spec.rules[0].http.paths[4].backend: Invalid value: "": cannot set both resource and service backends',
      'spec.rules[1].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address',
      'spec.rules[1].http.paths: Required value',
    ]);
    const ok = await request(s, 'POST', ings, {
      metadata: { name: 'ok' },
      spec: {
        rules: [{ host: '*.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { name: 'http' } } } }] } }],
        tls: [{ hosts: ['*.example.com'], secretName: 'tls' }],
      },
    });
    expect(ok.status).toBe(201);
    const cls = await request(s, 'POST', ings, {
      metadata: { name: 'cls', annotations: { 'kubernetes.io/ingress.class': 'nginx' } },
      spec: { ingressClassName: 'traefik', defaultBackend: { service: { name: 'web', port: { number: 80 } } } },
    });
    expect(cls.json().message).toBe(
      'Ingress.networking.k8s.io "cls" is invalid: annotations.kubernetes.io/ingress.class: Invalid value: "nginx": must match `ingressClassName` when both are specified',
    );
  });

  it('kubectl create ingress with a bad rule gets kube\'s error', async () => {
    const r = await kubectl(s, ['create', 'ingress', 'kc', '--rule=1.2.3.4/path=svc:80']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('spec.rules[0].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address');
  });

  it('IngressClass: a domain-prefixed controller that never changes; parameter scopes', async () => {
    const bad = await request(s, 'POST', `${NET}/ingressclasses`, {
      metadata: { name: 'ic' },
      spec: { controller: 'nginx', parameters: { kind: 'Params', name: 'p', scope: 'Namespace' } },
    });
    expect(causes(bad)).toEqual([
      'spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")',
      "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'",
    ]);
    const ok = await request(s, 'POST', `${NET}/ingressclasses`, { metadata: { name: 'ic' }, spec: { controller: 'k8s.io/ingress-nginx', parameters: { kind: 'Params', name: 'p' } } });
    expect(ok.status).toBe(201);
    expect(ok.json().spec.parameters.scope).toBe('Cluster');
    const change = await request(s, 'PATCH', `${NET}/ingressclasses/ic`, { spec: { controller: 'example.com/other' } }, MERGE);
    expect(change.json().message).toBe('IngressClass.networking.k8s.io "ic" is invalid: spec.controller: Invalid value: "example.com/other": field is immutable');
  });
});

describe('HorizontalPodAutoscaler', () => {
  const v2 = '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers';
  const v1 = '/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers';
  const ref = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' };

  it('replica bounds, target reference, metrics and behavior (v2)', async () => {
    const r = await request(s, 'POST', v2, {
      metadata: { name: 'h' },
      spec: {
        minReplicas: 0,
        maxReplicas: 0,
        scaleTargetRef: { name: 'a/b' },
        metrics: [
          { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 0 } } },
          // Only one source given (not the one named): kube asks for the named one and checks the given one.
          { type: 'Pods', resource: { name: 'memory', target: { type: 'AverageValue', averageValue: '1Gi' } } },
          { type: 'External', external: { metric: { name: 'queue' }, target: { type: 'Value', value: '-1' } } },
        ],
        behavior: { scaleUp: { policies: [] }, scaleDown: { stabilizationWindowSeconds: 4000, selectPolicy: 'Avg', policies: [{ type: 'Nodes', value: 0, periodSeconds: 0 }] } },
      },
    });
    expect(r.status).toBe(422);
    expect(causes(r)).toEqual([
      'spec.minReplicas: Invalid value: 0: must be greater than or equal to 1',
      'spec.maxReplicas: Invalid value: 0: must be greater than 0',
      'spec.scaleTargetRef.kind: Required value',
      "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
      'spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0',
      'spec.metrics[1].pods: Required value: must populate information for the given metric source',
      'spec.metrics[2].external.target.value: Invalid value: "-1": must be positive',
      'spec.behavior.scaleUp.policies: Required value: must specify at least one Policy',
      'spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600',
      'spec.behavior.scaleDown.selectPolicy: Unsupported value: "Avg": supported values: "Disabled", "Max", "Min"',
      'spec.behavior.scaleDown.policies[0].type: Unsupported value: "Nodes": supported values: "Percent", "Pods"',
      'spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero',
      'spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 0: must be greater than zero',
    ]);
    const minmax = await request(s, 'POST', v2, { metadata: { name: 'h' }, spec: { minReplicas: 5, maxReplicas: 2, scaleTargetRef: ref } });
    expect(minmax.json().message).toBe('HorizontalPodAutoscaler.autoscaling "h" is invalid: spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`');
    const ok = await request(s, 'POST', v2, {
      metadata: { name: 'ok' },
      spec: { minReplicas: 1, maxReplicas: 5, scaleTargetRef: ref, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }] },
    });
    expect(ok.status).toBe(201);
  });

  it('an autoscaling/v1 CPU target is judged as the metric it converts to', async () => {
    const r = await request(s, 'POST', v1, { metadata: { name: 'h1' }, spec: { maxReplicas: 3, scaleTargetRef: ref, targetCPUUtilizationPercentage: 0 } });
    expect(r.status).toBe(422);
    expect(r.json().message).toBe(
      'HorizontalPodAutoscaler.autoscaling "h1" is invalid: spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0',
    );
    const noMax = await request(s, 'POST', v1, { metadata: { name: 'h1' }, spec: { scaleTargetRef: ref } });
    // minReplicas defaults to 1 before validation (SetDefaults_HorizontalPodAutoscaler), so both rules speak
    expect(causes(noMax)).toEqual(['spec.maxReplicas: Invalid value: 0: must be greater than 0', 'spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`']);
  });

  it('kubectl create of an HPA whose max is below its min gets kube\'s error', async () => {
    const r = await kubectl(s, ['create', '-f', '-'], {
      input:
        'apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: kc\nspec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: web\n  minReplicas: 5\n  maxReplicas: 2\n',
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('The HorizontalPodAutoscaler "kc" is invalid: spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`');
  });
});

describe('NetworkPolicy', () => {
  const nps = `${NET}/namespaces/default/networkpolicies`;
  it('ports, peers, ipBlocks and policy types', async () => {
    const r = await request(s, 'POST', nps, {
      metadata: { name: 'np' },
      spec: {
        podSelector: {},
        policyTypes: ['Ingress', 'Sideways'],
        ingress: [
          {
            ports: [{ protocol: 'ICMP', port: 8080, endPort: 8000 }, { port: 'web', endPort: 90 }, { endPort: 5 }, { port: 0 }],
            from: [{}, { ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16', '192.168.0.0/16', '10.0.0.0/8', '10.0.0.0/33'] } }, { ipBlock: { cidr: '10.0.0.0/8' }, podSelector: {} }],
          },
        ],
        egress: [{ to: [{ ipBlock: { cidr: '300.0.0.0/8' } }] }],
      },
    });
    expect(r.status).toBe(422);
    expect(causes(r)).toEqual([
      'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"',
      'spec.ingress[0].ports[0].endPort: Invalid value: 8080: must be greater than or equal to `port`',
      'spec.ingress[0].ports[1].endPort: Invalid value: 90: may not be specified when `port` is non-numeric',
      'spec.ingress[0].ports[2].endPort: Invalid value: 5: may not be specified when `port` is not specified',
      'spec.ingress[0].ports[3].port: Invalid value: 0: must be between 1 and 65535, inclusive',
      'spec.ingress[0].from[0]: Required value: must specify a peer',
      'spec.ingress[0].from[1].ipBlock.except[1]: Invalid value: "192.168.0.0/16": must be a strict subset of `cidr`',
      'spec.ingress[0].from[1].ipBlock.except[2]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`',
      'spec.ingress[0].from[1].ipBlock.except[3]: Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)',
      'spec.ingress[0].from[2]: Forbidden: may not specify both ipBlock and another peer',
      'spec.egress[0].to[0].ipBlock.cidr: Invalid value: "300.0.0.0/8": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)',
      'spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"',
    ]);
    const noCidr = await request(s, 'POST', nps, { metadata: { name: 'np' }, spec: { podSelector: {}, egress: [{ to: [{ ipBlock: {} }] }] } });
    expect(causes(noCidr)).toEqual(['spec.egress[0].to[0].ipBlock.cidr: Required value']);
    // podSelector is a plain struct in kube: an absent one is the empty selector.
    const bare = await request(s, 'POST', nps, { metadata: { name: 'bare' }, spec: {} });
    expect(bare.status).toBe(201);
    expect(bare.json().spec).toEqual({ podSelector: {}, policyTypes: ['Ingress'] });
  });
});

describe('StorageClass and PriorityClass', () => {
  it('StorageClass: provisioner, reclaim policy, binding mode; defaults; immutable fields', async () => {
    const bad = await request(s, 'POST', '/apis/storage.k8s.io/v1/storageclasses', { metadata: { name: 'sc' }, reclaimPolicy: 'Recycle', volumeBindingMode: 'Later' });
    expect(bad.json().message).toBe(
      'StorageClass.storage.k8s.io "sc" is invalid: [provisioner: Required value, reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain", volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"]',
    );
    const ok = await request(s, 'POST', '/apis/storage.k8s.io/v1/storageclasses', { metadata: { name: 'sc' }, provisioner: 'example.com/disk', parameters: { type: 'ssd' } });
    expect(ok.status).toBe(201);
    expect(ok.json()).toMatchObject({ reclaimPolicy: 'Delete', volumeBindingMode: 'Immediate' });
    expect(ok.json().metadata.generation).toBeUndefined();
    const change = await request(s, 'PATCH', '/apis/storage.k8s.io/v1/storageclasses/sc', { parameters: { type: 'hdd' }, reclaimPolicy: 'Retain' }, MERGE);
    expect(causes(change)).toEqual(['parameters: Forbidden: updates to parameters are forbidden.', 'reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.']);
  });

  it('PriorityClass: value range, system names, preemption policy, immutable value', async () => {
    const pcs = '/apis/scheduling.k8s.io/v1/priorityclasses';
    const sys = await request(s, 'POST', pcs, { metadata: { name: 'system-mine' }, value: 10 });
    expect(sys.json().message).toBe(
      "PriorityClass.scheduling.k8s.io \"system-mine\" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
    );
    const high = await request(s, 'POST', pcs, { metadata: { name: 'high' }, value: 1000000001, preemptionPolicy: 'Always' });
    expect(causes(high)).toEqual([
      'value: Forbidden: maximum allowed value of a user defined priority is 1000000000',
      'preemptionPolicy: Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"',
    ]);
    const ok = await request(s, 'POST', pcs, { metadata: { name: 'high' }, value: 1000 });
    expect(ok.status).toBe(201);
    expect(ok.json().preemptionPolicy).toBe('PreemptLowerPriority');
    const change = await request(s, 'PATCH', `${pcs}/high`, { value: 2000 }, MERGE);
    expect(change.json().message).toBe('PriorityClass.scheduling.k8s.io "high" is invalid: value: Forbidden: may not be changed in an update.');
  });
});
