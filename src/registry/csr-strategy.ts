// The CertificateSigningRequest strategies (kube's pkg/registry/certificates/certificates/
// strategy.go): a create records who asked (username, uid, groups, extra) and starts with no
// status; the main resource changes neither spec nor status; status writes set conditions
// and the certificate; approval writes (the approval subresource, `kubectl certificate
// approve|deny`) set the conditions and keep the certificate. Condition times are filled as
// kube's populateConditionTimestamps does.
//
// Thread ownership: none (stateless; one instance shared by the front thread's requests).
import { Strategy, type FieldError, type StrategyContext } from './strategy.js';
import { validateCsrCreate, validateCsrUpdate } from '../certificates/csr-validation.js';
import { isObj, list } from './validation/field.js';

const nowTime = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** kube's populateConditionTimestamps: update time now when unset; transition time kept from the old condition of the same status. */
function populateConditionTimestamps(obj: any, old: any | null): void {
  const now = nowTime();
  for (const c of list(obj.status?.conditions)) {
    if (!isObj(c)) continue;
    if (!c.lastUpdateTime) c.lastUpdateTime = now;
    if (!c.lastTransitionTime) {
      const prev = list(old?.status?.conditions).find((o: any) => o?.type === c.type);
      if (prev && prev.status === c.status && prev.lastTransitionTime) c.lastTransitionTime = prev.lastTransitionTime;
      else if (prev && prev.status === c.status) c.lastTransitionTime = c.lastUpdateTime;
      else c.lastTransitionTime = now;
    }
  }
}

export class CsrStrategy extends Strategy {
  override handlesRequired = false;
  override statusResetFields = [['f:spec']];

  override prepareForCreate(obj: any, ctx: StrategyContext): void {
    if (!isObj(obj.spec)) obj.spec = {};
    // what the requester says about itself is replaced by what the server knows
    delete obj.spec.username;
    delete obj.spec.uid;
    delete obj.spec.groups;
    delete obj.spec.extra;
    const u = ctx.user;
    if (u) {
      if (u.name) obj.spec.username = u.name;
      if (u.uid) obj.spec.uid = u.uid;
      if (u.groups?.length) obj.spec.groups = [...u.groups];
      if (u.extra && Object.keys(u.extra).length) obj.spec.extra = structuredClone(u.extra);
    }
    obj.status = {};
  }

  override prepareForUpdate(obj: any, old: any, ctx: StrategyContext): void {
    // the main resource: metadata only (status and approval are the subresources' business)
    if (ctx.subresource) return;
    obj.spec = structuredClone(old.spec);
    if (old.status === undefined) delete obj.status;
    else obj.status = structuredClone(old.status);
  }

  override prepareForStatusUpdate(obj: any, old: any): void {
    super.prepareForStatusUpdate(obj, old);
    populateConditionTimestamps(obj, old);
  }

  override prepareForSubresourceUpdate(subresource: string, obj: any, old: any): void {
    if (subresource !== 'approval') return;
    // kube's approval strategy: the spec and the certificate as stored; the conditions from the request
    for (const k of Object.keys(obj)) if (k !== 'metadata' && k !== 'status') delete obj[k];
    for (const k of Object.keys(old)) if (k !== 'metadata' && k !== 'status') obj[k] = structuredClone(old[k]);
    if (!isObj(obj.status)) obj.status = {};
    if (old.status?.certificate !== undefined) obj.status.certificate = old.status.certificate;
    else delete obj.status.certificate;
    populateConditionTimestamps(obj, old);
  }

  override validate(obj: any, ctx: StrategyContext): FieldError[] {
    // updates are validated whole in validateUpdate (with the stored object's tolerances)
    return ctx.subresource === undefined ? validateCsrCreate(obj) : [];
  }

  override validateUpdate(obj: any, old: any, ctx: StrategyContext): FieldError[] {
    return validateCsrUpdate(obj, old, ctx.subresource ?? '');
  }
}
