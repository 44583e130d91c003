import { describe, it, expect, beforeAll } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readAdmissionConfiguration } from './config.js';
import { parseArgs } from '../options.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'admission-config-'));
});
const write = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text, { mode: 0o600 });
  return p;
};

describe('--admission-control-config-file', () => {
  it('reads an AdmissionConfiguration v1 in YAML: inline configuration, and a path relative to the file', () => {
    write('eventratelimit.yaml', 'apiVersion: eventratelimit.admission.k8s.io/v1alpha1\nkind: Configuration\nlimits:\n- type: Server\n  qps: 5\n  burst: 10\n');
    const p = write(
      'admission.yaml',
      [
        'apiVersion: apiserver.config.k8s.io/v1',
        'kind: AdmissionConfiguration',
        'plugins:',
        '- name: PodSecurity',
        '  configuration:',
        '    apiVersion: pod-security.admission.config.k8s.io/v1',
        '    kind: PodSecurityConfiguration',
        '    defaults: {enforce: baseline, enforce-version: latest}',
        '    exemptions: {namespaces: [kube-system]}',
        '- name: EventRateLimit',
        '  path: eventratelimit.yaml',
        '- name: AlwaysPullImages',
        '',
      ].join('\n'),
    );
    const m = readAdmissionConfiguration(p);
    expect(m.get('PodSecurity')).toEqual({
      apiVersion: 'pod-security.admission.config.k8s.io/v1',
      kind: 'PodSecurityConfiguration',
      defaults: { enforce: 'baseline', 'enforce-version': 'latest' },
      exemptions: { namespaces: ['kube-system'] },
    });
    expect((m.get('EventRateLimit') as any).limits[0].qps).toBe(5);
    expect(m.has('AlwaysPullImages')).toBe(true);
    expect(m.get('AlwaysPullImages')).toBeUndefined();
  });

  it('reads v1alpha1 and JSON; no file is no configuration', () => {
    const p = write('a.json', JSON.stringify({ apiVersion: 'apiserver.config.k8s.io/v1alpha1', kind: 'AdmissionConfiguration', plugins: [{ name: 'ResourceQuota', configuration: { a: 1 } }] }));
    expect(readAdmissionConfiguration(p).get('ResourceQuota')).toEqual({ a: 1 });
    expect(readAdmissionConfiguration('').size).toBe(0);
  });

  it("stops start-up on a file that is missing or of another kind, with kube's words", () => {
    expect(() => readAdmissionConfiguration(join(dir, 'nope.yaml'))).toThrow(`failed to read plugin config: unable to read admission control configuration from "${join(dir, 'nope.yaml')}" [open ${join(dir, 'nope.yaml')}: no such file or directory]`);
    const p = write('other.yaml', 'apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n');
    expect(() => readAdmissionConfiguration(p)).toThrow('failed to read plugin config: no kind "EncryptionConfiguration" is registered for version "apiserver.config.k8s.io/v1"');
    const q = write('nokind.yaml', 'plugins: []\n');
    expect(() => readAdmissionConfiguration(q)).toThrow("failed to read plugin config: Object 'Kind' is missing in 'plugins: []'");
    expect(() => parseArgs(['--admission-control-config-file', join(dir, 'nope.yaml')])).toThrow(/unable to read admission control configuration/);
  });

  it('takes the legacy unversioned files of ImagePolicyWebhook and PodNodeSelector as kube does', () => {
    const p = write('legacy.yaml', 'podNodeSelectorPluginConfig:\n  clusterDefaultNodeSelector: a=b\n');
    const m = readAdmissionConfiguration(p, ['NamespaceLifecycle', 'PodNodeSelector']);
    expect([...m.keys()]).toEqual(['PodNodeSelector']);
  });

  it("--enable-admission-plugins with an unknown plugin stops start-up with kube's message", () => {
    expect(() => parseArgs(['--enable-admission-plugins', 'Priority,NoSuch'])).toThrow('enable-admission-plugins plugin "NoSuch" is unknown');
    expect(() => parseArgs(['--disable-admission-plugins', 'Nope'])).toThrow('disable-admission-plugins plugin "Nope" is unknown');
    const o = parseArgs(['--enable-admission-plugins', 'AlwaysPullImages', '--disable-admission-plugins', 'Priority']) as any;
    expect([o.enableAdmissionPlugins, o.disableAdmissionPlugins]).toEqual([['AlwaysPullImages'], ['Priority']]);
  });
});
