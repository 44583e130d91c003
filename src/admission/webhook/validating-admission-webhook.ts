// The ValidatingAdmissionWebhook plugin (kube's webhook/validating/plugin.go): the
// ValidatingWebhookConfigurations in the cache, called in parallel by the validating
// dispatcher in the chain's validating pass (after the kind's own validation, before
// ResourceQuota).
//
// Thread ownership: the front thread (the source's compiled hooks and clients).
import { AdmissionPlugin, type Attributes, type ObjectSource } from '../plugin.js';
import { EquivalentResourceMapper } from './equivalents.js';
import { requestKind, type WebhookPluginConfig } from './generic.js';
import { isExemptAdmissionConfiguration } from './predicates/rules.js';
import { WebhookSource } from './source.js';
import { ValidatingDispatcher } from './validating-dispatcher.js';

export class ValidatingAdmissionWebhook extends AdmissionPlugin {
  readonly name = 'ValidatingAdmissionWebhook';
  readonly source: WebhookSource;
  private readonly dispatcher: ValidatingDispatcher;

  constructor(objects: ObjectSource, config: WebhookPluginConfig = {}) {
    super(objects);
    this.source = new WebhookSource(objects, 'validatingwebhookconfigurations.admissionregistration.k8s.io', 'validating', config.compileMatchConditions);
    this.dispatcher = new ValidatingDispatcher(objects, new EquivalentResourceMapper(objects, config.catalog));
  }

  handles(a: Attributes): boolean {
    return this.source.hooks().length > 0 && !isExemptAdmissionConfiguration(requestKind(a));
  }

  override validate(a: Attributes): void | Promise<void> {
    return this.dispatcher.dispatch(a, this.source.hooks());
  }

  close(): void {
    this.source.close();
  }
}
