// Per-kind hooks of the generic store, after k8s.io/apiserver's RESTCreateStrategy and
// RESTUpdateStrategy: the store does everything common, a strategy says what is special
// about one kind. Hooks a kind does not need default to doing nothing.
import type { CauseType } from '../errors.js';
import type { ResourceInfo } from '../api/catalog-types.js';
import { setOwn } from './own-keys.js';

export interface FieldError {
  field: string;
  type: CauseType;
  value?: unknown;
  detail?: string;
}

export interface StrategyContext {
  info: ResourceInfo;
  /** true when the kind has a status subresource: the main resource then ignores status */
  hasStatus: boolean;
  /** set for beginCreate and beginUpdate: the write is a dry run (allocators reserve nothing) */
  dryRun?: boolean;
  /** set for creates made by a request: who made it (kinds that record their requester: CertificateSigningRequest) */
  user?: import('../auth/user.js').UserInfo;
  /** set for validateUpdate: the subresource written ('' for the main resource) */
  subresource?: string;
}

export class Strategy {
  /** Whether a PUT of a missing object creates it. */
  allowCreateOnUpdate = false;
  /** Whether a PUT without metadata.resourceVersion is accepted (as an unconditional update). */
  allowUnconditionalUpdate = true;
  /** Whether DELETE answers with the deleted object rather than a Status. */
  returnDeletedObject = false;
  /** Whether metadata.generation is kept (objects with a spec). */
  tracksGeneration = false;
  /**
   * Whether the kind's own validator reports missing fields, as kube's hand-written validation
   * does (with its own paths and wording, alongside the other errors); the schema's required
   * lists are then not checked before it.
   */
  handlesRequired = false;

  /** Clears or sets fields on create (e.g. status, defaults). Mutates obj. */
  prepareForCreate(_obj: any, _ctx: StrategyContext): void {}
  /**
   * Paths (FieldsV1 elements) a status write resets, which field management credits to no
   * one (kube's status strategies' ResetFields): the spec by default.
   */
  statusResetFields: string[][] = [['f:spec']];
  /**
   * What a status write may not change, as kube's status strategies' PrepareForUpdate: by
   * default everything outside status and metadata comes back from the stored object; label,
   * annotation, finalizer and owner changes stay (the store keeps system metadata). Kinds
   * override it to reset more. Mutates obj.
   */
  prepareForStatusUpdate(obj: any, old: any): void {
    for (const k of Object.keys(obj)) if (k !== 'metadata' && k !== 'status') delete obj[k];
    for (const k of Object.keys(old)) if (k !== 'metadata' && k !== 'status') setOwn(obj, k, structuredClone(old[k]));
    if (!obj.metadata || typeof obj.metadata !== 'object' || Array.isArray(obj.metadata)) obj.metadata = {};
    if (this.statusResetsMetadata) resetObjectMetaForStatus(obj, old);
  }
  /**
   * A write through another subresource that is a view of the object (certificatesigningrequests/approval):
   * what it may not change comes back from the stored object. Mutates obj.
   */
  prepareForSubresourceUpdate(_subresource: string, _obj: any, _old: any): void {}
  /** Set for kinds whose status strategy calls kube's ResetObjectMetaForStatus (status writes change no metadata). */
  statusResetsMetadata = false;
  /**
   * The part of a create that happens after field management has recorded what the request
   * set (kube runs the field manager on the decoded, defaulted object, before mutating
   * admission and the storage's own preparation): fields filled here belong to no manager.
   * Mutates obj.
   */
  admitCreate(_obj: any, _ctx: StrategyContext): void {}
  /** Carries over fields the client may not change on update. Mutates obj. */
  prepareForUpdate(_obj: any, _old: any, _ctx: StrategyContext): void {}
  validate(_obj: any, _ctx: StrategyContext): FieldError[] {
    return [];
  }
  validateUpdate(_obj: any, _old: any, _ctx: StrategyContext): FieldError[] {
    return [];
  }
  /** The status strategy's own checks of a status write (kube's Validate*StatusUpdate), besides the above. */
  validateStatusUpdate(_obj: any, _old: any, _ctx: StrategyContext): FieldError[] {
    return [];
  }
  /**
   * Reserves what the object needs from a shared allocator, after validation and before
   * the commit (kube's BeginCreate). The store calls the returned function once with the
   * outcome: true when committed, false when the write failed or was a dry run.
   */
  beginCreate(_obj: any, _ctx: StrategyContext): ((committed: boolean) => void | Promise<void>) | void {}
  /** The same for an update (kube's BeginUpdate). */
  beginUpdate(_obj: any, _old: any, _ctx: StrategyContext): ((committed: boolean) => void | Promise<void>) | void {}
  /**
   * What the first delete of an object adds before the deletion is planned: finalizers and
   * conditions of kinds whose deletion is finished by a controller (a CRD's instance cleanup).
   */
  beforeDelete(_obj: any): void {}
  /** After the object is gone from storage (its last state); the delete answers once it settles. */
  afterDelete(_obj: any): void | Promise<void> {}
  /**
   * kube's RESTGracefulDeleteStrategy: the grace period (seconds) a delete of obj gets, given
   * the one the client asked for; undefined for kinds that are never deleted gracefully.
   */
  checkGracefulDelete(_obj: any, _requested: number | undefined): number | undefined {
    return undefined;
  }
  /** kube's DefaultGarbageCollectionPolicy, for a request in `version` of the kind's group. */
  defaultGarbageCollectionPolicy(_version: string): 'DeleteDependents' | 'OrphanDependents' | 'Unsupported' {
    return 'DeleteDependents';
  }
  /** Normalizes an object before it is stored. */
  canonicalize(_obj: any): void {}
  warningsOnCreate(_obj: any): string[] {
    return [];
  }
}

/** Kinds whose objects carry a spec, and so a generation that moves when the spec changes. */
export class SpecStrategy extends Strategy {
  override tracksGeneration = true;
}

/** Keeps one metadata field as stored (absent when the stored object has none). */
export function keepOldMeta(obj: any, old: any, key: string): void {
  const v = old.metadata?.[key];
  if (v === undefined) delete obj.metadata[key];
  else obj.metadata[key] = structuredClone(v);
}

/** kube's metav1.ResetObjectMetaForStatus: labels, annotations, finalizers and owners as stored. */
export function resetObjectMetaForStatus(obj: any, old: any): void {
  for (const k of ['labels', 'annotations', 'finalizers', 'ownerReferences']) keepOldMeta(obj, old, k);
}
