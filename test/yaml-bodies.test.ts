// YAML request bodies as kube-apiserver 1.33 reads them: YAML 1.1 scalars (sigs.k8s.io/yaml
// on go-yaml v2), and keys given twice reported by field validation in go-yaml's words.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startServer, type TestServer } from './helpers/server.js';

let s: TestServer;
const DEPLOY = '/apis/apps/v1/namespaces/default/deployments';
const YAML = { 'content-type': 'application/yaml' };

const dupDeployment = (name: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: dupename
  name: ${name}
  unknownMeta: metaVal
  labels:
    app: nginx
spec:
  unknown1: val1
  unknownDupe: valDupe
  unknownDupe: valDupe2
  paused: true
  paused: false
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:latest
        unknownNested: val1
        imagePullPolicy: Always
        imagePullPolicy: Never`;

const warningsOf = (h: string | string[] | undefined): string[] =>
  (Array.isArray(h) ? h : h ? [h] : []).flatMap((x) => x.split(/,(?=\s*299 )/)).map((x) => x.trim().replace(/^299 - "/, '').replace(/"$/, '').replace(/\\"/g, '"'));

beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s.stop();
  s.cleanup();
});

describe('YAML request bodies', () => {
  it('Strict: duplicate keys are one go-yaml error before the unknown fields (sorted as through a Go map), 400', async () => {
    const r = await request(s, 'POST', `${DEPLOY}?fieldValidation=Strict`, dupDeployment('strict'), YAML);
    expect(r.status).toBe(400);
    expect(r.json().reason).toBe('BadRequest');
    expect(r.json().message).toBe(
      'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: yaml: unmarshal errors:\n' +
        '  line 5: key "name" already set in map\n' +
        '  line 12: key "unknownDupe" already set in map\n' +
        '  line 14: key "paused" already set in map\n' +
        '  line 28: key "imagePullPolicy" already set in map, unknown field "metadata.unknownMeta", unknown field "spec.template.spec.containers[0].unknownNested", unknown field "spec.unknown1", unknown field "spec.unknownDupe"',
    );
  });

  it('Warn (the default): one warning per duplicate line, the last value wins', async () => {
    const r = await request(s, 'POST', DEPLOY, dupDeployment('warn'), YAML);
    expect(r.status).toBe(201);
    const w = warningsOf(r.headers.warning);
    expect(w.slice(0, 4)).toEqual([
      'line 5: key "name" already set in map',
      'line 12: key "unknownDupe" already set in map',
      'line 14: key "paused" already set in map',
      'line 28: key "imagePullPolicy" already set in map',
    ]);
    expect(w).toContain('unknown field "spec.unknown1"');
    expect(r.json().metadata.name).toBe('warn');
    expect(r.json().spec.paused).toBe(false);
    expect(r.json().spec.template.spec.containers[0].imagePullPolicy).toBe('Never');
  });

  it('Ignore: accepted silently', async () => {
    const r = await request(s, 'POST', `${DEPLOY}?fieldValidation=Ignore`, dupDeployment('ignore'), YAML);
    expect(r.status).toBe(201);
    expect(r.headers.warning).toBeUndefined();
  });

  it('YAML 1.1 scalars: yes/on are true, no/off false, 0777 octal', async () => {
    const pod = `apiVersion: v1
kind: Pod
metadata:
  name: yaml11
spec:
  containers:
  - name: c
    image: busybox
    stdin: yes
    tty: on
    stdinOnce: no
  volumes:
  - name: v
    configMap:
      name: cm
      defaultMode: 0644
`;
    const r = await request(s, 'POST', '/api/v1/namespaces/default/pods', pod, YAML);
    expect(r.status).toBe(201);
    const c = r.json().spec.containers[0];
    expect([c.stdin, c.tty, !!c.stdinOnce]).toEqual([true, true, false]);
    expect(r.json().spec.volumes[0].configMap.defaultMode).toBe(0o644);
  });

  it('apply: duplicate keys are go-yaml strict errors after the apply (Strict 400, Warn warnings)', async () => {
    const body = `apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
data:
  a: "1"
  a: "2"
`;
    const path = '/api/v1/namespaces/default/configmaps/applied?fieldManager=me';
    const strict = await request(s, 'PATCH', `${path}&fieldValidation=Strict`, body, { 'content-type': 'application/apply-patch+yaml' });
    expect(strict.status).toBe(400);
    expect(strict.json().message).toBe('error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key "a" already set in map');
    const warn = await request(s, 'PATCH', path, body, { 'content-type': 'application/apply-patch+yaml' });
    expect(warn.status).toBe(201);
    expect(warningsOf(warn.headers.warning)).toEqual(['line 7: key "a" already set in map']);
    expect(warn.json().data).toEqual({ a: '2' });
  });
});
