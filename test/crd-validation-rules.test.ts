// CRD validation rules (x-kubernetes-validations, issue 20) through kubectl: rules on self,
// messageExpression, reason and fieldPath, a transition rule with oldSelf on update, and a
// rule on list-map items correlated with their old items.
import { describe, it, expect, beforeAll } from 'vitest';
import { request, type TestServer, useServer } from './helpers/server.js';
import { kubectl, kubectlOk } from './helpers/kubectl.js';

let s: TestServer;
useServer((started) => (s = started));

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.rules.example.com
spec:
  group: rules.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
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
            x-kubernetes-validations:
            - rule: "self.minReplicas <= self.maxReplicas"
              messageExpression: "'minReplicas (' + string(self.minReplicas) + ') must not exceed maxReplicas (' + string(self.maxReplicas) + ')'"
            - rule: "!has(self.mode) || self.mode != 'legacy'"
              message: "legacy mode is gone"
              reason: FieldValueForbidden
              fieldPath: ".mode"
            - rule: "self.mode == oldSelf.mode"
              message: "mode is immutable"
            properties:
              minReplicas: {type: integer}
              maxReplicas: {type: integer}
              mode: {type: string}
              name:
                type: string
                x-kubernetes-validations:
                - rule: "self.matches('^[a-z]+$')"
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  properties:
                    name: {type: string}
                    port: {type: integer}
                  x-kubernetes-validations:
                  - rule: "self.port >= oldSelf.port"
                    message: "a port may only grow"
`;

const gadget = (name: string, spec: any) => ({ apiVersion: 'rules.example.com/v1', kind: 'Gadget', metadata: { name, namespace: 'default' }, spec });
const PATH = '/apis/rules.example.com/v1/namespaces/default/gadgets';

describe('x-kubernetes-validations', () => {
  beforeAll(async () => {
    await kubectlOk(s, ['apply', '-f', '-'], CRD);
    await kubectlOk(s, ['wait', '--for', 'condition=established', '--timeout=20s', 'crd/gadgets.rules.example.com']);
  });

  it('a failed rule refuses the create with its messageExpression (kubectl prints kube\'s wording)', async () => {
    const r = await kubectl(s, ['apply', '-f', '-'], {
      input: 'apiVersion: rules.example.com/v1\nkind: Gadget\nmetadata: {name: g1, namespace: default}\nspec: {minReplicas: 5, maxReplicas: 2, mode: a}\n',
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('The Gadget "g1" is invalid: spec: Invalid value: "object": minReplicas (5) must not exceed maxReplicas (2)');
  });

  it('reason and fieldPath shape the error; a string rule shows its value', async () => {
    const r = await request(s, 'POST', PATH, gadget('g2', { minReplicas: 1, maxReplicas: 2, mode: 'legacy', name: 'Bad1' }));
    expect(r.status).toBe(422);
    expect(r.json().details.causes).toEqual([
      { reason: 'FieldValueForbidden', message: 'Forbidden: legacy mode is gone', field: 'spec.mode' },
      { reason: 'FieldValueInvalid', message: `Invalid value: "string": failed rule: self.matches('^[a-z]+$')`, field: 'spec.name' },
    ]);
  });

  it('transition rules run on update against the old object, list-map items against their old item', async () => {
    const c = await request(s, 'POST', PATH, gadget('g3', { minReplicas: 1, maxReplicas: 2, mode: 'a', ports: [{ name: 'http', port: 80 }] }));
    expect(c.status).toBe(201);
    const changed = await request(s, 'PUT', `${PATH}/g3`, { ...c.json(), spec: { ...c.json().spec, mode: 'b' } });
    expect(changed.status).toBe(422);
    expect(changed.json().message).toContain('spec: Invalid value: "object": mode is immutable');
    const shrunk = await request(s, 'PUT', `${PATH}/g3`, { ...c.json(), spec: { ...c.json().spec, ports: [{ name: 'http', port: 79 }, { name: 'new', port: 1 }] } });
    expect(shrunk.status).toBe(422);
    expect(shrunk.json().details.causes).toEqual([{ reason: 'FieldValueInvalid', message: 'Invalid value: "object": a port may only grow', field: 'spec.ports[0]' }]);
    const grown = await request(s, 'PUT', `${PATH}/g3`, { ...c.json(), spec: { ...c.json().spec, ports: [{ name: 'http', port: 81 }] } });
    expect(grown.status).toBe(200);
  });
});

describe('rules are compiled when the CRD is written', () => {
  it('a rule that does not compile refuses the CRD', async () => {
    const bad = CRD.replace('gadgets.rules.example.com', 'widgets.rules.example.com')
      .replace('plural: gadgets, singular: gadget, kind: Gadget', 'plural: widgets, singular: widget, kind: Widget')
      .replace('rule: "self.minReplicas <= self.maxReplicas"', 'rule: "self.minReplicas <= "');
    const r = await kubectl(s, ['apply', '-f', '-'], { input: bad });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.minReplicas <= "');
    expect(r.stderr).toContain('compilation failed: ERROR: <input>:1:');
  });

  it('self is typed by the schema: a field it does not declare does not compile', async () => {
    const bad = CRD.replace('gadgets.rules.example.com', 'widgets.rules.example.com')
      .replace('plural: gadgets, singular: gadget, kind: Gadget', 'plural: widgets, singular: widget, kind: Widget')
      .replace('rule: "self.minReplicas <= self.maxReplicas"', 'rule: "self.minReplicaz <= self.maxReplicas"');
    const r = await kubectl(s, ['apply', '-f', '-'], { input: bad });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.minReplicaz <= self.maxReplicas\"");
    expect(r.stderr).toContain("compilation failed: ERROR: <input>:1:5: undefined field 'minReplicaz'");
  });
});

describe('estimated cost of rules', () => {
  it('a rule too costly for an unbounded list is refused; bounding the list admits it', async () => {
    const crd = (maxItems: string) => `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: costly.rules.example.com
spec:
  group: rules.example.com
  scope: Namespaced
  names: {plural: costly, singular: costly, kind: Costly}
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
              items:
                type: array
                ${maxItems}
                items: {type: integer}
                x-kubernetes-validations:
                - rule: "self.all(x, self.exists_one(y, x == y))"
`;
    const r = await kubectl(s, ['apply', '-f', '-'], { input: crd('') });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      'spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[items].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule(s), or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)',
    );
    await kubectlOk(s, ['apply', '-f', '-'], crd('maxItems: 50'));
  });
});
