// The default admission chain of kube-apiserver 1.33, in its order, as far as kubeshard
// implements it. NamespaceLifecycle lives in the store (src/registry/namespace-lifecycle.ts);
// Priority and DefaultTolerationSeconds in the pod strategy's admitCreate
// (src/registry/defaults/pod.ts), which runs after this chain's mutating steps.
import { AdmissionChain, type ObjectSource } from './plugin.js';
import { LimitRanger } from './limit-ranger.js';
import { ServiceAccountAdmission } from './service-account.js';
import { DefaultStorageClass, DefaultIngressClass } from './default-class.js';
import { StorageObjectInUseProtection } from './storage-object-in-use-protection.js';
import { ResourceQuotaAdmission } from './resource-quota.js';
import { ValidatingAdmissionPolicy, type ValidatingAdmissionPolicyConfig } from './policy/validating-admission-policy.js';

/** The chain without the plugins named in `disabled` (--disable-admission-plugins). */
export function defaultAdmissionChain(objects: ObjectSource, disabled: string[] = [], policies: ValidatingAdmissionPolicyConfig = {}): AdmissionChain {
  const all = [
    new LimitRanger(objects),
    new ServiceAccountAdmission(objects),
    new DefaultStorageClass(objects),
    new StorageObjectInUseProtection(objects),
    new DefaultIngressClass(objects),
    new ValidatingAdmissionPolicy(objects, policies),
    // kube runs the quota check last, after every other validation.
    new ResourceQuotaAdmission(objects),
  ];
  return new AdmissionChain(all.filter((p) => !disabled.includes(p.name)));
}

/** kube-controller-manager's --controllers rule: '-name' off, 'name' on, otherwise on when '*' is listed. */
export function controllerEnabled(list: string[], name: string): boolean {
  if (list.includes(`-${name}`)) return false;
  return list.includes(name) || list.includes('*');
}

export { AdmissionChain, type ObjectSource } from './plugin.js';
