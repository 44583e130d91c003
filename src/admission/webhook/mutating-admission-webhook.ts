// The MutatingAdmissionWebhook plugin (kube's webhook/mutating/plugin.go): the
// MutatingWebhookConfigurations in the cache, called by the mutating dispatcher in the
// chain's mutating pass (after the built-in mutating plugins).
//
// Thread ownership: the front thread (the source's compiled hooks and clients).
import { AdmissionPlugin, type Attributes, type ObjectSource } from '../plugin.js';
import { EquivalentResourceMapper } from './equivalents.js';
import { requestKind, type WebhookPluginConfig } from './generic.js';
import { MutatingDispatcher } from './mutating-dispatcher.js';
import { defaultPatchedObject } from './defaulter.js';
import { isExemptAdmissionConfiguration } from './predicates/rules.js';
import { WebhookSource } from './source.js';

export class MutatingAdmissionWebhook extends AdmissionPlugin {
  readonly name = 'MutatingAdmissionWebhook';
  readonly source: WebhookSource;
  private readonly dispatcher: MutatingDispatcher;

  constructor(objects: ObjectSource, config: WebhookPluginConfig = {}) {
    super(objects);
    this.source = new WebhookSource(objects, 'mutatingwebhookconfigurations.admissionregistration.k8s.io', 'admit', config.compileMatchConditions);
    this.dispatcher = new MutatingDispatcher(objects, new EquivalentResourceMapper(objects, config.catalog), config.defaulter ?? defaultPatchedObject);
  }

  handles(a: Attributes): boolean {
    return this.source.hooks().length > 0 && !isExemptAdmissionConfiguration(requestKind(a));
  }

  override admit(a: Attributes): void | Promise<void> {
    return this.dispatcher.dispatch(a, this.source.hooks());
  }

  /** Closes the hooks' kept-alive connections. */
  close(): void {
    this.source.close();
  }
}
