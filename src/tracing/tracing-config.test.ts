import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { grpcTarget, readTracingConfig } from './tracing-config.js';

const dir = mkdtempSync(join(tmpdir(), 'tracing-config-'));
const file = (text: string) => {
  const f = join(dir, `c${Math.random()}.yaml`);
  writeFileSync(f, text);
  return f;
};

describe('readTracingConfig', () => {
  it('takes v1, v1beta1 and v1alpha1; the endpoint defaults to kube\'s, OTLP/gRPC\'s localhost:4317', () => {
    for (const v of ['v1', 'v1beta1', 'v1alpha1']) {
      expect(readTracingConfig(file(`apiVersion: apiserver.config.k8s.io/${v}\nkind: TracingConfiguration\n`))).toEqual({ target: 'localhost:4317', endpoint: 'localhost:4317', samplingRatePerMillion: 0 });
    }
    expect(readTracingConfig(file('apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: collector:4317\nsamplingRatePerMillion: 500\n'))).toMatchObject({ target: 'collector:4317', samplingRatePerMillion: 500 });
  });

  it('a gRPC name with the dns or unix scheme is a target; an http(s) URL is refused with kube\'s message', () => {
    expect(grpcTarget('[::1]:4317')).toEqual({ target: '[::1]:4317' });
    expect(grpcTarget('dns:///otel.example:4317')).toEqual({ target: 'otel.example:4317' });
    expect(grpcTarget('dns://10.0.0.53/otel.example:4317')).toEqual({ target: 'otel.example:4317' });
    expect(grpcTarget('unix:///run/otel.sock')).toEqual({ target: 'unix:///run/otel.sock' });
    expect(grpcTarget('https://otel.example:4317')).toEqual({
      error: 'endpoint: Invalid value: "https://otel.example:4317": unsupported scheme: https.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md',
    });
    expect(grpcTarget('unix-abstract://otel')).toMatchObject({ error: expect.stringMatching(/not supported/) });
    expect(() => readTracingConfig(file('apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: http://otel:4318\n'))).toThrow(/unsupported scheme: http\./);
  });

  it('refuses another kind, a rate out of range, a bad endpoint', () => {
    expect(() => readTracingConfig(file('apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n'))).toThrow(/no kind "EncryptionConfiguration" is registered for version "apiserver.config.k8s.io\/v1"/);
    expect(() => readTracingConfig(file('apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: -1\n'))).toThrow(/sampling rate must be positive/);
    expect(() => readTracingConfig(file('apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 1000001\n'))).toThrow(/less than or equal to one million/);
    expect(() => readTracingConfig(file('apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: "http://[bad"\n'))).toThrow(/endpoint: Invalid value/);
    expect(() => readTracingConfig(join(dir, 'missing.yaml'))).toThrow(/unable to read tracing configuration/);
  });
});
