// A collection delete stops taking items once its request has been answered by its deadline
// (found by the nodes bench, issue 23: a delete of 150,000 pods answered 504 went on, and each
// one the client sent again ran a pass beside it, until the heap ran out). kube's workers stop
// there too: each item's Delete fails on the request's context. Each item's DELETE passes a
// validating webhook (a real HTTPS server started here) that answers after 100 ms, so that the
// deadline falls in the middle of the collection.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { request, until, useServer, type TestServer } from './helpers/server.js';

let s: TestServer;
useServer((x) => (s = x), { args: ['--delete-collection-workers=2'] });

let certDir: string;
let webhook: https.Server;
let reviews = 0;

beforeAll(async () => {
  certDir = mkdtempSync(join(tmpdir(), 'kubeshard-dc-certs-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: certDir, stdio: 'ignore' });
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key']);
  run(['req', '-x509', '-new', '-key', 'ca.key', '-days', '2', '-subj', '/CN=dc-test-ca', '-out', 'ca.crt']);
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'tls.key']);
  run(['req', '-new', '-key', 'tls.key', '-subj', '/CN=127.0.0.1', '-out', 'tls.csr']);
  writeFileSync(join(certDir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  run(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'ext.cnf', '-out', 'tls.crt']);
  webhook = https.createServer({ key: readFileSync(join(certDir, 'tls.key')), cert: readFileSync(join(certDir, 'tls.crt')) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      reviews++;
      setTimeout(() => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request.uid, allowed: true } }));
      }, 100);
    });
  });
  await new Promise<void>((r) => webhook.listen(0, '127.0.0.1', r));
  const port = (webhook.address() as AddressInfo).port;
  const caBundle = readFileSync(join(certDir, 'ca.crt')).toString('base64');
  const cfg = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'slow-deletes' },
    webhooks: [{
      name: 'slow.deletes.test',
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Fail',
      rules: [{ operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
      namespaceSelector: { matchLabels: { 'dc-test': 'slow' } },
      clientConfig: { url: `https://127.0.0.1:${port}/slow`, caBundle },
    }],
  };
  expect((await request(s, 'POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', cfg)).status).toBe(201);
});

afterAll(async () => {
  webhook?.closeAllConnections();
  await new Promise((r) => webhook?.close(r));
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

const count = async (ns: string): Promise<number> => (await request(s, 'GET', `/api/v1/namespaces/${ns}/configmaps?labelSelector=set%3Dx`)).json().items.length;

describe('a collection delete past its deadline', () => {
  it('answers 504 and takes no further item; issued again, it deletes the rest', async () => {
    const ns = 'dc-deadline';
    expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: ns, labels: { 'dc-test': 'slow' } } })).status).toBe(201);
    const n = 60;
    await Promise.all(Array.from({ length: n }, (_, i) => request(s, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `c${i}`, labels: { set: 'x' } } })));
    expect(await count(ns)).toBe(n);
    // the hook is in force once a single delete passes through it
    const before = reviews;
    expect((await request(s, 'DELETE', `/api/v1/namespaces/${ns}/configmaps/c0`)).status).toBe(200);
    await until(() => reviews > before);

    const r = await request(s, 'DELETE', `/api/v1/namespaces/${ns}/configmaps?labelSelector=set%3Dx&timeout=1s`);
    expect(r.status).toBe(504);
    // (the items the two workers had taken when the 504 left finish; nothing after them begins:
    // at 100 ms an item, the whole collection would take 3 s)
    await new Promise((res) => setTimeout(res, 1000));
    const left = await count(ns);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(n - 1);
    await new Promise((res) => setTimeout(res, 3000));
    expect(await count(ns)).toBe(left);

    expect((await request(s, 'DELETE', `/api/v1/namespaces/${ns}/configmaps?labelSelector=set%3Dx`)).status).toBe(200);
    expect(await count(ns)).toBe(0);
  }, 60_000);
});
