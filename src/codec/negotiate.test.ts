import { afterEach, describe, expect, it } from 'vitest';
import { features } from '../features.js';
import { negotiateError, negotiateOutput, negotiateStream, parseAccept, streamContentType } from './negotiate.js';

afterEach(() => features.reset());

describe('parseAccept', () => {
  it('orders by q, then concrete before wildcard, keeping the client order otherwise', () => {
    const c = parseAccept('*/*;q=0.5, application/yaml;q=0.9, application/json, text/*');
    expect(c.map((x) => `${x.type}/${x.subType}`)).toEqual(['application/json', 'text/*', 'application/yaml', '*/*']);
  });
  it('keeps parameters, drops malformed ranges', () => {
    const c = parseAccept('application/json;as=Table;g=meta.k8s.io;v=v1, garbage, */*');
    expect(c).toHaveLength(2);
    expect(c[0].params).toEqual({ as: 'Table', g: 'meta.k8s.io', v: 'v1' });
  });
});

describe('negotiateOutput', () => {
  it('defaults to JSON', () => {
    expect(negotiateOutput(undefined).mediaType).toBe('application/json');
    expect(negotiateOutput('*/*').mediaType).toBe('application/json');
    expect(negotiateOutput('application/*').mediaType).toBe('application/json');
  });
  it('picks YAML and protobuf', () => {
    expect(negotiateOutput('application/yaml').mediaType).toBe('application/yaml');
    expect(negotiateOutput('application/vnd.kubernetes.protobuf, application/json').mediaType).toBe('application/vnd.kubernetes.protobuf');
  });
  it('reads the Table and PartialObjectMetadata conversions', () => {
    const kubectl = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
    expect(negotiateOutput(kubectl)).toEqual({ mediaType: 'application/json', as: { kind: 'Table', group: 'meta.k8s.io', version: 'v1' }, pretty: false });
    const meta = 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
    expect(negotiateOutput(meta)).toMatchObject({ mediaType: 'application/vnd.kubernetes.protobuf', as: { kind: 'PartialObjectMetadataList' } });
    expect(negotiateOutput('application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1').as?.version).toBe('v1beta1');
  });
  it('skips a clause it cannot honour and falls through to the next', () => {
    // Table is JSON/YAML only; an unknown conversion or group is skipped.
    expect(negotiateOutput('application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/json')).toEqual({ mediaType: 'application/json', pretty: false });
    expect(negotiateOutput('application/json;as=Foo;g=meta.k8s.io;v=v1, application/yaml').mediaType).toBe('application/yaml');
    expect(negotiateOutput('application/json;as=Table;g=apps;v=v1, application/yaml').mediaType).toBe('application/yaml');
  });
  it('406 with the served types when nothing fits', () => {
    expect(() => negotiateOutput('text/html')).toThrowError('only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf');
    expect(() => negotiateOutput('application/json;as=Table')).toThrowError(/only the following/);
    try {
      negotiateOutput('application/cbor');
    } catch (e: any) {
      expect(e.code).toBe(406);
      expect(e.reason).toBe('NotAcceptable');
    }
  });
  it('CBOR only with its gate on', () => {
    features.set('CBORServingAndStorage=true');
    expect(negotiateOutput('application/cbor').mediaType).toBe('application/cbor');
    expect(() => negotiateOutput('text/html')).toThrowError(/application\/vnd.kubernetes.protobuf, application\/cbor$/);
  });
});

describe('negotiateStream', () => {
  it('refuses YAML (no stream serializer) with the stream types', () => {
    expect(() => negotiateStream('application/yaml')).toThrowError('only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch');
  });
  it('takes JSON, protobuf, and CBOR as cbor-seq', () => {
    expect(streamContentType(negotiateStream(undefined).mediaType)).toBe('application/json');
    expect(streamContentType(negotiateStream('application/vnd.kubernetes.protobuf').mediaType)).toBe('application/vnd.kubernetes.protobuf;stream=watch');
    features.set('CBORServingAndStorage=true');
    expect(streamContentType(negotiateStream('application/cbor').mediaType)).toBe('application/cbor-seq');
  });
});

describe('negotiateError', () => {
  it('never converts and falls back to JSON', () => {
    expect(negotiateError('application/json;as=Table;g=meta.k8s.io;v=v1').mediaType).toBe('application/json');
    expect(negotiateError('text/html').mediaType).toBe('application/json');
    expect(negotiateError('application/vnd.kubernetes.protobuf, application/json').mediaType).toBe('application/vnd.kubernetes.protobuf');
  });
});
