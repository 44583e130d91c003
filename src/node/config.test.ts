// Spec 2.11's merge table, one test per row, on real files in a --config-dir.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, mergeConfig, parseDuration, withDefaults, ConfigError } from './config.js';

const HEAD = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';

function setup(main: string, dropIns: Record<string, string>): { file: string; dir: string } {
  const root = mkdtempSync(join(tmpdir(), 'ks-node-config-'));
  const file = join(root, 'config.yaml');
  writeFileSync(file, HEAD + main);
  const dir = join(root, 'config.d');
  mkdirSync(dir);
  for (const [name, body] of Object.entries(dropIns)) writeFileSync(join(dir, name), HEAD + body);
  return { file, dir };
}

describe('config-dir merge (spec 2.11)', () => {
  it('row "Scalar field": the directory value overrides the main value', () => {
    const { file, dir } = setup('port: 10250\nmaxPods: 110\nnodeStatusUpdateFrequency: 10s\n', { '10-port.conf': 'port: 11250\nnodeStatusUpdateFrequency: 4s\n' });
    const c = loadConfig(file, dir);
    expect(c.port).toBe(11250);
    expect(c.nodeStatusUpdateFrequency).toBe('4s');
    expect(c.maxPods).toBe(110); // not named by the drop-in: kept
  });

  it('row "Nested structure": merged field by field', () => {
    const { file, dir } = setup('authentication:\n  anonymous:\n    enabled: false\n  webhook:\n    enabled: true\n    cacheTTL: 2m0s\n  x509:\n    clientCAFile: /etc/ca.crt\n', {
      '10-auth.conf': 'authentication:\n  webhook:\n    cacheTTL: 30s\n',
    });
    const c = loadConfig(file, dir);
    expect(c.authentication).toEqual({ anonymous: { enabled: false }, webhook: { enabled: true, cacheTTL: '30s' }, x509: { clientCAFile: '/etc/ca.crt' } });
  });

  it('row "List": the whole list is replaced', () => {
    const { file, dir } = setup('registerWithTaints:\n- {key: a, effect: NoSchedule}\n- {key: b, effect: NoExecute}\nclusterDNS: [10.0.0.10, 10.0.0.11]\n', {
      '10-taints.conf': 'registerWithTaints:\n- {key: c, value: x, effect: PreferNoSchedule}\n',
    });
    const c = loadConfig(file, dir);
    expect(c.registerWithTaints).toEqual([{ key: 'c', value: 'x', effect: 'PreferNoSchedule' }]);
    expect(c.clusterDNS).toEqual(['10.0.0.10', '10.0.0.11']);
  });

  it('row "Map": individual keys are overridden or added', () => {
    const { file, dir } = setup('featureGates:\n  ContainerCheckpoint: true\n  KubeletFineGrainedAuthz: true\nsystemReserved:\n  cpu: 100m\n  memory: 100Mi\n', {
      '10-gates.conf': 'featureGates:\n  ContainerCheckpoint: false\n  SomeAlpha: true\nsystemReserved:\n  memory: 200Mi\n',
    });
    const c = loadConfig(file, dir);
    expect(c.featureGates).toEqual({ ContainerCheckpoint: false, KubeletFineGrainedAuthz: true, SomeAlpha: true });
    expect(c.systemReserved).toEqual({ cpu: '100m', memory: '200Mi' });
  });

  it('row "Map", string to list of strings: the whole list of an overridden key is replaced', () => {
    const { file, dir } = setup('staticPodURLHeader:\n  X-A: [a1, a2]\n  X-B: [b1]\n', { '10-headers.conf': 'staticPodURLHeader:\n  X-A: [a3]\n  X-C: [c1, c2]\n' });
    const c = loadConfig(file, dir);
    expect(c.staticPodURLHeader).toEqual({ 'X-A': ['a3'], 'X-B': ['b1'], 'X-C': ['c1', 'c2'] });
  });

  it('drop-ins apply in name order, only *.conf files, the later winning', () => {
    const { file, dir } = setup('port: 1\n', { '20-b.conf': 'port: 3\n', '10-a.conf': 'port: 2\nmaxPods: 7\n', '30-c.yaml': 'port: 4\n', '05-z.conf.bak': 'port: 5\n' });
    const c = loadConfig(file, dir);
    expect(c.port).toBe(3);
    expect(c.maxPods).toBe(7);
  });

  it('a drop-in without apiVersion and kind is refused; a wrong kind too', () => {
    const root = mkdtempSync(join(tmpdir(), 'ks-node-config-'));
    writeFileSync(join(root, '10.conf'), 'port: 3\n');
    expect(() => loadConfig(undefined, root)).toThrow(ConfigError);
    writeFileSync(join(root, '10.conf'), 'apiVersion: v1\nkind: Pod\n');
    expect(() => loadConfig(undefined, root)).toThrow(/kind Pod/);
  });

  it('mergeConfig leaves its arguments unchanged; a map of structures replaces a key whole', () => {
    const base = { authentication: { webhook: { enabled: true } }, systemReserved: { cpu: '1' } };
    const over = { authentication: { webhook: { cacheTTL: '1s' } } };
    const m = mergeConfig(base, over);
    expect(base.authentication.webhook).toEqual({ enabled: true });
    expect(m.authentication).toEqual({ webhook: { enabled: true, cacheTTL: '1s' } });
    const m2 = mergeConfig({ evictionSoft: { a: '1' } } as any, { evictionSoft: { b: '2' } } as any);
    expect(m2.evictionSoft).toEqual({ a: '1', b: '2' });
  });

  it('defaults fill what the files leave out; durations parse as Go does', () => {
    const c = withDefaults({ port: 1 });
    expect(c.port).toBe(1);
    expect(c.authorization?.mode).toBe('Webhook');
    expect(c.nodeStatusReportFrequency).toBe('5m0s');
    expect(parseDuration('5m0s', 0)).toBe(300_000);
    expect(parseDuration('1h2m3.5s', 0)).toBe(3_723_500);
    expect(parseDuration(undefined, 7)).toBe(7);
    expect(() => parseDuration('10 seconds', 0)).toThrow();
  });
});
