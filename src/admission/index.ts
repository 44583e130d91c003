// The built-in admission plugins of kube-apiserver 1.33 that kubeshard has, each registered
// by its kube name (the order and the default-on set are in registry.ts). Plugins in their
// own folders (pod-security/, policy/, webhook/) register themselves the same way when their
// module is imported here.
import { registerPlugin, buildAdmissionChain, type ChainOptions, type PluginEnv } from './registry.js';
import type { AdmissionChain, ObjectSource } from './plugin.js';
import { NamespaceLifecycleAdmission } from './namespace-lifecycle.js';
import { LimitRanger } from './limit-ranger.js';
import { ServiceAccountAdmission } from './service-account.js';
import { PriorityAdmission } from './priority.js';
import { DefaultTolerationSeconds } from './default-toleration-seconds.js';
import { DefaultStorageClass, DefaultIngressClass } from './default-class.js';
import { StorageObjectInUseProtection } from './storage-object-in-use-protection.js';
import { ResourceQuotaAdmission } from './resource-quota.js';
import { NodeRestriction } from './node-restriction.js';
import { CertificateApproval, CertificateSigning, CertificateSubjectRestriction, type Authorize } from './certificates.js';
import { PodSecurity } from './pod-security/pod-security.js';
import { MutatingAdmissionWebhook } from './webhook/mutating-admission-webhook.js';
import { ValidatingAdmissionWebhook } from './webhook/validating-admission-webhook.js';
import { admissionMetrics } from './webhook/metrics.js';
import type { WebhookPluginConfig } from './webhook/generic.js';

registerPlugin('NamespaceLifecycle', (objects, _config, env) => new NamespaceLifecycleAdmission(objects, env.namespaceLookup));
registerPlugin('LimitRanger', (objects) => new LimitRanger(objects));
registerPlugin('ServiceAccount', (objects) => new ServiceAccountAdmission(objects));
registerPlugin('Priority', (objects) => new PriorityAdmission(objects));
registerPlugin('DefaultTolerationSeconds', (objects, _config, env) =>
  new DefaultTolerationSeconds(objects, {
    defaultNotReadyTolerationSeconds: env.defaultNotReadyTolerationSeconds ?? 300,
    defaultUnreachableTolerationSeconds: env.defaultUnreachableTolerationSeconds ?? 300,
  }),
);
registerPlugin('DefaultStorageClass', (objects) => new DefaultStorageClass(objects));
registerPlugin('StorageObjectInUseProtection', (objects) => new StorageObjectInUseProtection(objects));
registerPlugin('DefaultIngressClass', (objects) => new DefaultIngressClass(objects));
registerPlugin('ResourceQuota', (objects) => new ResourceQuotaAdmission(objects));
// default off, as in kube: --enable-admission-plugins=NodeRestriction
registerPlugin('NodeRestriction', (objects) => new NodeRestriction(objects));
// the certificate plugins ask the server's authorizer (the environment's `policies.authorize`)
const envAuthorize = (env: PluginEnv): Authorize =>
  (env.policies as { authorize?: Authorize } | undefined)?.authorize ?? (() => ({ allowed: false, reason: 'no authorizer' }));
registerPlugin('CertificateApproval', (objects, _config, env) => new CertificateApproval(objects, envAuthorize(env)));
registerPlugin('CertificateSigning', (objects, _config, env) => new CertificateSigning(objects, envAuthorize(env)));
registerPlugin('CertificateSubjectRestriction', (objects) => new CertificateSubjectRestriction(objects));
registerPlugin('PodSecurity', (objects, config) => new PodSecurity(objects, config));
// the webhook plugins' configuration (the CEL compiler of matchConditions, the catalog) is the environment's `webhooks`
registerPlugin('MutatingAdmissionWebhook', (objects, _config, env) => new MutatingAdmissionWebhook(objects, (env.webhooks as WebhookPluginConfig | undefined) ?? {}));
// the policy plugins' configuration (the authorizer of CEL's `authorizer`) is the environment's
// `policies`; MutatingAdmissionPolicy defaults what it patched with the webhooks' defaulter
registerPlugin('MutatingAdmissionPolicy', (objects, _config, env) =>
  new MutatingAdmissionPolicy(objects, {
    ...((env.policies as MutatingAdmissionPolicyConfig | undefined) ?? {}),
    defaulter: (env.webhooks as WebhookPluginConfig | undefined)?.defaulter,
  }),
);
registerPlugin('ValidatingAdmissionPolicy', (objects, _config, env) => new ValidatingAdmissionPolicy(objects, (env.policies as ValidatingAdmissionPolicyConfig | undefined) ?? {}));
registerPlugin('ValidatingAdmissionWebhook', (objects, _config, env) => new ValidatingAdmissionWebhook(objects, (env.webhooks as WebhookPluginConfig | undefined) ?? {}));
import { ValidatingAdmissionPolicy, type ValidatingAdmissionPolicyConfig } from './policy/validating-admission-policy.js';
import { MutatingAdmissionPolicy, type MutatingAdmissionPolicyConfig } from './policy/mutating-admission-policy.js';

/** The chain kube-apiserver would run with these flags (the defaults when none). */
export function defaultAdmissionChain(objects: ObjectSource, o: ChainOptions = {}): AdmissionChain {
  const chain = buildAdmissionChain(objects, o);
  // apiserver_admission_step_admission_duration_seconds
  chain.observeStep = (s, rejected, op, type) => admissionMetrics.observeStep(s, rejected, op, type);
  // apiserver_admission_controller_admission_duration_seconds
  chain.observePlugin = (name, s, rejected, op, type) => admissionMetrics.observeController(name, s, rejected, op, type);
  return chain;
}

export { AdmissionChain, type ObjectSource } from './plugin.js';
export { ALL_ORDERED_PLUGINS, DEFAULT_ON_PLUGINS, enabledPluginNames, registerPlugin, registeredPlugins, validatePluginFlags } from './registry.js';
