// The Table representation (spec 2.5) with real kubectl 1.33: `get` prints kube-apiserver's
// columns, `-o wide` the wide ones, `-w` reads Table watch events; and the raw Table JSON
// (includeObject, v1beta1, watch events with and without column definitions).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import https from 'node:https';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectlOk, kubectlPath, kubectlStream } from './helpers/kubectl.js';

const NS = 'tbl';
const TABLE = 'application/json;as=Table;g=meta.k8s.io;v=v1';
const MANIFEST = `apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: ${NS}, labels: {app: web}}
spec:
  containers:
  - {name: nginx, image: nginx:1.27}
  - {name: log, image: busybox}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ${NS}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx:1.27}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ${NS}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: edge, namespace: ${NS}}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: https, port: 443, nodePort: 30001}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: ${NS}}
data: {a: "1", b: "2"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: extra, namespace: ${NS}}
binaryData: {blob: AAEC}
`;

let s: TestServer;
const k = (args: string[], input?: string) => kubectlOk(s, args, input);
const lines = (out: string) => out.trimEnd().split('\n');
const cols = (line: string) => line.trim().split(/\s{2,}/);

beforeAll(async () => {
  kubectlPath();
  // its quota is there to be printed; no workload controllers: the rows show the objects as created
  s = await startServer({ args: ['--disable-admission-plugins=ResourceQuota', '--controllers=*,-replicaset-controller,-deployment-controller'] });
  await k(['create', 'ns', NS]);
  await k(['apply', '-f', '-'], MANIFEST);
});
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

describe('kubectl get prints kube-apiserver\'s columns', () => {
  it('get pods, and get pods -o wide', async () => {
    const plain = lines(await k(['get', 'pods', '-n', NS]));
    expect(cols(plain[0])).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
    expect(cols(plain[1]).slice(0, 4)).toEqual(['web-0', '0/2', 'Pending', '0']);
    expect(cols(plain[1])[4]).toMatch(/^\d+s$/);

    const wide = lines(await k(['get', 'pods', '-n', NS, '-o', 'wide']));
    expect(cols(wide[0])).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES']);
    const row = cols(wide[1]);
    expect([...row.slice(0, 4), ...row.slice(5)]).toEqual(['web-0', '0/2', 'Pending', '0', '<none>', '<none>', '<none>', '<none>']);
  });

  it('get deploy,svc,cm', async () => {
    const out = await k(['get', 'deploy,svc,cm', '-n', NS]);
    const blocks = out.trimEnd().split('\n\n').map(lines);
    expect(blocks).toHaveLength(3);
    const [deploy, svc, cm] = blocks;
    expect(cols(deploy[0])).toEqual(['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE']);
    expect(cols(deploy[1]).slice(0, 4)).toEqual(['deployment.apps/web', '0/3', '0', '0']);

    expect(cols(svc[0])).toEqual(['NAME', 'TYPE', 'CLUSTER-IP', 'EXTERNAL-IP', 'PORT(S)', 'AGE']);
    const edge = cols(svc.find((l) => l.startsWith('service/edge'))!);
    expect(edge[1]).toBe('NodePort');
    expect(edge[2]).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(edge.slice(3, 5)).toEqual(['<none>', '443:30001/TCP']);
    const web = cols(svc.find((l) => l.startsWith('service/web'))!);
    expect([web[1], web[3], web[4]]).toEqual(['ClusterIP', '<none>', '80/TCP']);

    expect(cols(cm[0])).toEqual(['NAME', 'DATA', 'AGE']);
    expect(cols(cm.find((l) => l.startsWith('configmap/settings'))!).slice(0, 2)).toEqual(['configmap/settings', '2']);
    expect(cols(cm.find((l) => l.startsWith('configmap/extra'))!).slice(0, 2)).toEqual(['configmap/extra', '1']);
  });

  it('wide columns of deployments and services', async () => {
    const d = lines(await k(['get', 'deploy', 'web', '-n', NS, '-o', 'wide']));
    expect(cols(d[0])).toEqual(['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE', 'CONTAINERS', 'IMAGES', 'SELECTOR']);
    expect(cols(d[1]).slice(5)).toEqual(['nginx', 'nginx:1.27', 'app=web']);
    const sv = lines(await k(['get', 'svc', 'web', '-n', NS, '-o', 'wide']));
    expect(cols(sv[0]).at(-1)).toBe('SELECTOR');
    expect(cols(sv[1]).at(-1)).toBe('app=web');
  });

  it('the other common kinds: namespaces, secrets, serviceaccounts, jobs, cronjobs, leases, replicasets, statefulsets, daemonsets, endpoints', async () => {
    const tpl = (app: string) => `selector: {matchLabels: {app: ${app}}}\n  template:\n    metadata: {labels: {app: ${app}}}\n    spec: {containers: [{name: c, image: nginx:1.27}]}`;
    const more = [
      `apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: ${NS}}\nstringData: {user: a, pass: b}`,
      `apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: robot, namespace: ${NS}}`,
      `apiVersion: batch/v1\nkind: Job\nmetadata: {name: once, namespace: ${NS}}\nspec:\n  template:\n    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}`,
      `apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: tick, namespace: ${NS}}\nspec:\n  schedule: "*/5 * * * *"\n  jobTemplate:\n    spec:\n      template:\n        spec: {restartPolicy: OnFailure, containers: [{name: c, image: busybox}]}`,
      `apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: lock, namespace: ${NS}}\nspec: {holderIdentity: me, leaseDurationSeconds: 15}`,
      `apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, namespace: ${NS}}\nspec:\n  replicas: 2\n  ${tpl('rs')}`,
      `apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: ${NS}}\nspec:\n  serviceName: db\n  ${tpl('db')}`,
      `apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: ${NS}}\nspec:\n  ${tpl('agent')}`,
      `apiVersion: v1\nkind: Endpoints\nmetadata: {name: ext, namespace: ${NS}}\nsubsets: [{addresses: [{ip: 10.1.2.3}], ports: [{port: 5432}]}]`,
    ].join('\n---\n');
    await k(['apply', '-f', '-'], more);
    const out = await k(['get', 'ns,secrets,sa,jobs,cronjobs,leases,rs,sts,ds,ep', '-n', NS]);
    const blocks = out.trimEnd().split('\n\n').map(lines);
    const head = (kind: string) => blocks.find((b) => b[1]?.startsWith(kind))!;
    const row = (kind: string, name: string) => cols(head(kind).find((l) => l.startsWith(`${kind}/${name}`))!);
    expect(cols(head('namespace/')[0])).toEqual(['NAME', 'STATUS', 'AGE']);
    expect(row('namespace', NS).slice(0, 2)).toEqual([`namespace/${NS}`, 'Active']);
    expect(cols(head('secret/')[0])).toEqual(['NAME', 'TYPE', 'DATA', 'AGE']);
    expect(row('secret', 'creds').slice(0, 3)).toEqual(['secret/creds', 'Opaque', '2']);
    expect(cols(head('serviceaccount/')[0])).toEqual(['NAME', 'SECRETS', 'AGE']);
    expect(row('serviceaccount', 'robot').slice(0, 2)).toEqual(['serviceaccount/robot', '0']);
    expect(cols(head('job.batch/')[0])).toEqual(['NAME', 'STATUS', 'COMPLETIONS', 'DURATION', 'AGE']);
    expect(row('job.batch', 'once').slice(0, 3)).toEqual(['job.batch/once', 'Running', '0/1']);
    expect(cols(head('cronjob.batch/')[0])).toEqual(['NAME', 'SCHEDULE', 'TIMEZONE', 'SUSPEND', 'ACTIVE', 'LAST SCHEDULE', 'AGE']);
    expect(row('cronjob.batch', 'tick').slice(0, 6)).toEqual(['cronjob.batch/tick', '*/5 * * * *', '<none>', 'False', '0', '<none>']);
    expect(cols(head('lease.coordination.k8s.io/')[0])).toEqual(['NAME', 'HOLDER', 'AGE']);
    expect(row('lease.coordination.k8s.io', 'lock').slice(0, 2)).toEqual(['lease.coordination.k8s.io/lock', 'me']);
    expect(cols(head('replicaset.apps/')[0])).toEqual(['NAME', 'DESIRED', 'CURRENT', 'READY', 'AGE']);
    expect(row('replicaset.apps', 'rs').slice(0, 4)).toEqual(['replicaset.apps/rs', '2', '0', '0']);
    expect(cols(head('statefulset.apps/')[0])).toEqual(['NAME', 'READY', 'AGE']);
    expect(row('statefulset.apps', 'db').slice(0, 2)).toEqual(['statefulset.apps/db', '0/1']);
    expect(cols(head('daemonset.apps/')[0])).toEqual(['NAME', 'DESIRED', 'CURRENT', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'NODE SELECTOR', 'AGE']);
    expect(row('daemonset.apps', 'agent').slice(0, 7)).toEqual(['daemonset.apps/agent', '0', '0', '0', '0', '0', '<none>']);
    expect(cols(head('endpoints/')[0])).toEqual(['NAME', 'ENDPOINTS', 'AGE']);
    expect(row('endpoints', 'ext').slice(0, 2)).toEqual(['endpoints/ext', '10.1.2.3:5432']);
  });

  it('kinds without a column set print NAME and CREATED AT', async () => {
    await k(['create', 'role', 'reader', '-n', NS, '--verb=get', '--resource=pods']);
    const out = lines(await k(['get', 'roles', '-n', NS]));
    expect(cols(out[0])).toEqual(['NAME', 'CREATED AT']);
    expect(cols(out[1])[0]).toBe('reader');
    expect(cols(out[1])[1]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it('get hpa and quota: REFERENCE, TARGETS (formatHPAMetrics), MINPODS, MAXPODS, REPLICAS; REQUEST and LIMIT', async () => {
    await k(['autoscale', 'deployment', 'web', '-n', NS, '--min=2', '--max=5', '--cpu-percent=60']);
    const hpa = lines(await k(['get', 'hpa', '-n', NS]));
    expect(cols(hpa[0])).toEqual(['NAME', 'REFERENCE', 'TARGETS', 'MINPODS', 'MAXPODS', 'REPLICAS', 'AGE']);
    expect(cols(hpa[1]).slice(0, 6)).toEqual(['web', 'Deployment/web', 'cpu: <unknown>/60%', '2', '5', '0']);
    await k(['create', 'quota', 'q', '-n', NS, '--hard=pods=10,limits.cpu=2']);
    const q = lines(await k(['get', 'quota', '-n', NS]));
    expect(cols(q[0])).toEqual(['NAME', 'AGE', 'REQUEST', 'LIMIT']);
    expect(cols(q[1])[0]).toBe('q');
    expect(cols(q[1]).slice(2)).toEqual([expect.stringMatching(/^pods: \d+\/10$/), expect.stringMatching(/^limits\.cpu: \S+\/2$/)]);
  });

  it('get nodes -o wide and get events', async () => {
    const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-1', labels: { 'node-role.kubernetes.io/worker': '' } } };
    expect((await request(s, 'POST', '/api/v1/nodes', node)).status).toBe(201);
    const status = {
      status: {
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }],
        addresses: [{ type: 'InternalIP', address: '192.168.1.20' }],
        nodeInfo: { kubeletVersion: 'v1.33.0', osImage: 'Ubuntu 24.04 LTS', kernelVersion: '6.8.0', containerRuntimeVersion: 'containerd://2.0.0', machineID: '', systemUUID: '', bootID: '', kubeProxyVersion: '', operatingSystem: 'linux', architecture: 'amd64' },
      },
    };
    const p = await request(s, 'PATCH', '/api/v1/nodes/worker-1/status', status, { 'content-type': 'application/merge-patch+json' });
    expect(p.status).toBe(200);
    const wide = lines(await k(['get', 'nodes', '-o', 'wide']));
    expect(cols(wide[0])).toEqual(['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION', 'INTERNAL-IP', 'EXTERNAL-IP', 'OS-IMAGE', 'KERNEL-VERSION', 'CONTAINER-RUNTIME']);
    const row = cols(wide.find((l) => l.startsWith('worker-1'))!);
    expect([...row.slice(0, 3), ...row.slice(4)]).toEqual(['worker-1', 'Ready', 'worker', 'v1.33.0', '192.168.1.20', '<none>', 'Ubuntu 24.04 LTS', '6.8.0', 'containerd://2.0.0']);

    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const ev = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'web-0.17f0', namespace: NS },
      involvedObject: { kind: 'Pod', name: 'web-0', namespace: NS },
      reason: 'Scheduled',
      message: 'Successfully assigned tbl/web-0 to worker-1',
      source: { component: 'default-scheduler' },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      type: 'Normal',
    };
    expect((await request(s, 'POST', `/api/v1/namespaces/${NS}/events`, ev)).status).toBe(201);
    const evs = lines(await k(['get', 'events', '-n', NS]));
    expect(cols(evs[0])).toEqual(['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
    expect(cols(evs[1]).slice(1)).toEqual(['Normal', 'Scheduled', 'pod/web-0', 'Successfully assigned tbl/web-0 to worker-1']);
  });

  it('client-side decorations read the row objects: -A, --show-labels, --sort-by', async () => {
    const all = lines(await k(['get', 'cm', '-A']));
    expect(cols(all[0])).toEqual(['NAMESPACE', 'NAME', 'DATA', 'AGE']);
    expect(all.some((l) => /^tbl\s+settings\s+2\s/.test(l))).toBe(true);
    const labels = lines(await k(['get', 'pods', '-n', NS, '--show-labels']));
    expect(cols(labels[0])).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'LABELS']);
    expect(cols(labels.find((l) => l.startsWith('web-0'))!).at(-1)).toBe('app=web');
    const sorted = lines(await k(['get', 'cm', '-n', NS, '--sort-by=.metadata.name']));
    const names = sorted.slice(1).map((l) => cols(l)[0]);
    expect(names).toEqual([...names].sort());
    expect(names).toContain('extra');
  });

  it('get pods -w prints rows from Table watch events', async () => {
    const w = kubectlStream(s, ['get', 'pods', '-n', NS, '-w']);
    try {
      await until(() => w.output().includes('web-0'), 15_000);
      await k(['run', 'late', '-n', NS, '--image=busybox', '--restart=Never']);
      await until(() => /\blate\s+0\/1\s+Pending\s+0\s+\d+s/.test(w.output()), 15_000);
      const out = lines(w.output());
      expect(cols(out[0])).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
      expect(out.filter((l) => l.startsWith('NAME')).length).toBe(1);
    } finally {
      w.stop();
    }
  });
});

function watchTable(path: string, accept: string): { events: any[]; close: () => void; status: Promise<number> } {
  const events: any[] = [];
  let buf = '';
  let req: ReturnType<typeof https.request>;
  const status = new Promise<number>((res, rej) => {
    req = https.request({ host: '127.0.0.1', port: s.port, method: 'GET', path, ca: s.ca, headers: { authorization: `Bearer ${s.token}`, accept } }, (r) => {
      res(r.statusCode!);
      r.on('data', (c) => {
        buf += c;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (line) events.push(JSON.parse(line));
        }
      });
      r.on('error', () => {});
    });
    req.on('error', rej);
    req.end();
  });
  return { events, close: () => req.destroy(), status };
}

describe('the Table JSON', () => {
  it('list: columns, rows, PartialObjectMetadata by default, list metadata', async () => {
    const r = await request(s, 'GET', `/api/v1/namespaces/${NS}/configmaps?limit=1`, undefined, { accept: `${TABLE}, application/json` });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toContain('application/json');
    const t = r.json();
    expect(t.kind).toBe('Table');
    expect(t.apiVersion).toBe('meta.k8s.io/v1');
    expect(t.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(typeof t.metadata.continue).toBe('string');
    expect(t.columnDefinitions.map((c: any) => [c.name, c.type, c.format, c.priority])).toEqual([
      ['Name', 'string', 'name', 0],
      ['Data', 'string', '', 0],
      ['Age', 'string', '', 0],
    ]);
    expect(t.rows).toHaveLength(1);
    expect(t.rows[0].object.kind).toBe('PartialObjectMetadata');
    expect(t.rows[0].object.apiVersion).toBe('meta.k8s.io/v1');
    expect(t.rows[0].object.metadata.namespace).toBe(NS);
    expect(t.rows[0].object.spec).toBeUndefined();
  });

  it('get: one row, the object\'s resourceVersion; includeObject Object and None; v1beta1', async () => {
    const obj = (await request(s, 'GET', `/api/v1/namespaces/${NS}/configmaps/settings`)).json();
    const full = (await request(s, 'GET', `/api/v1/namespaces/${NS}/configmaps/settings?includeObject=Object`, undefined, { accept: TABLE })).json();
    expect(full.metadata.resourceVersion).toBe(obj.metadata.resourceVersion);
    expect(full.rows).toHaveLength(1);
    expect(full.rows[0].cells.slice(0, 2)).toEqual(['settings', 2]);
    expect(full.rows[0].object).toEqual(obj);
    const none = (await request(s, 'GET', `/api/v1/namespaces/${NS}/configmaps/settings?includeObject=None`, undefined, { accept: TABLE })).json();
    expect(none.rows[0].object).toBeNull();
    const beta = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/web`, undefined, { accept: 'application/json;as=Table;g=meta.k8s.io;v=v1beta1' })).json();
    expect(beta.apiVersion).toBe('meta.k8s.io/v1beta1');
    expect(beta.rows[0].object.apiVersion).toBe('meta.k8s.io/v1beta1');
    expect(beta.rows[0].cells.slice(0, 4)).toEqual(['web', '0/3', 0, 0]);
  });

  it('a bad includeObject is 400', async () => {
    const r = await request(s, 'GET', `/api/v1/namespaces/${NS}/configmaps?includeObject=Everything`, undefined, { accept: TABLE });
    expect(r.status).toBe(400);
    expect(r.json()).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400 });
    expect(r.json().message).toBe(`Unable to convert to Table as requested: includeObject: Invalid value: "Everything": must be 'Metadata', 'Object', 'None', or empty`);
  });

  it('watch: each event a one-row Table, column definitions only on the first', async () => {
    const w = watchTable(`/api/v1/namespaces/${NS}/configmaps?watch=1&includeObject=Object`, TABLE);
    try {
      expect(await w.status).toBe(200);
      await until(() => w.events.length >= 1);
      await request(s, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'watched' }, data: { x: 'y' } });
      const ev = await until(() => w.events.find((e) => e.object?.rows?.[0]?.cells?.[0] === 'watched'));
      const first = w.events[0];
      expect(first.type).toBe('ADDED');
      expect(first.object.kind).toBe('Table');
      expect(first.object.columnDefinitions.map((c: any) => c.name)).toEqual(['Name', 'Data', 'Age']);
      expect(first.object.rows).toHaveLength(1);
      expect(ev.type).toBe('ADDED');
      expect(ev.object.columnDefinitions).toBeNull();
      expect(ev.object.rows[0].object.metadata.name).toBe('watched');
      expect(ev.object.metadata.resourceVersion).toBe(ev.object.rows[0].object.metadata.resourceVersion);
    } finally {
      w.close();
    }
  });
});
