// Issue #4, second pass: defaults and validation of the kinds helm charts and kubectl users
// create besides workloads, against a started server and real kubectl: admission webhook
// configurations and policies (admissionregistration.k8s.io/v1), RBAC roles and bindings,
// LimitRanges, CSIDrivers and API priority and fairness objects, as kube-apiserver 1.33's
// SetDefaults_* and pkg/apis/*/validation.
import { describe, it, expect } from 'vitest';
import { request, type TestServer, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;

useServer((started) => (s = started));

const causes = (r: any) => r.json().details.causes.map((c: any) => `${c.field}: ${c.message}`);
const getJson = async (args: string[]) => {
  const r = await kubectl(s, ['get', ...args, '-o', 'json']);
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout);
};

const WEBHOOKS = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: vwc}
webhooks:
- name: v.example.com
  clientConfig: {service: {name: s, namespace: default}}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mwc}
webhooks:
- name: m.example.com
  clientConfig: {url: "https://hook.example.com/mutate"}
  rules: [{operations: ["*"], apiGroups: [apps], apiVersions: ["*"], resources: [deployments, deployments/scale], scope: Namespaced}]
  sideEffects: NoneOnDryRun
  admissionReviewVersions: [v1, v1beta1]
  timeoutSeconds: 5
`;

describe('admission webhook configurations', () => {
  it('kubectl apply: defaulted as SetDefaults_ValidatingWebhook/_MutatingWebhook, _Rule and _ServiceReference', async () => {
    const r = await kubectl(s, ['apply', '-f', '-'], { input: WEBHOOKS });
    expect(r.stderr).toBe('');
    const v = (await getJson(['validatingwebhookconfiguration', 'vwc'])).webhooks[0];
    expect(v).toEqual({
      name: 'v.example.com',
      clientConfig: { service: { name: 's', namespace: 'default', port: 443 } },
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: '*' }],
      failurePolicy: 'Fail',
      matchPolicy: 'Equivalent',
      namespaceSelector: {},
      objectSelector: {},
      sideEffects: 'None',
      timeoutSeconds: 10,
      admissionReviewVersions: ['v1'],
    });
    const m = (await getJson(['mutatingwebhookconfiguration', 'mwc'])).webhooks[0];
    expect(m.reinvocationPolicy).toBe('Never');
    expect(m.timeoutSeconds).toBe(5);
    expect(m.rules[0].scope).toBe('Namespaced');
    expect(m.clientConfig).toEqual({ url: 'https://hook.example.com/mutate' });
    // Re-applying: the mutating one (its atomic rules list carries every field) is unchanged.
    const again = await kubectl(s, ['apply', '-f', '-'], { input: WEBHOOKS });
    expect(again.stdout).toContain('mutatingwebhookconfiguration.admissionregistration.k8s.io/mwc unchanged');
  });

  it('kube’s webhook validation: required sideEffects and review versions, names, rules, URL, timeout', async () => {
    const bad = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: short
  clientConfig: {url: "http://u@hook.example.com/?a=b#f"}
  rules: [{operations: [CREATE, READ], apiGroups: [], apiVersions: [v1], resources: ["*", pods]}]
  timeoutSeconds: 31
  failurePolicy: Sometimes
- name: short
  clientConfig: {service: {name: s, namespace: default, port: 0, path: "no//slash"}, url: "https://x.example.com"}
  sideEffects: Some
  admissionReviewVersions: [v2]
`;
    const r = await kubectl(s, ['create', '-f', '-'], { input: bad });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('The ValidatingWebhookConfiguration "bad" is invalid: ');
    const w = await request(s, 'POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
      metadata: { name: 'bad' },
      webhooks: [
        {
          name: 'short',
          clientConfig: { url: 'http://u@hook.example.com/?a=b#f' },
          rules: [{ operations: ['CREATE', 'READ'], apiGroups: [], apiVersions: ['v1'], resources: ['*', 'pods'] }],
          timeoutSeconds: 31,
          failurePolicy: 'Sometimes',
        },
        { name: 'short', clientConfig: { service: { name: 's', namespace: 'default', path: 'no//slash' } }, sideEffects: 'Some', admissionReviewVersions: ['v2'] },
        { name: 'three.part.name', clientConfig: { service: { name: 's', namespace: 'default' }, url: 'https://x.example.com' }, sideEffects: 'None', admissionReviewVersions: ['v1'] },
      ],
    });
    expect(w.status).toBe(422);
    expect(causes(w)).toEqual([
      'webhooks[0].name: Invalid value: "short": should be a domain with at least three segments separated by dots',
      'webhooks[0].rules[0].operations[1]: Unsupported value: "READ": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"',
      'webhooks[0].rules[0].apiGroups: Required value',
      `webhooks[0].rules[0].resources: Invalid value: ["*","pods"]: if '*' is present, must not specify other resources without subresources`,
      'webhooks[0].failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore"',
      'webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun',
      'webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds',
      `webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`,
      'webhooks[0].clientConfig.url: Invalid value: "u": user information is not permitted in the URL',
      'webhooks[0].clientConfig.url: Invalid value: "f": fragments are not permitted in the URL',
      'webhooks[0].clientConfig.url: Invalid value: "a=b": query parameters are not permitted in the URL',
      'webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1',
      'webhooks[1].name: Invalid value: "short": should be a domain with at least three segments separated by dots',
      'webhooks[1].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"',
      `webhooks[1].clientConfig.service.path: Invalid value: "no//slash": must start with a '/'`,
      'webhooks[1].clientConfig.service.path: Invalid value: "no//slash": segment[1] may not be empty',
      'webhooks[1].admissionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1',
      'webhooks[1].name: Duplicate value: "short"',
      'webhooks[2].clientConfig: Required value: exactly one of url or service is required',
    ]);
  });

  it('ValidatingAdmissionPolicy and its binding: failurePolicy and match resources defaulted', async () => {
    const r = await kubectl(s, ['apply', '-f', '-'], {
      input: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vap}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments]}]
  validations: [{expression: "object.spec.replicas <= 5"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: vapb}
spec:
  policyName: vap
  validationActions: [Deny]
  matchResources: {}
`,
    });
    expect(r.stderr).toBe('');
    const p = (await getJson(['validatingadmissionpolicy', 'vap'])).spec;
    expect(p.failurePolicy).toBe('Fail');
    expect(p.matchConstraints).toEqual({
      resourceRules: [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'], scope: '*' }],
      matchPolicy: 'Equivalent',
      namespaceSelector: {},
      objectSelector: {},
    });
    const b = (await getJson(['validatingadmissionpolicybinding', 'vapb'])).spec;
    expect(b.matchResources).toEqual({ matchPolicy: 'Equivalent', namespaceSelector: {}, objectSelector: {} });
    const bad = await request(s, 'POST', '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', {
      metadata: { name: 'bad' },
      spec: { failurePolicy: 'Never', matchConstraints: { excludeResourceRules: [{ operations: ['CREATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'], resourceNames: ['a/b'] }] } },
    });
    expect(bad.status).toBe(422);
    expect(causes(bad)).toEqual([
      'spec.failurePolicy: Unsupported value: "Never": supported values: "Fail", "Ignore"',
      `spec.matchConstraints.excludeResourceRules[0].resourceNames[0]: Invalid value: "a/b": may not contain '/'`,
      'spec.matchConstraints.resourceRules: Required value',
      'spec.validations: Required value: validations or auditAnnotations must contain at least one item',
      'spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item',
    ]);
  });
});

describe('RBAC', () => {
  it('subjects and roleRef get the RBAC group (SetDefaults_Subject, _RoleBinding); a ServiceAccount subject none', async () => {
    const r = await kubectl(s, ['apply', '-f', '-'], {
      input: `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb}
roleRef: {kind: ClusterRole, name: view}
subjects:
- {kind: ServiceAccount, name: sa}
- {kind: User, name: alice}
- {kind: Group, name: devs}
`,
    });
    expect(r.stderr).toBe('');
    const rb = await getJson(['rolebinding', 'rb']);
    expect(rb.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' });
    expect(rb.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'sa' },
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' },
      { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'devs' },
    ]);
  });

  it('a binding’s roleRef cannot change: kubectl apply fails as on kube-apiserver', async () => {
    const r = await kubectl(s, ['apply', '-f', '-'], {
      input: `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{kind: ServiceAccount, name: sa}]
`,
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      'The RoleBinding "rb" is invalid: roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: cannot change roleRef',
    );
  });

  it('bindings and roles validated as pkg/apis/rbac/validation', async () => {
    const crb = await request(s, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: 'crb' },
      roleRef: { apiGroup: 'example.com', kind: 'Role', name: '' },
      subjects: [{ kind: 'ServiceAccount', name: 'sa' }, { kind: 'Robot', name: 'r' }, { kind: 'User', apiGroup: 'x', name: 'u' }, { kind: 'ServiceAccount', name: 'Bad_Name', namespace: 'n' }],
    });
    expect(crb.status).toBe(422);
    expect(causes(crb)).toEqual([
      'roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"',
      'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
      'roleRef.name: Required value',
      'subjects[0].namespace: Required value',
      'subjects[1].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
      'subjects[2].apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"',
      expect.stringMatching(/^subjects\[3\]\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/),
    ]);
    const role = await kubectl(s, ['create', '-f', '-'], {
      input: `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: bad}
rules:
- {nonResourceURLs: [/healthz], verbs: [get]}
- {verbs: []}
- {apiGroups: [""], resources: [pods, services], resourceNames: [a], verbs: [get]}
`,
    });
    expect(role.code).not.toBe(0);
    expect(role.stderr).toBe(
      'The Role "bad" is invalid: \n' +
        '* rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs\n' +
        '* rules[1].verbs: Required value: verbs must contain at least one value\n' +
        '* rules[1].apiGroups: Required value: resource rules must supply at least one api group\n' +
        '* rules[1].resources: Required value: resource rules must supply at least one resource\n' +
        '* rules[2].resourceNames: Required value: resource names cannot apply to multiple resources\n',
    );
    // kubectl create clusterrole/clusterrolebinding still work as on kube.
    expect((await kubectl(s, ['create', 'clusterrole', 'pod-reader', '--verb=get,list', '--resource=pods'])).stderr).toBe('');
    expect((await kubectl(s, ['create', 'clusterrolebinding', 'prb', '--clusterrole=pod-reader', '--serviceaccount=default:sa', '--group=g'])).stderr).toBe('');
    const prb = await getJson(['clusterrolebinding', 'prb']);
    expect(prb.subjects).toEqual([
      { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'g' },
      { kind: 'ServiceAccount', name: 'sa', namespace: 'default' },
    ]);
  });
});

describe('LimitRange, CSIDriver, FlowSchema, PriorityLevelConfiguration defaults', () => {
  it('as SetDefaults_LimitRangeItem, _CSIDriver, _FlowSchemaSpec, _LimitedPriorityLevelConfiguration and _QueuingConfiguration', async () => {
    const r = await kubectl(s, ['apply', '-f', '-'], {
      input: `apiVersion: v1
kind: LimitRange
metadata: {name: lr}
spec:
  limits:
  - {type: Container, max: {cpu: "2", memory: 1Gi}, min: {cpu: 100m}, default: {memory: 512Mi}}
  - {type: Pod, max: {cpu: "4"}}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: csi.example.com}
spec: {}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: fs}
spec:
  priorityLevelConfiguration: {name: plc}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: plc}
spec:
  type: Limited
  limited:
    limitResponse: {type: Queue, queuing: {queues: 16}}
`,
    });
    expect(r.stderr).toBe('');
    const lr = (await getJson(['limitrange', 'lr'])).spec.limits;
    expect(lr[0].default).toEqual({ cpu: '2', memory: '512Mi' });
    expect(lr[0].defaultRequest).toEqual({ cpu: '2', memory: '512Mi' });
    expect(lr[1]).toEqual({ type: 'Pod', max: { cpu: '4' } });
    expect((await getJson(['csidriver', 'csi.example.com'])).spec).toEqual({
      attachRequired: true,
      podInfoOnMount: false,
      storageCapacity: false,
      fsGroupPolicy: 'ReadWriteOnceWithFSType',
      volumeLifecycleModes: ['Persistent'],
      requiresRepublish: false,
      seLinuxMount: false,
    });
    expect((await getJson(['flowschema', 'fs'])).spec.matchingPrecedence).toBe(1000);
    expect((await getJson(['prioritylevelconfiguration', 'plc'])).spec.limited).toEqual({
      nominalConcurrencyShares: 30,
      lendablePercent: 0,
      limitResponse: { type: 'Queue', queuing: { queues: 16, handSize: 8, queueLengthLimit: 50 } },
    });
  });
});
