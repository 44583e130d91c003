import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeEncryptionConfig, parseEncryptionConfig, parseGroupResource } from './config.js';
import { loadEncryptionConfig } from './load.js';
import { EncryptionMetrics } from './metrics.js';

const K32 = randomBytes(32).toString('base64');
const HEAD = 'apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n';
const parse = (body: string, reload = false) => () => parseEncryptionConfig(Buffer.from(body), '/etc/enc.yaml', reload);
const withResources = (resources: string, providers = `[{aescbc: {keys: [{name: k, secret: "${K32}"}]}}]`) => `${HEAD}resources:\n- resources: ${resources}\n  providers: ${providers}\n`;

describe('decoding', () => {
  it('reads YAML and JSON alike, with kube\'s KMS defaults', () => {
    const json = JSON.stringify({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'EncryptionConfiguration', resources: [{ resources: ['secrets'], providers: [{ kms: { apiVersion: 'v2', name: 'p', endpoint: 'unix:///tmp/kms.sock' } }, { identity: {} }] }] });
    const c = decodeEncryptionConfig(json);
    expect(c.resources[0].providers[0].kms).toEqual({ apiVersion: 'v2', name: 'p', endpoint: 'unix:///tmp/kms.sock', timeout: 3, timeoutText: '3s' });
    expect(c.resources[0].providers[1]).toEqual({ identity: {} });
    const v1 = decodeEncryptionConfig(`${HEAD}resources:\n- resources: [secrets]\n  providers:\n  - kms: {name: p, endpoint: "unix:///s", timeout: 1m30s}\n`);
    expect(v1.resources[0].providers[0].kms).toMatchObject({ apiVersion: 'v1', cachesize: 1000, timeout: 90 });
  });
  it('refuses unknown fields (strict decoding) and other kinds', () => {
    expect(parse(`${HEAD}resources:\n- resources: [secrets]\n  providers:\n  - aesgcmm: {}\n`)).toThrow(
      'error while parsing file: error decoding encryption provider configuration file "/etc/enc.yaml": strict decoding error: unknown field "resources[0].providers[0].aesgcmm"',
    );
    expect(parse(`${HEAD}resources:\n- resources: [secrets]\n  resources: [configmaps]\n  providers: [{identity: {}}]\n`)).toThrow('strict decoding error: yaml: unmarshal errors:\n  line 5: key "resources" already set in map');
    expect(parse('apiVersion: v1\nkind: Pod\n')).toThrow('no kind "Pod" is registered for version "v1"');
    expect(parse('resources: []\n')).toThrow("Object 'Kind' is missing in");
    expect(parse('')).toThrow('error while parsing file: error while loading file: encryption provider configuration file "/etc/enc.yaml" is empty');
  });
  it('parses group-resources as kube (the first dot splits)', () => {
    expect(parseGroupResource('secrets')).toEqual({ group: '', resource: 'secrets' });
    expect(parseGroupResource('deployments.apps')).toEqual({ group: 'apps', resource: 'deployments' });
    expect(parseGroupResource('*.')).toEqual({ group: '', resource: '*' });
    expect(parseGroupResource('*.*')).toEqual({ group: '*', resource: '*' });
  });
});

describe('validation, in kube\'s words', () => {
  it('needs resources and providers', () => {
    expect(parse(`${HEAD}resources: []\n`)).toThrow('error while parsing file: resources: Required value: at least one resources is required');
    expect(parse(`${HEAD}resources:\n- resources: []\n  providers: []\n`)).toThrow(
      'error while parsing file: [resources[0].resources: Required value: at least one resources[0].resources is required, resources[0].providers: Required value: at least one resources[0].providers is required]',
    );
  });
  it('checks key sizes, base64 and names', () => {
    expect(parse(withResources('[secrets]', `[{aesgcm: {keys: [{name: k, secret: "${randomBytes(8).toString('base64')}"}]}}]`))).toThrow(
      'error while parsing file: resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 8, expected one of [16 24 32]',
    );
    expect(parse(withResources('[secrets]', `[{secretbox: {keys: [{name: k, secret: "${randomBytes(16).toString('base64')}"}]}}]`))).toThrow(
      'resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 16, expected one of [32]',
    );
    expect(parse(withResources('[secrets]', '[{aescbc: {keys: [{name: k, secret: "not base64!"}]}}]'))).toThrow('resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded');
    expect(parse(withResources('[secrets]', '[{aescbc: {keys: [{secret: ""}]}}]'))).toThrow(
      '[resources[0].providers[0].aescbc.keys[0].name: Required value: name is a mandatory field for a key, resources[0].providers[0].aescbc.keys[0].secret: Required value: secret is a mandatory field for a key]',
    );
    expect(parse(withResources('[secrets]', '[{aescbc: {keys: []}}]'))).toThrow('resources[0].providers[0].aescbc.keys: Required value: at least one keys is required');
  });
  it('one provider per list element', () => {
    expect(parse(withResources('[secrets]', `[{identity: {}, aescbc: {keys: [{name: k, secret: "${K32}"}]}}]`))).toThrow('more than one provider specified in a single element, should split into different list elements');
    expect(parse(withResources('[secrets]', '[{}]'))).toThrow('provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity');
  });
  it('resource names and wildcards', () => {
    expect(parse(withResources('["*"]'))).toThrow(`resources[0].resources[0]: Invalid value: "*": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources`);
    expect(parse(withResources('[Secrets]'))).toThrow('resources[0].resources[0]: Invalid value: "Secrets": resource name should not contain capital letters');
    expect(parse(withResources('["events.events.k8s.io"]'))).toThrow(`'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file`);
    expect(parse(withResources('["ingresses.extensions"]'))).toThrow(`'extensions' group has been removed and cannot be used for encryption`);
    expect(parse(withResources('["secrets.*"]'))).toThrow('resources[0].resources[0]: Invalid value: "secrets.*": encrypting the same resource across groups is not supported');
    expect(parse(withResources('[serviceipallocations]'))).toThrow('resources which do not have REST API/s cannot be encrypted');
    expect(parse(withResources('[secrets, "*."]'))).toThrow(
      `resources[0].resources: Invalid value: []string{"secrets", "*."}: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked`,
    );
    expect(parse(withResources('[secrets, secrets]'))).toThrow('resources[0].resources: Invalid value: []string{"secrets", "secrets"}: the same resource cannot be specified multiple times');
    expect(parse(withResources('["*.*", "deployments.apps"]'))).toThrow('using overlapping resources');
    expect(parse(withResources('["*.apps", "configmaps"]'))).not.toThrow();
  });
  it('kms providers', () => {
    const kms = (k: string) => withResources('[secrets]', `[{kms: {${k}}}]`);
    expect(parse(kms('apiVersion: v2, name: "a:b", endpoint: "unix:///s"'))).toThrow(`resources[0].providers[0].kms.name: Invalid value: "a:b": invalid KMS provider name a:b, must not contain ':'`);
    expect(parse(kms('apiVersion: v2, name: a, endpoint: "tcp://1.2.3.4:5"'))).toThrow(`resources[0].providers[0].kms.endpoint: Invalid value: "tcp://1.2.3.4:5": unsupported scheme "tcp" for KMS provider, only unix is supported`);
    expect(parse(kms('apiVersion: v2, name: a'))).toThrow('resources[0].providers[0].kms.endpoint: Invalid value: "": endpoint is a mandatory field for a kms');
    expect(parse(kms('apiVersion: v2, name: a, endpoint: "unix:///s", timeout: 0s'))).toThrow('resources[0].providers[0].kms.timeout: Invalid value: 0s: timeout should be a positive value');
    expect(parse(kms('apiVersion: v2, name: a, endpoint: "unix:///s", cachesize: 10'))).toThrow('resources[0].providers[0].kms.cachesize: Invalid value: 10: cachesize is not supported in v2');
    expect(parse(kms('apiVersion: v3, name: a, endpoint: "unix:///s"'))).toThrow('resources[0].providers[0].kms.apiVersion: Invalid value: "v3": unsupported apiVersion apiVersion for KMS provider, only v1 and v2 are supported');
    const twice = withResources('[secrets]', '[{kms: {apiVersion: v2, name: a, endpoint: "unix:///s"}}, {kms: {apiVersion: v2, name: a, endpoint: "unix:///t"}}]');
    expect(parse(twice)).toThrow('resources[0].providers[1].kms.name: Invalid value: "a": duplicate KMS provider name a, names must be unique');
  });
});

describe('loading', () => {
  const metrics = new EncryptionMetrics();
  const file = (body: string) => {
    const p = join(mkdtempSync(join(tmpdir(), 'enc-')), 'enc.yaml');
    writeFileSync(p, body);
    return p;
  };
  it('refuses a resource masked by an earlier wildcard entry', async () => {
    const body = `${HEAD}resources:\n- resources: ["*."]\n  providers: [{identity: {}}]\n- resources: [secrets]\n  providers: [{identity: {}}]\n`;
    await expect(loadEncryptionConfig(file(body), { reload: false, metrics })).rejects.toThrow('error while building transformers: resource "secrets" is masked by earlier rule "*."');
    const all = `${HEAD}resources:\n- resources: ["*.*"]\n  providers: [{identity: {}}]\n- resources: ["deployments.apps"]\n  providers: [{identity: {}}]\n`;
    await expect(loadEncryptionConfig(file(all), { reload: false, metrics })).rejects.toThrow('resource "deployments.apps" is masked by earlier rule "*.*"');
  });
  it('KMS v1 is off in 1.33', async () => {
    await expect(loadEncryptionConfig(file(withResources('[secrets]', '[{kms: {name: a, endpoint: "unix:///s"}}]')), { reload: false, metrics })).rejects.toThrow('KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead.');
  });
  it('a missing file', async () => {
    await expect(loadEncryptionConfig('/nonexistent/enc.yaml', { reload: false, metrics })).rejects.toThrow(
      'error while parsing file: error while loading file: error reading encryption provider configuration file "/nonexistent/enc.yaml": open /nonexistent/enc.yaml: no such file or directory',
    );
  });
});
