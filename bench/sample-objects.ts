// Objects as the server stores them (kind, apiVersion, metadata in ObjectMeta order, the
// fields admission and the strategies add), for the micro-benchmarks that encode, carry or
// convert them without a server: msgpackr-vs-clone.ts and piscina-offload.ts.

const TIME = '2026-11-26T05:00:00Z';

function meta(name: string, namespace: string, i: number, labels?: Record<string, string>, fields: Record<string, unknown> = { 'f:data': { '.': {}, 'f:v': {} } }) {
  const m: Record<string, unknown> = {
    name,
    namespace,
    uid: `0b7e7b8a-3c1d-4d3e-9f7a-${String(i).padStart(12, '0')}`,
    resourceVersion: String(1000 + i),
    creationTimestamp: TIME,
  };
  if (labels) m.labels = labels;
  m.managedFields = [{ manager: 'kubectl-client-side-apply', operation: 'Update', apiVersion: 'v1', time: TIME, fieldsType: 'FieldsV1', fieldsV1: fields }];
  return m;
}

/**
 * A ConfigMap of about `bytes` of JSON. `spread`: its data in 20 keys and a few labels (more
 * structure per byte); otherwise one value, as the bench's create scenario writes.
 */
export function configMap(i: number, bytes = 1024, spread = false): Record<string, any> {
  const name = `cm-${i}`;
  if (!spread) {
    const base = { kind: 'ConfigMap', apiVersion: 'v1', metadata: meta(name, 'bench', i), data: { v: '' } };
    base.data.v = 'x'.repeat(Math.max(0, bytes - JSON.stringify(base).length));
    return base;
  }
  const labels = { app: 'bench', tier: 'backend', idx: String(i % 100) };
  const data: Record<string, string> = {};
  for (let k = 0; k < 20; k++) data[`key-${k}`] = '';
  const fields = { 'f:data': Object.fromEntries([['.', {}], ...Object.keys(data).slice(0, 4).map((k) => [`f:${k}`, {}])]) };
  const base = { kind: 'ConfigMap', apiVersion: 'v1', metadata: meta(name, 'bench', i, labels, fields), data };
  const per = Math.max(1, Math.floor((bytes - JSON.stringify(base).length) / 20));
  for (let k = 0; k < 20; k++) data[`key-${k}`] = String.fromCharCode(97 + (k % 26)).repeat(per);
  return base;
}

/** A Pod of about 2 KiB as stored: the bench's list scenario's pod with the defaults and a scheduled, running status. */
export function pod(i: number): Record<string, any> {
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: meta(`pod-${i}`, 'bench-pods', i, { app: 'bench', idx: String(i % 100) }, { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {}, 'f:idx': {} } }, 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:image': {}, 'f:name': {} } } } }),
    spec: {
      volumes: [{ name: 'kube-api-access-abcde', projected: { sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }, { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } }], defaultMode: 420 } }],
      containers: [
        {
          name: 'c',
          image: 'registry.example/app:1.0',
          command: ['/bin/app', '--flag=1'],
          env: Array.from({ length: 8 }, (_, j) => ({ name: `E${j}`, value: 'v'.repeat(40) })),
          resources: { requests: { cpu: '100m', memory: '64Mi' } },
          volumeMounts: [{ name: 'kube-api-access-abcde', readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }],
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      serviceAccountName: 'default',
      serviceAccount: 'default',
      nodeName: `node-${i % 50}`,
      securityContext: {},
      schedulerName: 'default-scheduler',
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
    },
    status: {
      phase: 'Running',
      conditions: [
        { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: TIME },
        { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: TIME },
      ],
      hostIP: '10.0.0.1',
      podIP: `10.1.${(i >> 8) & 255}.${i & 255}`,
      startTime: TIME,
      containerStatuses: [{ name: 'c', state: { running: { startedAt: TIME } }, ready: true, restartCount: 0, image: 'registry.example/app:1.0', imageID: 'registry.example/app@sha256:0123', containerID: 'containerd://0123', started: true }],
      qosClass: 'Burstable',
    },
  };
}
