// The write path as kubectl users meet it (issue 6, second audit), against a started server
// with real kubectl: client-side apply on a custom resource (a JSON merge patch, since the
// published PATCH operation takes no strategic merge patch), server-side apply on one (atomic
// and map lists), apply sequences over several built-in kinds, and a server dry run of a
// create with generateName.
import { describe, it, expect } from 'vitest';
import { request, type TestServer, useServer } from './helpers/server.js';
import { kubectl, kubectlOk } from './helpers/kubectl.js';

let s: TestServer;

useServer((started) => (s = started));

const k = (args: string[], input?: string) => kubectlOk(s, args, input);

const CRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.audit.example.com}
spec:
  group: audit.example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              items: {type: array, items: {type: string}}
              size: {type: integer}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}
`;

function widget(spec: string): string {
  return `apiVersion: audit.example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec: ${spec}\n`;
}

describe('write path with kubectl', () => {
  it('custom resources: the published PATCH takes no strategic merge patch, so client-side apply works', async () => {
    await k(['apply', '-f', '-'], CRD);
    await k(['wait', '--for', 'condition=established', '--timeout=20s', 'crd/widgets.audit.example.com']);
    const v3 = (await request(s, 'GET', '/openapi/v3/apis/audit.example.com/v1')).json();
    const item = v3.paths['/apis/audit.example.com/v1/namespaces/{namespace}/widgets/{name}'];
    expect(Object.keys(item.patch.requestBody.content)).not.toContain('application/strategic-merge-patch+json');
    expect(Object.keys(item.patch.requestBody.content)).toContain('application/merge-patch+json');
    const v2 = (await request(s, 'GET', '/openapi/v2')).json();
    expect(v2.paths['/apis/audit.example.com/v1/namespaces/{namespace}/widgets/{name}'].patch.consumes).not.toContain('application/strategic-merge-patch+json');
    // A built-in kind still offers it.
    expect(v2.paths['/api/v1/namespaces/{namespace}/configmaps/{name}'].patch.consumes).toContain('application/strategic-merge-patch+json');

    await k(['apply', '-f', '-'], widget('{items: [a, b], size: 1, ports: [{name: p1, port: 1}]}'));
    await k(['apply', '-f', '-'], widget('{items: [c], ports: [{name: p2, port: 2}]}'));
    const got = JSON.parse(await k(['get', 'widget', 'w', '-o', 'json']));
    expect(got.spec).toEqual({ items: ['c'], ports: [{ name: 'p2', port: 2 }] });
    // A strategic merge patch itself is refused with 415.
    const smp = await kubectl(s, ['patch', 'widget', 'w', '--type=strategic', '-p', '{"spec":{"size":3}}']);
    expect(smp.code).not.toBe(0);
    expect(smp.stderr).toContain('application/strategic-merge-patch+json is not supported');
  });

  it('custom resources: server-side apply treats untyped lists as atomic and keyed lists by key', async () => {
    await k(['delete', 'widget', 'w']);
    await k(['apply', '--server-side', '--field-manager=one', '-f', '-'], widget('{items: [a, b], ports: [{name: p1, port: 1}]}'));
    const conflict = await kubectl(s, ['apply', '--server-side', '--field-manager=two', '-f', '-'], { input: widget('{items: [c], ports: [{name: p2, port: 2}]}') });
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toContain('conflict with "one": .spec.items');
    await k(['apply', '--server-side', '--field-manager=two', '--force-conflicts', '-f', '-'], widget('{items: [c], ports: [{name: p2, port: 2}]}'));
    const got = JSON.parse(await k(['get', 'widget', 'w', '-o', 'json']));
    expect(got.spec.items).toEqual(['c']);
    expect(got.spec.ports).toEqual([{ name: 'p1', port: 1 }, { name: 'p2', port: 2 }]);
  });

  it('client-side apply sequences: ConfigMap data removal, Role rules replaced whole, Ingress rules', async () => {
    await k(['apply', '-f', '-'], 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: default}\ndata: {a: "1", b: "2"}\n');
    await k(['apply', '-f', '-'], 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: default}\ndata: {a: "1"}\n');
    expect(JSON.parse(await k(['get', 'cm', 'cm', '-o', 'json'])).data).toEqual({ a: '1' });

    const role = (rules: string) => `apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r, namespace: default}\nrules:\n${rules}`;
    await k(['apply', '-f', '-'], role('- {apiGroups: [""], resources: [pods, services], verbs: [get, list]}\n- {apiGroups: [apps], resources: [deployments], verbs: [get]}\n'));
    await k(['apply', '-f', '-'], role('- {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}\n'));
    expect(JSON.parse(await k(['get', 'role', 'r', '-o', 'json'])).rules).toEqual([{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }]);

    const ing = (rules: string) => `apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: ing, namespace: default}\nspec:\n  rules:\n${rules}`;
    const rule = (host: string, svc: string) => `  - host: ${host}\n    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: ${svc}, port: {number: 80}}}}]}\n`;
    await k(['apply', '-f', '-'], ing(rule('a.example.com', 'a') + rule('b.example.com', 'b')));
    await k(['apply', '-f', '-'], ing(rule('a.example.com', 'a2')));
    const rules = JSON.parse(await k(['get', 'ing', 'ing', '-o', 'json'])).spec.rules;
    expect(rules.map((r: any) => [r.host, r.http.paths[0].backend.service.name])).toEqual([['a.example.com', 'a2']]);
  });

  it('a server dry run of a generateName create answers a generated name and stores nothing', async () => {
    const out = JSON.parse(await k(['create', '--dry-run=server', '-o', 'json', '-f', '-'], 'apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: gen-, namespace: default}\n'));
    expect(out.metadata.name).toMatch(/^gen-[a-z0-9]{5}$/);
    expect(out.metadata.uid).toBeTruthy();
    expect(out.metadata.resourceVersion).toBeUndefined();
    const list = JSON.parse(await k(['get', 'cm', '-o', 'json'])).items.map((i: any) => i.metadata.name);
    expect(list.some((n: string) => n.startsWith('gen-'))).toBe(false);
  });
});
