// The admission plugins by kube's names: the one run order (kube 1.33's AllOrderedPlugins,
// pkg/kubeapiserver/options/plugins.go), the default-on set apart from it, and a registry of
// factories (kube's admission.Plugins.Register) in which every plugin, built-in or in its own
// folder (PodSecurity, policies, webhooks), puts itself by name. The chain is built from the
// order: a name enabled but not registered (a plugin kubeshard does not have) is skipped.
//
// Thread ownership: module state written at import (registrations), read when a front
// thread builds its chain.
import { AdmissionChain, AdmissionPlugin, type ObjectSource } from './plugin.js';

/** kube 1.33's AllOrderedPlugins: every plugin name, in the order the chain runs them. */
export const ALL_ORDERED_PLUGINS: readonly string[] = [
  'AlwaysAdmit',
  'NamespaceAutoProvision',
  'NamespaceLifecycle',
  'NamespaceExists',
  'LimitPodHardAntiAffinityTopology',
  'LimitRanger',
  'ServiceAccount',
  'NodeRestriction',
  'TaintNodesByCondition',
  'AlwaysPullImages',
  'ImagePolicyWebhook',
  'PodSecurity',
  'PodNodeSelector',
  'Priority',
  'DefaultTolerationSeconds',
  'PodTolerationRestriction',
  'EventRateLimit',
  'ExtendedResourceToleration',
  'DefaultStorageClass',
  'StorageObjectInUseProtection',
  'OwnerReferencesPermissionEnforcement',
  'PersistentVolumeClaimResize',
  'RuntimeClass',
  'CertificateApproval',
  'CertificateSigning',
  'ClusterTrustBundleAttest',
  'CertificateSubjectRestriction',
  'DefaultIngressClass',
  'DenyServiceExternalIPs',
  'PodTopologyLabels',
  // policies, webhooks and quota last, as kube keeps them
  'MutatingAdmissionPolicy',
  'MutatingAdmissionWebhook',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionWebhook',
  'ResourceQuota',
  'AlwaysDeny',
];

/** kube 1.33's default-on plugins (DefaultOffAdmissionPlugins is everything else). */
export const DEFAULT_ON_PLUGINS: ReadonlySet<string> = new Set([
  'NamespaceLifecycle',
  'LimitRanger',
  'ServiceAccount',
  'DefaultStorageClass',
  'PersistentVolumeClaimResize',
  'DefaultTolerationSeconds',
  'MutatingAdmissionWebhook',
  'ValidatingAdmissionWebhook',
  'ResourceQuota',
  'StorageObjectInUseProtection',
  'Priority',
  'TaintNodesByCondition',
  'RuntimeClass',
  'CertificateApproval',
  'CertificateSigning',
  'ClusterTrustBundleAttest',
  'CertificateSubjectRestriction',
  'DefaultIngressClass',
  'PodSecurity',
  'PodTopologyLabels',
  'MutatingAdmissionPolicy',
  'ValidatingAdmissionPolicy',
]);

/**
 * What a factory may use besides the caches: the server's settings and hooks that some
 * plugins need (grown as plugins need more; unknown keys are ignored).
 */
export interface PluginEnv {
  /** --default-not-ready-toleration-seconds, --default-unreachable-toleration-seconds */
  defaultNotReadyTolerationSeconds?: number;
  defaultUnreachableTolerationSeconds?: number;
  /** catches the namespaces' cache up with storage (NamespaceLifecycle's live lookup) */
  namespaceLookup?: () => Promise<void>;
  /** anything else a plugin in another folder needs, by its own key */
  [key: string]: unknown;
}

/**
 * kube's admission.Factory: builds the plugin from the caches, its configuration from
 * --admission-control-config-file (the parsed object of plugins[].configuration or of the
 * file at plugins[].path; undefined when none), and the server's environment.
 */
export type PluginFactory = (objects: ObjectSource, config: unknown, env: PluginEnv) => AdmissionPlugin;

const factories = new Map<string, PluginFactory>();

/** kube's Plugins.Register: a name of ALL_ORDERED_PLUGINS and its factory (a second registration replaces the first). */
export function registerPlugin(name: string, factory: PluginFactory): void {
  if (!ALL_ORDERED_PLUGINS.includes(name)) throw new Error(`admission plugin ${name} is not in the ordered plugin list`);
  factories.set(name, factory);
}

/** The names registered so far, in run order. */
export function registeredPlugins(): string[] {
  return ALL_ORDERED_PLUGINS.filter((n) => factories.has(n));
}

/**
 * The errors of --enable-admission-plugins and --disable-admission-plugins, in kube's words
 * (apiserver's AdmissionOptions.Validate); a name is known when kube 1.33 has the plugin.
 */
export function validatePluginFlags(enable: readonly string[], disable: readonly string[]): string[] {
  const errs: string[] = [];
  const known = new Set(ALL_ORDERED_PLUGINS);
  for (const n of enable) if (!known.has(n)) errs.push(`enable-admission-plugins plugin "${n}" is unknown`);
  for (const n of disable) if (!known.has(n)) errs.push(`disable-admission-plugins plugin "${n}" is unknown`);
  const both = [...new Set(enable)].filter((n) => disable.includes(n)).sort();
  if (both.length) errs.push(`[${both.join(' ')}] in enable-admission-plugins and disable-admission-plugins overlapped`);
  return errs;
}

/** kube's enabledPluginNames: the ordered list less the default-off and disabled ones, plus the enabled. */
export function enabledPluginNames(enable: readonly string[] = [], disable: readonly string[] = []): string[] {
  const on = new Set(enable);
  return ALL_ORDERED_PLUGINS.filter((n) => on.has(n) || (DEFAULT_ON_PLUGINS.has(n) && !disable.includes(n)));
}

export interface ChainOptions {
  enable?: readonly string[];
  disable?: readonly string[];
  /** per-plugin configuration by name (from the AdmissionConfiguration) */
  configs?: ReadonlyMap<string, unknown>;
  env?: PluginEnv;
}

/** The chain of the enabled plugins that are registered, in kube's order. */
export function buildAdmissionChain(objects: ObjectSource, o: ChainOptions = {}): AdmissionChain {
  const plugins: AdmissionPlugin[] = [];
  for (const name of enabledPluginNames(o.enable, o.disable)) {
    const f = factories.get(name);
    if (f) plugins.push(f(objects, o.configs?.get(name), o.env ?? {}));
  }
  return new AdmissionChain(plugins);
}
