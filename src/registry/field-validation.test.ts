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
  it('takes no string after an empty object for a key (it used to throw on an array holding {} then a string)', () => {
    expect(findDuplicateFields('["x",{},"y"]')).toEqual([]);
    expect(findDuplicateFields('{"a":[{},"v"],"a":1}')).toEqual(['a']);
    expect(findDuplicateFields('{"a":{},"b":[{}, {"k":1,"k":2}]}')).toEqual(['b[1].k']);
  });
  it('keeps the keys of each object apart when objects of more than 16 keys follow one another', () => {
    const obj = (keys: string[]) => `{${keys.map((k, i) => `"${k}":${i}`).join(',')}}`;
    const many = Array.from({ length: 20 }, (_, i) => `k${i}`);
    // siblings at one depth: the second has the first's keys and no duplicate of its own, the third one
    const text = `{"a":${obj(many)},"b":${obj(many)},"c":${obj([...many, 'k3'])},"d":[${obj([...many, 'k19'])},${obj(['k19', 'k19'])}]}`;
    expect(findDuplicateFields(text)).toEqual(['c.k3', 'd[0].k19', 'd[1].k19']);
    expect(findDuplicateFields(obj(many))).toEqual([]);
    expect(findDuplicateFields(`{"x":${obj([...many.slice(0, 16), 'k0'])}}`)).toEqual(['x.k0']);
  });

  it('gives what the previous implementation gave on random documents', () => {
    // the previous implementation (an object and a Set per container), kept as the reference
    const reference = (text: string): string[] => {
      const out: string[] = [];
      interface Frame { obj: boolean; keys?: Set<string>; key?: string; index: number; parent: Frame | undefined }
      const stack: Frame[] = [];
      const pathOf = (f: Frame | undefined): string => {
        const parts: string[] = [];
        for (let c = f; c?.parent; c = c.parent) parts.push(c.parent.obj ? `.${c.parent.key}` : `[${c.parent.index}]`);
        return parts.reverse().join('').replace(/^\./, '');
      };
      let i = 0;
      let expectKey = false;
      while (i < text.length) {
        const c = text.charCodeAt(i);
        if (c === 0x22) {
          let j = text.indexOf('"', i + 1);
          let escaped = false;
          while (j > 0 && text.charCodeAt(j - 1) === 0x5c) {
            let k = j - 1;
            while (text.charCodeAt(k - 1) === 0x5c) k--;
            escaped = true;
            if ((j - k) % 2 === 0) break;
            j = text.indexOf('"', j + 1);
          }
          if (j < 0) break;
          if (expectKey) {
            const raw = text.slice(i, j + 1);
            const key = escaped ? (JSON.parse(raw) as string) : raw.slice(1, -1);
            const top = stack[stack.length - 1];
            if (top.keys!.has(key)) {
              const p = pathOf(top);
              out.push(p ? `${p}.${key}` : key);
            } else top.keys!.add(key);
            top.key = key;
            expectKey = false;
          }
          i = j + 1;
          continue;
        }
        if (c === 0x7b) {
          stack.push({ obj: true, keys: new Set(), index: 0, parent: stack[stack.length - 1] });
          expectKey = true;
        } else if (c === 0x5b) stack.push({ obj: false, index: 0, parent: stack[stack.length - 1] });
        else if (c === 0x7d || c === 0x5d) stack.pop();
        else if (c === 0x2c) {
          const top = stack[stack.length - 1];
          if (top?.obj) expectKey = true;
          else if (top) top.index++;
        }
        i++;
      }
      return out;
    };
    let seed = 42;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const KEYS = ['a', 'b', 'spec', '', 'a\\"b', '\\u0061', 'x.y', 'k:{\\"n\\":1}'];
    const value = (d: number): string => {
      const r = rnd(d > 4 ? 3 : 6);
      if (r === 0) return String(rnd(100));
      if (r === 1) return JSON.stringify(['s', 'q\\"', '{"a":1,"a":2}', ''][rnd(4)]);
      if (r === 2) return ['true', 'null', '{}', '[]'][rnd(4)];
      if (r === 3 || r === 4) {
        const n = rnd(20);
        const fields: string[] = [];
        for (let k = 0; k < n; k++) fields.push(`"${KEYS[rnd(KEYS.length)]}"${rnd(2) ? ' : ' : ':'}${value(d + 1)}`);
        return `{${fields.join(rnd(2) ? ', ' : ',')}}`;
      }
      const n = rnd(4);
      const items: string[] = [];
      for (let k = 0; k < n; k++) items.push(value(d + 1));
      return `[${items.join(',')}]`;
    };
    let compared = 0;
    let found = 0;
    for (let t = 0; t < 2000; t++) {
      const text = value(0);
      JSON.parse(text); // only documents JSON.parse accepts
      let want: string[] | undefined;
      try {
        want = reference(text);
      } catch {
        want = undefined; // the reference's crash on an empty object followed by a string
      }
      const got = findDuplicateFields(text);
      if (want === undefined) continue;
      expect(got).toEqual(want);
      compared++;
      found += got.length;
    }
    expect(compared).toBeGreaterThan(1000);
    expect(found).toBeGreaterThan(100);
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

describe('field names that are inherited members (issue 17)', () => {
  it('__proto__, toString and constructor are unknown fields, dropped outside Strict', () => {
    const obj = JSON.parse('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","__proto__":{"x":1}},"spec":{"toString":1,"constructor":{"a":1}},"__proto__":{"polluted":"yes"}}');
    const r = checkFields(obj, DEPLOY, 'Warn');
    expect(r.warnings.sort()).toEqual(['unknown field "__proto__"', 'unknown field "metadata.__proto__"', 'unknown field "spec.constructor"', 'unknown field "spec.toString"']);
    expect(Object.hasOwn(obj, '__proto__')).toBe(false);
    expect(obj.spec).toEqual({});
    const strict = checkFields(JSON.parse('{"metadata":{"name":"d"},"__proto__":{}}'), DEPLOY, 'Strict');
    expect(strict.errors).toEqual(['unknown field "__proto__"']);
  });

  it('a required field is present only as an own field', () => {
    const r = checkFields({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ image: 'i' }] } }, POD, 'Strict', { required: true });
    expect(r.required).toContain('spec.containers[0].name');
  });
});

describe('nesting', () => {
  it('a body nested past 1,000 levels is the decoder\'s type error, free-form fields included', () => {
    let x: any = 1;
    for (let i = 0; i < 1000; i++) x = { a: x };
    const r = checkFields({ apiVersion: 'apps/v1', kind: 'ControllerRevision', metadata: { name: 'r' }, data: x, revision: 1 }, { group: 'apps', version: 'v1', kind: 'ControllerRevision' }, 'Strict');
    expect(r.typeError).toBe('json: exceeded max depth');
    expect(checkFields({ apiVersion: 'apps/v1', kind: 'ControllerRevision', metadata: { name: 'r' }, data: x.a, revision: 1 }, { group: 'apps', version: 'v1', kind: 'ControllerRevision' }, 'Strict').typeError).toBeUndefined();
  });
});
