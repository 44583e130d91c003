import { describe, expect, it } from 'vitest';
import { decodeProtobufObject } from './protobuf.js';
import { encodeEnveloped, fromJson, protoRoot, protoTypeOf, watchFrame } from './protobuf-encode.js';
import { catalogData } from '../api/catalog-data.js';
import { decodeCbor, encodeCbor } from './cbor.js';
import { encodeList, encodeObject, yamlOf, type EncodeContext } from './representation.js';
import type { Representation } from './negotiate.js';
import { parse as parseYaml } from 'yaml';

const roundTrip = (obj: any) => decodeProtobufObject(encodeEnveloped(obj)!);

describe('protobuf encoding from the JSON form', () => {
  it('round-trips a Deployment: IntOrString, zero pointers, managedFields (Time, FieldsV1)', () => {
    const d = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'web',
        namespace: 'default',
        uid: 'u-1',
        resourceVersion: '42',
        generation: 3,
        creationTimestamp: '2026-01-02T03:04:05Z',
        labels: { app: 'web' },
        managedFields: [{ manager: 'kubectl', operation: 'Update', apiVersion: 'apps/v1', time: '2026-01-02T03:04:05Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }],
      },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '100m' } } }] } },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: 1 } },
        revisionHistoryLimit: 10,
        progressDeadlineSeconds: 600,
      },
      status: {},
    };
    expect(roundTrip(d)).toEqual(d);
  });
  it('round-trips MicroTime, bytes and maps', () => {
    const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l' }, spec: { holderIdentity: 'me', leaseDurationSeconds: 15, renewTime: '2026-01-02T03:04:05.123456Z' } };
    expect(roundTrip(lease)).toEqual(lease);
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { k: Buffer.from('hello\0').toString('base64') }, type: 'Opaque' };
    expect(roundTrip(secret)).toEqual(secret);
  });
  it('every kind of the catalog, and its list, has a message (all group-versions, served or not)', () => {
    const missing: string[] = [];
    for (const gv of catalogData) {
      for (const r of gv.resources) {
        const kinds = r.verbs.includes('list') ? [r.kind, r.listKind] : [r.kind];
        for (const k of kinds) if (!protoTypeOf(gv.groupVersion, k)) missing.push(`${gv.groupVersion}/${k}`);
        for (const sub of r.subresources) {
          const av = sub.version ? (sub.group ? `${sub.group}/${sub.version}` : sub.version) : gv.groupVersion;
          if (!protoTypeOf(av, sub.kind)) missing.push(`${r.resource}/${sub.name}: ${av}/${sub.kind}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
  it('keeps the zero scalars Go\'s JSON encoder writes (no omitempty), drops the others', () => {
    const T = protoRoot().lookupType('k8s.io.api.apps.v1.ReplicaSet');
    const U = protoRoot().lookupType('k8s.io.apimachinery.pkg.runtime.Unknown');
    // as client-go writes it: every non-pointer field, zero or not
    const msg = T.encode(T.fromObject({ metadata: { name: 'rs', generation: 0 }, status: { replicas: 0, readyReplicas: 0, observedGeneration: 0 } })).finish();
    const body = Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), Buffer.from(U.encode({ typeMeta: { apiVersion: 'apps/v1', kind: 'ReplicaSet' }, raw: msg }).finish())]);
    expect(decodeProtobufObject(body)).toEqual({ apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'rs' }, status: { replicas: 0 } });
  });
  it('writes Duration as nanoseconds', () => {
    const t = protoRoot().lookupType('k8s.io.apimachinery.pkg.apis.meta.v1.Duration');
    expect(fromJson(t, '1h2m3.5s')).toEqual({ duration: 3723.5e9 });
  });
  it('frames a watch event as client-go reads it', () => {
    const env = encodeEnveloped({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } })!;
    const f = watchFrame('ADDED', env);
    expect(f.readUInt32BE(0)).toBe(f.length - 4);
    const ev: any = protoRoot().lookupType('k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent').decode(f.subarray(4));
    expect(ev.type).toBe('ADDED');
    expect(Buffer.from(ev.object.raw).equals(env)).toBe(true);
  });
});

describe('protobuf fields whose JSON form differs from the wire', () => {
  /** The message inside the envelope, decoded by protobufjs with the upstream field names. */
  const wire = (obj: any, type: string) => {
    const env = encodeEnveloped(obj)!;
    const U = protoRoot().lookupType('k8s.io.apimachinery.pkg.runtime.Unknown');
    const T = protoRoot().lookupType(type);
    return T.toObject(T.decode((U.decode(env.subarray(4)) as any).raw), { longs: Number }) as any;
  };

  it('Go inline structs are nested messages on the wire: Probe.handler, Volume.volumeSource, localObjectReference', () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: {
        containers: [
          {
            name: 'c',
            image: 'i',
            env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
            envFrom: [{ configMapRef: { name: 'cm' } }],
            readinessProbe: { exec: { command: ['true'] }, periodSeconds: 3 },
            lifecycle: { preStop: { sleep: { seconds: 5 } } },
          },
        ],
        ephemeralContainers: [{ name: 'debug', image: 'busybox', targetContainerName: 'c' }],
        volumes: [{ name: 'v', secret: { secretName: 's', items: [{ key: 'a', path: 'b' }] } }, { name: 'p', projected: { sources: [{ configMap: { name: 'cm' } }] } }],
      },
    };
    expect(roundTrip(pod)).toEqual(pod);
    const w = wire(pod, 'k8s.io.api.core.v1.Pod');
    const c = w.spec.containers[0];
    expect(c.readinessProbe.handler.exec.command).toEqual(['true']);
    expect(c.env[0].valueFrom.secretKeyRef.localObjectReference.name).toBe('s');
    expect(c.envFrom[0].configMapRef.localObjectReference.name).toBe('cm');
    expect(w.spec.ephemeralContainers[0].ephemeralContainerCommon.name).toBe('debug');
    expect(w.spec.volumes[0].volumeSource.secret.secretName).toBe('s');
    expect(w.spec.volumes[1].volumeSource.projected.sources[0].configMap.localObjectReference.name).toBe('cm');
  });

  it('ingress rules, persistent volumes and webhook rules (inline two deep)', () => {
    const ing = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'i' }, spec: { rules: [{ host: 'a.example', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 's', port: { number: 80 } } } }] } }] } };
    expect(roundTrip(ing)).toEqual(ing);
    expect(wire(ing, 'k8s.io.api.networking.v1.Ingress').spec.rules[0].ingressRuleValue.http.paths[0].path).toBe('/');
    const pv = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv' }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/data' } } };
    expect(roundTrip(pv)).toEqual(pv);
    expect(wire(pv, 'k8s.io.api.core.v1.PersistentVolume').spec.persistentVolumeSource.hostPath.path).toBe('/data');
    const hook = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'h' },
      webhooks: [
        {
          name: 'h.example.com',
          clientConfig: { url: 'https://h.example.com/' },
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: '*' }],
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          matchConditions: [{ name: 'm', expression: 'true' }],
        },
      ],
    };
    expect(roundTrip(hook)).toEqual(hook);
    const wh = wire(hook, 'k8s.io.api.admissionregistration.v1.ValidatingWebhookConfiguration');
    expect(wh.Webhooks[0].rules[0]).toEqual({ operations: ['CREATE'], rule: { apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: '*' } });
  });

  it('proto names that are not the JSON names: apiGroup, uid, expression, $ref, x-kubernetes-*', () => {
    const ic = { apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name: 'ic' }, spec: { controller: 'x.io/c', parameters: { apiGroup: 'x.io', kind: 'P', name: 'p' } } };
    expect(roundTrip(ic)).toEqual(ic);
    expect(wire(ic, 'k8s.io.api.networking.v1.IngressClass').spec.parameters.aPIGroup).toBe('x.io');
    const vap = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'v' },
      spec: { matchConstraints: { resourceRules: [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }] }, validations: [{ expression: 'object.spec.replicas <= 5' }], variables: [{ name: 'n', expression: '1' }] },
    };
    expect(roundTrip(vap)).toEqual(vap);
    const w = wire(vap, 'k8s.io.api.admissionregistration.v1.ValidatingAdmissionPolicy');
    expect(w.spec.validations[0].Expression).toBe('object.spec.replicas <= 5');
    expect(w.spec.matchConstraints.resourceRules[0].ruleWithOperations.rule.resources).toEqual(['deployments']);
  });

  it('CRD schemas: JSON values, schema-or-array, schema-or-bool, schema-or-strings, zero bounds', () => {
    const schema = {
      type: 'object',
      required: ['spec'],
      properties: {
        spec: {
          type: 'object',
          'x-kubernetes-preserve-unknown-fields': true,
          properties: {
            size: { type: 'integer', minimum: 0, maximum: 10, default: 3 },
            mode: { type: 'string', enum: ['a', 'b'] },
            tags: { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set' },
            tuple: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }] },
            labels: { type: 'object', additionalProperties: { type: 'string' } },
            closed: { type: 'object', additionalProperties: false },
          },
          dependencies: { mode: ['size'] },
          'x-kubernetes-validations': [{ rule: 'self.size < 10', message: 'too big' }],
        },
      },
    };
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.x.io' },
      spec: { group: 'x.io', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' }, scope: 'Namespaced', versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: schema } }] },
    };
    expect(roundTrip(crd)).toEqual(crd);
    const w = wire(crd, 'k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition');
    const spec = w.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(spec.xKubernetesPreserveUnknownFields).toBe(true);
    expect(spec.properties.tags.xKubernetesListType).toBe('set');
    expect(spec.properties.closed.additionalProperties).toEqual({ allows: false });
    expect(spec.dependencies.mode.property).toEqual(['size']);
    expect(spec.properties.tuple.items.jSONSchemas).toHaveLength(2);
    expect(Buffer.from(spec.properties.size.default.raw).toString()).toBe('3');
  });
});

describe('representations', () => {
  const ctx = { target: { info: { group: '', resource: 'configmaps' } } as any, apiVersion: 'v1', kind: 'ConfigMap', listKind: 'ConfigMapList' } as EncodeContext;
  const entry = () => ({ json: Buffer.from(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'a', resourceVersion: '5' }, data: { z: '1', b: 'true' } })) });
  it('memoizes each encoding on the entry', () => {
    const e = entry();
    const pb: Representation = { mediaType: 'application/vnd.kubernetes.protobuf', pretty: false };
    const a = encodeObject(e, pb, ctx);
    expect(encodeObject(e, pb, ctx)).toBe(a);
    const y: Representation = { mediaType: 'application/yaml', pretty: false };
    expect(encodeObject(e, y, ctx)).toBe(encodeObject(e, y, ctx));
  });
  it('YAML has sorted keys and quotes what YAML would misread', () => {
    const text = encodeObject(entry(), { mediaType: 'application/yaml', pretty: false }, ctx).toString();
    expect(text.split('\n')[0]).toBe('apiVersion: v1');
    expect(parseYaml(text).data).toEqual({ z: '1', b: 'true' });
    const y = yamlOf({ items: [{ a: 1 }], metadata: { creationTimestamp: '2026-01-02T03:04:05Z' }, data: { on: 'yes', y: 'n', mode: '0644', t: '1:20', s: 'plain' } }).toString();
    expect(y).toBe(
      ['data:', '  mode: "0644"', '  "on": "yes"', '  s: plain', '  t: "1:20"', '  "y": "n"', 'items:', '- a: 1', 'metadata:', '  creationTimestamp: "2026-01-02T03:04:05Z"', ''].join('\n'),
    );
  });
  it('CBOR is self-described and decodes back', () => {
    const b = encodeCbor({ a: 1, s: 'x' });
    expect([...b.subarray(0, 3)]).toEqual([0xd9, 0xd9, 0xf7]);
    expect(decodeCbor(b)).toEqual({ a: 1, s: 'x' });
  });
  it('a PartialObjectMetadataList keeps list metadata and each item metadata only', () => {
    const r: Representation = { mediaType: 'application/json', as: { kind: 'PartialObjectMetadataList', group: 'meta.k8s.io', version: 'v1' }, pretty: false };
    const l = JSON.parse(encodeList([entry()], { resourceVersion: '9' }, r, ctx).toString());
    expect(l).toEqual({ kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: '9' }, items: [{ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name: 'a', resourceVersion: '5' } }] });
  });
});
