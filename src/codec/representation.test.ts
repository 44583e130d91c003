import { describe, expect, it } from 'vitest';
import { decodeProtobufObject } from './protobuf.js';
import { encodeEnveloped, fromJson, protoRoot, watchFrame } from './protobuf-encode.js';
import { decodeCbor, encodeCbor } from './cbor.js';
import { encodeList, encodeObject, type EncodeContext } from './representation.js';
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
