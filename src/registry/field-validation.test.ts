import { describe, expect, it } from 'vitest';
import { checkFields, fieldValidationMode, findDuplicateFields, validateBody } from './field-validation.js';
import { StatusError } from '../errors.js';

const DEPLOY = { group: 'apps', version: 'v1', kind: 'Deployment' };
const POD = { group: '', version: 'v1', kind: 'Pod' };

function deployment(extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd' },
    spec: {
      selector: { matchLabels: { app: 'a' } },
      template: { metadata: { labels: { app: 'a' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
      ...extra,
    },
  };
}

function thrown(f: () => void): StatusError {
  try {
    f();
  } catch (e) {
    return e as StatusError;
  }
  throw new Error('did not throw');
}

describe('findDuplicateFields', () => {
  it('finds keys repeated in one object, with paths', () => {
    const text = '{"a":1,"spec":{"x":[{"n":1,"n":2},{"n":3}],"y":"q","y":"r"},"a":{"b":"\\"}"}}';
    expect(findDuplicateFields(text)).toEqual(['spec.x[0].n', 'spec.y', 'a']);
  });
  it('is empty for clean documents', () => {
    expect(findDuplicateFields(JSON.stringify(deployment()))).toEqual([]);
  });
});

describe('checkFields', () => {
  it('drops unknown fields and warns in Warn mode', () => {
    const d: any = deployment({ replica: 3 });
    d.spec.template.spec.containers[0].imagePullPolicyx = 'Always';
    const r = checkFields(d, DEPLOY, 'Warn');
    expect(r.warnings).toEqual(['unknown field "spec.template.spec.containers[0].imagePullPolicyx"', 'unknown field "spec.replica"']);
    expect(d.spec.replica).toBeUndefined();
    expect(d.spec.template.spec.containers[0].imagePullPolicyx).toBeUndefined();
  });
  it('drops silently in Ignore mode and fails in Strict mode', () => {
    const a: any = deployment({ foo: 1 });
    expect(checkFields(a, DEPLOY, 'Ignore')).toEqual({ warnings: [], errors: [], required: [] });
    expect(a.spec.foo).toBeUndefined();
    const e = thrown(() => validateBody(deployment({ foo: 1, bar: 2 }), DEPLOY, 'Strict', '{"spec":{"replicas":1,"replicas":2}}', []));
    expect(e.code).toBe(400);
    expect(e.message).toBe('Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: duplicate field "spec.replicas", unknown field "spec.foo", unknown field "spec.bar"');
  });
  it('reports type errors as the Go decoder does', () => {
    const e = thrown(() => validateBody(deployment({ replicas: 'three' }), DEPLOY, 'Warn', null, []));
    expect(e.code).toBe(400);
    expect(e.message).toBe('Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32');
    const p: any = { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 1.5 }] }] } };
    expect(checkFields(p, POD, 'Warn').typeError).toBe('json: cannot unmarshal number 1.5 into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32');
  });
  it('accepts quantities as strings or numbers and int-or-string either way', () => {
    const p = { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', resources: { limits: { cpu: 1, memory: '1Gi' } }, livenessProbe: { httpGet: { port: 'http' } } }] } };
    expect(checkFields(p, POD, 'Strict')).toEqual({ warnings: [], errors: [], required: [] });
    const bad = { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', resources: { limits: { cpu: 'lots' } } }] } };
    expect(checkFields(bad, POD, 'Warn').typeError).toMatch(/^quantities must match the regular expression/);
  });
  it('checks base64 byte fields and date-time strings', () => {
    expect(checkFields({ metadata: { name: 's' }, data: { k: 'aGVsbG8=' } }, { group: '', version: 'v1', kind: 'Secret' }, 'Warn').typeError).toBeUndefined();
    expect(checkFields({ metadata: { name: 's' }, data: { k: 'not base64!' } }, { group: '', version: 'v1', kind: 'Secret' }, 'Warn').typeError).toMatch(/^illegal base64 data at input byte/);
    expect(checkFields({ metadata: { name: 's', creationTimestamp: 'yesterday' } }, { group: '', version: 'v1', kind: 'ConfigMap' }, 'Warn').typeError).toMatch(/^parsing time "yesterday"/);
  });
  it('reports missing required fields as 422', () => {
    const d: any = deployment();
    delete d.spec.template.spec.containers[0].name;
    const e = thrown(() => validateBody(d, DEPLOY, 'Warn', null, []));
    expect(e.code).toBe(422);
    expect(e.message).toBe('Deployment.apps "d" is invalid: spec.template.spec.containers[0].name: Required value');
  });
  it('leaves free-form fields alone', () => {
    const cr = { metadata: { name: 'x' }, revision: 1, data: { anything: { goes: [1, 'a'] } } };
    expect(checkFields(cr, { group: 'apps', version: 'v1', kind: 'ControllerRevision' }, 'Strict')).toEqual({ warnings: [], errors: [], required: [] });
  });
});

describe('deep bodies', () => {
  it('are a 400, not a crash', () => {
    const n = 100000;
    const text = '{"metadata":{"name":"x"},"spec":{"versions":[{"name":"v1","schema":{"openAPIV3Schema":' + '{"not":'.repeat(n) + '{}' + '}'.repeat(n) + '}}]}}';
    const e = thrown(() => validateBody(JSON.parse(text), { group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition' }, 'Warn', text, []));
    expect(e.code).toBe(400);
    expect(e.message).toContain('exceeded max depth');
  });
});

describe('fieldValidationMode', () => {
  it('defaults to Warn and rejects other values', () => {
    expect(fieldValidationMode(new URLSearchParams(''), 'create')).toBe('Warn');
    expect(fieldValidationMode(new URLSearchParams('fieldValidation=Strict'), 'create')).toBe('Strict');
    const e = thrown(() => fieldValidationMode(new URLSearchParams('fieldValidation=strict'), 'create'));
    expect(e.code).toBe(422);
    expect(e.message).toBe('CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"');
  });
});
