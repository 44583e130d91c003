// The validation of a CRD's spec.conversion, as kube's validateCustomResourceConversion words
// it. kube validates its internal type, so its paths name the internal fields
// (spec.conversion.webhookClientConfig, spec.conversion.conversionReviewVersions), not the v1
// spelling (spec.conversion.webhook.clientConfig): clients see those paths, and so here.
//
// Thread ownership: none (pure functions).
import type { FieldError } from '../strategy.js';
import { dns1035LabelErrors, forbidden, invalid, isObj, notSupported, required } from '../validation/field.js';
import { validateWebhookService, validateWebhookUrl } from '../validation/admission.js';

const STRATEGIES = ['None', 'Webhook'];
/** kube's acceptedConversionReviewVersions, sorted as its set lists them */
const REVIEW_VERSIONS = ['v1', 'v1beta1'];

export function validateConversion(conversion: unknown, errs: FieldError[]): void {
  if (!isObj(conversion)) return;
  const at = 'spec.conversion';
  const strategy = conversion.strategy;
  if (strategy === undefined || strategy === '') errs.push(required(`${at}.strategy`));
  else if (!STRATEGIES.includes(strategy)) errs.push(notSupported(`${at}.strategy`, strategy, STRATEGIES));
  const webhook = isObj(conversion.webhook) ? conversion.webhook : undefined;
  const cc = webhook && isObj(webhook.clientConfig) ? webhook.clientConfig : undefined;
  const versions: unknown = webhook?.conversionReviewVersions;
  if (strategy === 'Webhook') {
    const ccAt = `${at}.webhookClientConfig`;
    if (!cc) errs.push(required(ccAt, 'required when strategy is set to Webhook'));
    else {
      const hasUrl = typeof cc.url === 'string';
      const hasService = isObj(cc.service);
      if (hasUrl === hasService) errs.push(required(ccAt, 'exactly one of url or service is required'));
      else if (hasUrl) errs.push(...validateWebhookUrl(`${ccAt}.url`, cc.url));
      else errs.push(...validateWebhookService(`${ccAt}.service`, { port: 443, ...cc.service }));
    }
    const vAt = `${at}.conversionReviewVersions`;
    const list = Array.isArray(versions) ? versions : [];
    if (list.length === 0) errs.push(required(vAt));
    else {
      const seen = new Set<string>();
      let accepted = false;
      list.forEach((v: unknown, i: number) => {
        const s = String(v);
        if (seen.has(s)) {
          errs.push(invalid(`${vAt}[${i}]`, s, 'duplicate version'));
          return;
        }
        seen.add(s);
        for (const d of dns1035LabelErrors(s)) errs.push(invalid(`${vAt}[${i}]`, s, d));
        if (REVIEW_VERSIONS.includes(s)) accepted = true;
      });
      if (!accepted) errs.push(invalid(vAt, list, `must include at least one of ${REVIEW_VERSIONS.join(', ')}`));
    }
  } else {
    if (cc) errs.push(forbidden(`${at}.webhookClientConfig`, 'should not be set when strategy is not set to Webhook'));
    if (Array.isArray(versions) && versions.length > 0) errs.push(forbidden(`${at}.conversionReviewVersions`, 'should not be set when strategy is not set to Webhook'));
  }
}
