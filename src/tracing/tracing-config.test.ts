import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTracingConfig, tracesUrl } from './tracing-config.js';

const dir = mkdtempSync(join(tmpdir(), 'tracing-config-'));
const file = (text: string) => {
  const f = join(dir, `c${Math.random()}.yaml`);
  writeFileSync(f, text);
  return f;
};

describe('readTracingConfig', () => {
  it('takes v1, v1beta1 and v1alpha1; the endpoint defaults to the OTLP/HTTP port', () => {
    for (const v of ['v1', 'v1beta1', 'v1alpha1']) {
      expect(readTracingConfig(file(`apiVersion: apiserver.config.k8s.io/${v}\nkind: TracingConfiguration\n`))).toEqual({ url: 'http://localhost:4318/v1/traces', endpoint: 'localhost:4318', samplingRatePerMillion: 0 });
    }
    expect(readTracingConfig(file('apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: collector:4318\nsamplingRatePerMillion: 500\n'))).toMatchObject({ url: 'http://collector:4318/v1/traces', samplingRatePerMillion: 500 });
  });

  it('a URL endpoint is used as given, /v1/traces added to a bare one', () => {
    expect(tracesUrl('https://otel.example:4318')).toBe('https://otel.example:4318/v1/traces');
    expect(tracesUrl('http://otel.example:4318/custom/path')).toBe('http://otel.example:4318/custom/path');
  });

  it('refuses another kind, a rate out of range, a bad endpoint', () => {
    expect(() => readTracingConfig(file('apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n'))).toThrow(/no kind "EncryptionConfiguration" is registered for version "apiserver.config.k8s.io\/v1"/);
    expect(() => readTracingConfig(file('apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: -1\n'))).toThrow(/sampling rate must be positive/);
    expect(() => readTracingConfig(file('apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 1000001\n'))).toThrow(/less than or equal to one million/);
    expect(() => readTracingConfig(file('apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: "http://[bad"\n'))).toThrow(/endpoint: Invalid value/);
    expect(() => readTracingConfig(join(dir, 'missing.yaml'))).toThrow(/unable to read tracing configuration/);
  });
});
