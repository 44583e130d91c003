// The strategy of custom resources (apiextensions-apiserver's customResourceStrategy): a
// status subresource makes the main resource ignore status (and create drop it); the
// schema's defaults are applied, and the object is validated against the schema with
// kube's 422 wording. Unknown fields are pruned earlier, by field validation
// (src/registry/field-validation.ts asks customSchemaOf), so that Warn and Strict report them.
import { Strategy, type FieldError, type StrategyContext } from '../strategy.js';
import { applyDefaults, prune, validateSchema } from './structural.js';
import type { CustomVersion } from '../../api/custom-resources.js';
import { validateCel, hasRules } from './cel-validation.js';

const BLOCKING = new Set(['FieldValueNotSupported', 'FieldValueRequired', 'FieldValueTooLong', 'FieldValueTooMany', 'FieldValueTypeInvalid']);

export class CustomResourceStrategy extends Strategy {
  override tracksGeneration = true;
  /** A status write takes the stored object whole and sets its status (customResourceStatusStrategy): no metadata change gets through. */
  override statusResetsMetadata = true;

  constructor(readonly cv: CustomVersion) {
    super();
  }

  private normalize(obj: any): void {
    // Server-side writes (deletion, controllers) skip field validation: prune here too; a
    // second pass over an already pruned object finds nothing.
    prune(obj, this.cv.schema);
    applyDefaults(obj, this.cv.schema);
  }

  override prepareForCreate(obj: any, _ctx: StrategyContext): void {
    if (this.cv.status) delete obj.status;
    this.normalize(obj);
  }

  override prepareForUpdate(obj: any, _old: any, _ctx: StrategyContext): void {
    this.normalize(obj);
  }

  /**
   * Objects are stored in the CRD's storage version whatever version they were written in
   * (conversion strategy None: only apiVersion changes); reads through another served
   * version are converted back by src/registry/conversion.ts.
   */
  override canonicalize(obj: any): void {
    // (a conversion webhook makes the storage version's object: the store's commit calls it)
    if (this.cv.conversion) return;
    obj.apiVersion = `${this.cv.group}/${this.cv.storageVersion}`;
  }

  override validate(obj: any, _ctx: StrategyContext): FieldError[] {
    const errs = validateSchema(obj, this.cv.schema);
    // x-kubernetes-validations: the rules without oldSelf here (create and update alike), transition rules in validateUpdate
    // (kube's hasBlockingErr: not on an object with type, required, enum or size errors)
    if (errs.some((e) => BLOCKING.has(e.type))) {
      if (hasRules(this.cv.schema as any)) errs.push({ field: '', type: 'FieldValueInvalid', value: null, detail: 'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation' });
    } else errs.push(...validateCel(this.cv.schema as any, obj, undefined, false));
    const scale = this.cv.scale;
    if (scale) {
      // The replicas a scale path points at must be a non-negative integer (kube's scale validation).
      const at = scale.specReplicasPath.slice(1);
      const v = at.split('.').reduce<any>((o, k) => (o && typeof o === 'object' ? o[k] : undefined), obj);
      if (v !== undefined && v !== null && !(Number.isInteger(v) && v >= 0) && !errs.some((e) => e.field === at)) {
        errs.push({ field: at, type: 'FieldValueInvalid', value: v, detail: 'should be a non-negative integer' });
      }
    }
    return errs;
  }

  override validateUpdate(obj: any, old: any, _ctx: StrategyContext): FieldError[] {
    return validateCel(this.cv.schema as any, obj, old, true);
  }
}
