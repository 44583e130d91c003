import { describe, it, expect } from 'vitest';
import './index.js';
import { ALL_ORDERED_PLUGINS, DEFAULT_ON_PLUGINS, buildAdmissionChain, enabledPluginNames, registerPlugin, registeredPlugins, validatePluginFlags } from './registry.js';

const objects = { get: () => undefined, list: () => [] };

describe('the admission order', () => {
  it("is kube 1.33's AllOrderedPlugins, with policies, webhooks and ResourceQuota at the end", () => {
    expect(ALL_ORDERED_PLUGINS).toEqual([
      'AlwaysAdmit', 'NamespaceAutoProvision', 'NamespaceLifecycle', 'NamespaceExists', 'LimitPodHardAntiAffinityTopology', 'LimitRanger', 'ServiceAccount',
      'NodeRestriction', 'TaintNodesByCondition', 'AlwaysPullImages', 'ImagePolicyWebhook', 'PodSecurity', 'PodNodeSelector', 'Priority', 'DefaultTolerationSeconds',
      'PodTolerationRestriction', 'EventRateLimit', 'ExtendedResourceToleration', 'DefaultStorageClass', 'StorageObjectInUseProtection',
      'OwnerReferencesPermissionEnforcement', 'PersistentVolumeClaimResize', 'RuntimeClass', 'CertificateApproval', 'CertificateSigning',
      'ClusterTrustBundleAttest', 'CertificateSubjectRestriction', 'DefaultIngressClass', 'DenyServiceExternalIPs', 'PodTopologyLabels',
      'MutatingAdmissionPolicy', 'MutatingAdmissionWebhook', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionWebhook', 'ResourceQuota', 'AlwaysDeny',
    ]);
    for (const n of DEFAULT_ON_PLUGINS) expect(ALL_ORDERED_PLUGINS).toContain(n);
  });

  it('builds the chain of the registered default-on plugins in that order; an unregistered name is skipped', () => {
    expect(registeredPlugins()).toEqual([
      'NamespaceLifecycle', 'LimitRanger', 'ServiceAccount', 'NodeRestriction', 'PodSecurity', 'Priority', 'DefaultTolerationSeconds', 'DefaultStorageClass', 'StorageObjectInUseProtection', 'CertificateApproval', 'CertificateSigning', 'CertificateSubjectRestriction', 'DefaultIngressClass', 'MutatingAdmissionPolicy', 'MutatingAdmissionWebhook', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionWebhook', 'ResourceQuota',
    ]);
    // NodeRestriction is registered but default-off, as in kube
    expect(buildAdmissionChain(objects).plugins.map((p) => p.name)).toEqual(registeredPlugins().filter((n) => n !== 'NodeRestriction'));
    expect(buildAdmissionChain(objects, { enable: ['NodeRestriction'] }).plugins.map((p) => p.name)).toEqual(registeredPlugins());
    const names = buildAdmissionChain(objects, { disable: ['Priority', 'LimitRanger'], enable: ['AlwaysPullImages'] }).plugins.map((p) => p.name);
    expect(names).toEqual(['NamespaceLifecycle', 'ServiceAccount', 'PodSecurity', 'DefaultTolerationSeconds', 'DefaultStorageClass', 'StorageObjectInUseProtection', 'CertificateApproval', 'CertificateSigning', 'CertificateSubjectRestriction', 'DefaultIngressClass', 'MutatingAdmissionPolicy', 'MutatingAdmissionWebhook', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionWebhook', 'ResourceQuota']);
  });

  it('enabled names: default-on less the disabled, plus the enabled, in run order', () => {
    const on = enabledPluginNames(['AlwaysDeny', 'NamespaceExists'], ['PodSecurity']);
    expect(on[0]).toBe('NamespaceLifecycle');
    expect(on[1]).toBe('NamespaceExists');
    expect(on).not.toContain('PodSecurity');
    expect(on.at(-1)).toBe('AlwaysDeny');
    expect(on.slice(-5)).toEqual(['MutatingAdmissionWebhook', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionWebhook', 'ResourceQuota', 'AlwaysDeny']);
  });

  it('a plugin registers itself by name and gets its configuration and the environment', () => {
    let seen: unknown[] = [];
    class Probe {
      name = 'AlwaysPullImages';
    }
    registerPlugin('AlwaysPullImages', (_o, config, env) => {
      seen = [config, env.flag];
      return Object.assign(Object.create(Object.getPrototypeOf(buildAdmissionChain(objects).plugins[0])), new Probe()) as any;
    });
    buildAdmissionChain(objects, { enable: ['AlwaysPullImages'], configs: new Map([['AlwaysPullImages', { x: 1 }]]), env: { flag: 'yes' } });
    expect(seen).toEqual([{ x: 1 }, 'yes']);
    expect(() => registerPlugin('NoSuchPlugin', () => null as any)).toThrow(/not in the ordered plugin list/);
  });

  it("refuses unknown names on the command line with kube's messages", () => {
    expect(validatePluginFlags(['Foo'], [])).toEqual(['enable-admission-plugins plugin "Foo" is unknown']);
    expect(validatePluginFlags([], ['Bar'])).toEqual(['disable-admission-plugins plugin "Bar" is unknown']);
    expect(validatePluginFlags(['Priority', 'LimitRanger'], ['LimitRanger', 'Priority'])).toEqual(['[LimitRanger Priority] in enable-admission-plugins and disable-admission-plugins overlapped']);
  });
});
