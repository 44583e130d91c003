// Audit logging (spec 6.2) against a real server and the real kubectl: the policy's levels
// and omitted stages, the events of create/get/delete/watch, the Audit-Id header, the
// authorization and deprecation annotations, the legacy format, rotation, the webhook
// backend (and a webhook that is down), and start-up refusing a bad policy.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk, kubectlPath, kubectlStream } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kubeshard-audit-'));
const tokenFile = join(dir, 'tokens.csv');
writeFileSync(tokenFile, 'alice-token,alice,u1\n');

const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  users: ["alice"]
- level: None
  verbs: ["get"]
  resources:
  - group: ""
    resources: ["namespaces"]
- level: Metadata
  resources:
  - group: ""
    resources: ["namespaces", "endpoints"]
- level: Metadata
  omitStages: ["RequestReceived"]
  resources:
  - group: ""
    resources: ["secrets"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps"]
`;
const policyFile = join(dir, 'policy.yaml');
writeFileSync(policyFile, POLICY);

function readEvents(path: string): any[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe('audit log (json, blocking)', () => {
  let s: TestServer;
  const logPath = join(dir, 'log', 'audit.log');
  const events = () => readEvents(logPath);
  const k = (args: string[]) => kubectlOk(s, args);

  beforeAll(async () => {
    kubectlPath();
    s = await startServer({ args: ['--token-auth-file', tokenFile, '--audit-policy-file', policyFile, '--audit-log-path', logPath, '--audit-log-maxsize', '1', '--audit-log-maxbackup', '1'] });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
  });

  it('an impersonated request records the requester as user and the impersonated one as impersonatedUser', async () => {
    await k(['get', 'configmaps', '-n', 'default', '--as', 'carol', '--as-group', 'team-a']);
    const ev = events().find((e) => e.objectRef?.resource === 'configmaps' && e.verb === 'list' && e.stage === 'ResponseComplete' && e.impersonatedUser);
    expect(ev.user.username).toBe('admin');
    expect(ev.impersonatedUser.username).toBe('carol');
    expect(ev.impersonatedUser.groups).toEqual(['team-a', 'system:authenticated']);
  });

  it('secrets are recorded at Metadata, without RequestReceived, and their data is never logged', async () => {
    await k(['create', 'secret', 'generic', 's1', '-n', 'default', '--from-literal=password=hunter2']);
    const evs = events().filter((e) => e.objectRef?.resource === 'secrets' && e.verb === 'create');
    expect(evs.map((e) => e.stage)).toEqual(['ResponseComplete']);
    const ev = evs[0];
    expect(ev.kind).toBe('Event');
    expect(ev.apiVersion).toBe('audit.k8s.io/v1');
    expect(ev.level).toBe('Metadata');
    expect(ev.objectRef).toEqual({ resource: 'secrets', namespace: 'default', name: 's1', apiVersion: 'v1' });
    expect(ev.user.username).toBe('admin');
    expect(ev.user.groups).toContain('system:masters');
    expect(ev.sourceIPs.length).toBeGreaterThan(0);
    expect(ev.userAgent).toMatch(/^kubectl/);
    expect(ev.requestURI).toMatch(/^\/api\/v1\/namespaces\/default\/secrets/);
    expect(ev.responseStatus).toEqual({ metadata: {}, code: 201 });
    expect(ev.requestObject).toBeUndefined();
    expect(ev.responseObject).toBeUndefined();
    expect(ev.annotations).toEqual({ 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' });
    expect(ev.requestReceivedTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(ev.stageTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    const text = readFileSync(logPath, 'utf8');
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain(Buffer.from('hunter2').toString('base64'));
  });

  it('configmaps are recorded at RequestResponse: both stages, the request and response objects', async () => {
    await k(['create', 'cm', 'c1', '-n', 'default', '--from-literal=k=v']);
    const complete = events().find((e) => e.objectRef?.resource === 'configmaps' && e.verb === 'create' && e.objectRef.name === 'c1');
    const evs = events().filter((e) => e.auditID === complete.auditID);
    expect(evs.map((e) => e.stage)).toEqual(['RequestReceived', 'ResponseComplete']);
    // the name comes from the request body, read after RequestReceived (as in kube)
    expect(evs[0].objectRef).toEqual({ resource: 'configmaps', namespace: 'default', apiVersion: 'v1' });
    expect(evs[1].objectRef).toEqual({ resource: 'configmaps', namespace: 'default', name: 'c1', apiVersion: 'v1' });
    expect(evs[0].responseStatus).toBeUndefined();
    expect(evs[0].requestObject).toBeUndefined();
    const done = evs[1];
    expect(done.level).toBe('RequestResponse');
    expect(done.responseStatus.code).toBe(201);
    expect(done.requestObject.data).toEqual({ k: 'v' });
    expect(done.responseObject.kind).toBe('ConfigMap');
    expect(done.responseObject.metadata.uid).toBeTruthy();
    expect(done.responseObject.data).toEqual({ k: 'v' });
  });

  it('get: the Audit-Id header is the event auditID, and a client-sent Audit-ID is kept', async () => {
    const r = await request(s, 'GET', '/api/v1/namespaces/default/configmaps/c1');
    expect(r.status).toBe(200);
    const id = r.headers['audit-id'] as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const evs = events().filter((e) => e.auditID === id);
    expect(evs.map((e) => e.stage)).toEqual(['RequestReceived', 'ResponseComplete']);
    expect(evs[1].verb).toBe('get');
    expect(evs[1].responseObject.metadata.name).toBe('c1');
    expect(evs[1].requestObject).toBeUndefined();

    const mine = await request(s, 'GET', '/api/v1/namespaces/default/configmaps/c1', undefined, { 'audit-id': 'my-own-audit-id' });
    expect(mine.headers['audit-id']).toBe('my-own-audit-id');
    expect(events().filter((e) => e.auditID === 'my-own-audit-id').length).toBe(2);
  });

  it('an error response carries its Status in responseStatus', async () => {
    const r = await request(s, 'GET', '/api/v1/namespaces/default/configmaps/nope');
    expect(r.status).toBe(404);
    const ev = events().find((e) => e.auditID === r.headers['audit-id'] && e.stage === 'ResponseComplete');
    expect(ev.responseStatus).toMatchObject({ metadata: {}, status: 'Failure', reason: 'NotFound', code: 404, message: 'configmaps "nope" not found' });
    expect(ev.responseStatus.details).toMatchObject({ name: 'nope', kind: 'configmaps' });
  });

  it('a failed authentication is recorded: one ResponseStarted event, no user', async () => {
    const r = await request(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, { authorization: 'Bearer wrong-token' });
    expect(r.status).toBe(401);
    const evs = events().filter((e) => e.auditID === r.headers['audit-id']);
    expect(evs.length).toBe(1);
    expect(evs[0]).toMatchObject({ stage: 'ResponseStarted', verb: 'list', user: {}, responseStatus: { metadata: {}, message: 'Authentication failed, attempted: bearer', code: 401 } });
  });

  it('delete is recorded with its response status', async () => {
    await k(['delete', 'cm', 'c1', '-n', 'default']);
    const ev = events().find((e) => e.verb === 'delete' && e.objectRef?.name === 'c1' && e.stage === 'ResponseComplete');
    expect(ev.level).toBe('RequestResponse');
    expect(ev.responseStatus.code).toBe(200);
    expect(ev.responseObject).toBeTruthy();
  });

  it('rules apply in order: None for a user, None for get of namespaces, Metadata for their list', async () => {
    const before = events().length;
    const r = await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'by-alice' } }, { authorization: 'Bearer alice-token' });
    expect(r.status).toBe(201);
    // no event, but the request still has its audit ID
    expect(r.headers['audit-id']).toBeTruthy();
    await k(['get', 'ns', 'default']);
    await k(['get', 'ns']);
    const after = events().slice(before);
    expect(after.some((e) => e.user.username === 'alice' || e.objectRef?.name === 'by-alice')).toBe(false);
    expect(after.some((e) => e.objectRef?.resource === 'namespaces' && e.verb === 'get')).toBe(false);
    const list = after.filter((e) => e.objectRef?.resource === 'namespaces' && e.verb === 'list');
    expect(list.map((e) => e.stage)).toEqual(['RequestReceived', 'ResponseComplete']);
    expect(list[1].level).toBe('Metadata');
    expect(list[1].responseObject).toBeUndefined();
    // no rule matches: not recorded
    await k(['get', 'serviceaccounts', '-n', 'default']);
    expect(events().some((e) => e.objectRef?.resource === 'serviceaccounts')).toBe(false);
  });

  it('a deprecated API adds k8s.io/deprecated', async () => {
    await k(['get', 'endpoints', '-n', 'default']);
    const ev = events().find((e) => e.objectRef?.resource === 'endpoints' && e.stage === 'ResponseComplete');
    expect(ev.annotations['k8s.io/deprecated']).toBe('true');
    expect(ev.annotations['authorization.k8s.io/decision']).toBe('allow');
  });

  it('a watch has ResponseStarted, and ResponseComplete once the client goes', async () => {
    const w = kubectlStream(s, ['get', 'cm', '-n', 'default', '-w', '-o', 'name']);
    let id = '';
    try {
      const started = await until(() => events().find((e) => e.verb === 'watch' && e.objectRef?.resource === 'configmaps' && e.stage === 'ResponseStarted'), 15_000);
      id = started.auditID;
      expect(started.responseStatus.code).toBe(200);
      expect(started.level).toBe('RequestResponse');
      expect(started.responseObject).toBeUndefined();
      await k(['create', 'cm', 'watched', '-n', 'default']);
      await until(() => w.output().includes('watched'), 15_000);
      expect(events().filter((e) => e.auditID === id).map((e) => e.stage)).toEqual(['RequestReceived', 'ResponseStarted']);
    } finally {
      w.stop();
    }
    const done = await until(() => events().find((e) => e.auditID === id && e.stage === 'ResponseComplete'), 15_000);
    expect(done.responseStatus.code).toBe(200);
  });

  it('the log rotates at --audit-log-maxsize and keeps --audit-log-maxbackup backups', async () => {
    const big = 'x'.repeat(400 * 1024);
    for (let i = 0; i < 4; i++) {
      const r = await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `big-${i}` }, data: { big } });
      expect(r.status).toBe(201);
    }
    const backups = readdirSync(join(dir, 'log')).filter((f) => /^audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$/.test(f));
    expect(backups.length).toBe(1);
    // the current file has the latest create, whole lines only
    expect(events().some((e) => e.objectRef?.name === 'big-3' && e.stage === 'ResponseComplete')).toBe(true);
  });
});

describe('audit log to standard out, legacy format', () => {
  let s: TestServer;
  beforeAll(async () => {
    kubectlPath();
    s = await startServer({ args: ['--audit-policy-file', policyFile, '--audit-log-path', '-', '--audit-log-format', 'legacy', '--audit-log-mode', 'batch'] });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
  });

  it('writes one AUDIT line per event', async () => {
    const r = await request(s, 'GET', '/api/v1/namespaces/default/configmaps?limit=1', undefined, { 'audit-id': 'legacy-1' });
    expect(r.status).toBe(200);
    const line = await until(() => s.output().split('\n').find((l) => l.includes('id="legacy-1"') && l.includes('stage="ResponseComplete"')));
    expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z AUDIT: id="legacy-1" stage="ResponseComplete" ip="[^"]+" method="list" user="admin" groups=".*\\"system:masters\\".*" as="<self>" asgroups="<lookup>" user-agent="[^"]*" namespace="default" uri="\/api\/v1\/namespaces\/default\/configmaps\?limit=1" response="200"$/);
    expect(s.output()).toContain('id="legacy-1" stage="RequestReceived"');
    expect(s.output()).toMatch(/id="legacy-1" stage="RequestReceived".* response="<deferred>"/);
  });
});

describe('audit webhook', () => {
  let s: TestServer;
  let receiver: http.Server;
  const lists: any[] = [];
  let failNext = 1;
  const received = () => lists.flatMap((l) => l.items);

  beforeAll(async () => {
    kubectlPath();
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        // The first POST fails: the backend must retry it.
        if (failNext > 0) {
          failNext--;
          res.writeHead(503).end();
          return;
        }
        lists.push({ ...JSON.parse(Buffer.concat(chunks).toString()), contentType: req.headers['content-type'], path: req.url });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const port = (receiver.address() as AddressInfo).port;
    const kubeconfig = join(dir, 'webhook.kubeconfig');
    writeFileSync(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters:
- name: sink
  cluster:
    server: http://127.0.0.1:${port}/audit
contexts:
- name: sink
  context: {cluster: sink, user: sink}
current-context: sink
users:
- name: sink
  user: {}
`,
    );
    s = await startServer({ args: ['--audit-policy-file', policyFile, '--audit-webhook-config-file', kubeconfig, '--audit-webhook-batch-max-wait', '1s', '--audit-webhook-initial-backoff', '0.2s'] });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
    receiver?.close();
  });

  it('POSTs EventLists in batches, retrying a failed POST', async () => {
    await kubectlOk(s, ['create', 'cm', 'hooked', '-n', 'default', '--from-literal=a=b']);
    const ev = await until(() => received().find((e) => e.objectRef?.name === 'hooked' && e.stage === 'ResponseComplete'), 30_000);
    expect(lists[0].kind).toBe('EventList');
    expect(lists[0].apiVersion).toBe('audit.k8s.io/v1');
    expect(lists[0].contentType).toBe('application/json');
    expect(lists[0].path).toBe('/audit');
    expect(ev.level).toBe('RequestResponse');
    expect(ev.requestObject.data).toEqual({ a: 'b' });
    expect(received().filter((e) => e.auditID === ev.auditID).map((e) => e.stage)).toEqual(['RequestReceived', 'ResponseComplete']);
    expect(failNext).toBe(0);
  });

  it('requests go on when the webhook is down', async () => {
    await new Promise<void>((r) => {
      receiver.closeAllConnections();
      receiver.close(() => r());
    });
    for (let i = 0; i < 3; i++) {
      const r = await kubectl(s, ['create', 'cm', `while-down-${i}`, '-n', 'default']);
      expect(r.code).toBe(0);
    }
    expect((await kubectl(s, ['get', 'cm', 'while-down-2', '-n', 'default'])).code).toBe(0);
  });
});

describe('blocking modes with the webhook down', () => {
  /** a kubeconfig naming a port nothing listens on */
  async function deadWebhook(): Promise<string> {
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const file = join(dir, `dead-${port}.kubeconfig`);
    writeFileSync(file, `apiVersion: v1\nkind: Config\nclusters:\n- name: d\n  cluster: {server: "http://127.0.0.1:${port}"}\nusers:\n- name: d\n  user: {}\n`);
    return file;
  }

  it('blocking-strict fails a request whose RequestReceived event cannot be stored; blocking does not', async () => {
    const file = await deadWebhook();
    for (const mode of ['blocking-strict', 'blocking']) {
      const s = await startServer({ args: ['--audit-policy-file', policyFile, '--audit-webhook-config-file', file, '--audit-webhook-mode', mode, '--audit-webhook-initial-backoff', '0.01s'] });
      try {
        // configmaps are audited; a request the policy does not record is never held up
        const r = await request(s, 'GET', '/api/v1/namespaces/default/configmaps');
        const sa = await request(s, 'GET', '/api/v1/namespaces/default/serviceaccounts');
        expect(sa.status).toBe(200);
        if (mode === 'blocking-strict') {
          expect(r.status).toBe(500);
          expect(r.body).toContain('failed to store audit event');
        } else {
          expect(r.status).toBe(200);
        }
      } finally {
        await s.stop();
        s.cleanup();
      }
    }
  });
});

describe('bad audit configuration stops start-up', () => {
  it('a policy with an unknown level', async () => {
    const bad = join(dir, 'bad-policy.yaml');
    writeFileSync(bad, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n');
    const err = await startServer({ args: ['--audit-policy-file', bad, '--audit-log-path', join(dir, 'never.log')] }).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(err).toContain(`invalid audit policy file "${bad}"`);
    expect(err).toContain('rules[0].level: Unsupported value: "Everything"');
  });

  it('a policy with no rules, one of the wrong version, or a missing file', async () => {
    const empty = join(dir, 'empty-policy.yaml');
    writeFileSync(empty, 'apiVersion: audit.k8s.io/v1\nkind: Policy\n');
    const old = join(dir, 'old-policy.yaml');
    writeFileSync(old, 'apiVersion: audit.k8s.io/v1beta2\nkind: Policy\nrules:\n- level: Metadata\n');
    for (const [file, msg] of [
      [empty, 'loaded illegal audit policy with 0 rules'],
      [old, 'unsupported apiVersion "audit.k8s.io/v1beta2"'],
      [join(dir, 'missing.yaml'), 'failed to read audit policy file'],
    ]) {
      const err = await startServer({ args: ['--audit-policy-file', file] }).then(
        () => null,
        (e: Error) => e.message,
      );
      expect(err).toContain(msg);
    }
  });

  it('a bad --audit-log-mode or format', async () => {
    const mode = await startServer({ args: ['--audit-policy-file', policyFile, '--audit-log-path', join(dir, 'x.log'), '--audit-log-mode', 'sometimes'] }).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(mode).toContain('invalid audit log mode sometimes, allowed modes are "batch,blocking,blocking-strict"');
    const format = await startServer({ args: ['--audit-policy-file', policyFile, '--audit-log-path', join(dir, 'x.log'), '--audit-log-format', 'xml'] }).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(format).toContain('invalid audit log format xml');
  });
});
