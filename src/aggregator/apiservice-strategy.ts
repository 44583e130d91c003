// The APIService kind's storage rules: kube-aggregator's registry/apiservice strategy,
// defaults (apiregistration/v1 SetDefaults_ServiceReference) and validation
// (apiregistration/validation ValidateAPIService, ValidateAPIServiceStatus). A create
// starts with no status, except that a local APIService is Available at once; a status
// write changes status only.
//
// Thread ownership: stateless (one shared instance per registry).
import { Strategy, type FieldError } from '../registry/strategy.js';
import { dns1035LabelErrors, dns1123SubdomainErrors, invalid, isObj, notSupported, required } from '../registry/validation/field.js';
import { withCondition } from './apiservice.js';

function defaults(obj: any): void {
  const svc = obj?.spec?.service;
  if (isObj(svc) && (svc.port === undefined || svc.port === null)) svc.port = 443;
}

export class APIServiceStrategy extends Strategy {
  override handlesRequired = true;
  override statusResetsMetadata = true;

  override prepareForCreate(obj: any): void {
    defaults(obj);
    obj.status = {};
    // (kube marks a local APIService available on create; its status controller keeps it so)
    if (isObj(obj.spec) && !isObj(obj.spec.service)) {
      const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      obj.status = { conditions: withCondition(obj, { type: 'Available', status: 'True', lastTransitionTime: now, reason: 'Local', message: 'Local APIServices are always available' }) };
    }
  }

  override prepareForUpdate(obj: any): void {
    defaults(obj);
  }

  override validate(obj: any): FieldError[] {
    return validateAPIService(obj);
  }

  override validateStatusUpdate(obj: any): FieldError[] {
    const errs: FieldError[] = [];
    const cs = Array.isArray(obj?.status?.conditions) ? obj.status.conditions : [];
    cs.forEach((c: any, i: number) => {
      if (c?.status !== 'True' && c?.status !== 'False' && c?.status !== 'Unknown') errs.push(notSupported(`status.conditions[${i}].status`, c?.status ?? '', ['True', 'False', 'Unknown']));
    });
    return errs;
  }
}

/** kube's ValidateAPIService (the metadata checks common to every kind are the store's). */
export function validateAPIService(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObj(obj?.spec) ? obj.spec : {};
  const group = typeof spec.group === 'string' ? spec.group : '';
  const version = typeof spec.version === 'string' ? spec.version : '';
  const name = obj?.metadata?.name;
  const requiredName = `${version}.${group}`;
  if (typeof name === 'string' && name && name !== requiredName) errs.push(invalid('metadata.name', name, `must be \`spec.version+"."+spec.group\`: ${JSON.stringify(requiredName)}`));
  if (!group && version !== 'v1') errs.push(required('spec.group', 'only v1 may have an empty group and it better be legacy kube'));
  if (group) for (const m of dns1123SubdomainErrors(group)) errs.push(invalid('spec.group', group, m));
  for (const m of dns1035LabelErrors(version)) errs.push(invalid('spec.version', version, m));
  const gpm = Number(spec.groupPriorityMinimum ?? 0);
  if (!(gpm > 0 && gpm <= 20000)) errs.push(invalid('spec.groupPriorityMinimum', gpm, 'must be positive and less than 20000'));
  const vp = Number(spec.versionPriority ?? 0);
  if (!(vp > 0 && vp <= 1000)) errs.push(invalid('spec.versionPriority', vp, 'must be positive and less than 1000'));
  const caBytes = typeof spec.caBundle === 'string' ? Buffer.from(spec.caBundle, 'base64').length : 0;
  if (!isObj(spec.service)) {
    if (caBytes) errs.push(invalid('spec.caBundle', `${caBytes} bytes`, 'local APIServices may not have a caBundle'));
    if (spec.insecureSkipTLSVerify === true) errs.push(invalid('spec.insecureSkipTLSVerify', true, 'local APIServices may not have insecureSkipTLSVerify'));
    return errs;
  }
  if (!spec.service.namespace) errs.push(required('spec.service.namespace'));
  if (!spec.service.name) errs.push(required('spec.service.name'));
  if (spec.insecureSkipTLSVerify === true && caBytes > 0) errs.push(invalid('spec.insecureSkipTLSVerify', true, 'may not be true if caBundle is present'));
  return errs;
}
