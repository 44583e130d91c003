// JSON encoding of stored objects.
//
// Objects are written in the field order Go's encoding/json gives kube-apiserver's typed
// objects: kind, apiVersion, metadata first, and metadata's own fields in ObjectMeta order.
// That order is what lets the shard splice the resourceVersion in at commit time: the
// encoder writes `"resourceVersion":""` right after name/generateName/namespace/uid, whose
// values are JSON strings (so a quote inside them is escaped), and the first occurrence of
// that exact text is therefore ours. The front sends head and tail; the shard writes
// head + version + tail. No one re-serializes the object to stamp its version.

const META_ORDER = [
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
];

export function orderedMetadata(meta: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of META_ORDER) if (meta[k] !== undefined) out[k] = meta[k];
  for (const k of Object.keys(meta)) if (!(k in out) && meta[k] !== undefined) out[k] = meta[k];
  return out;
}

/** The object with kind, apiVersion and metadata first, metadata in ObjectMeta order. */
export function orderedObject(obj: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = {};
  if (obj.kind !== undefined) out.kind = obj.kind;
  if (obj.apiVersion !== undefined) out.apiVersion = obj.apiVersion;
  if (obj.metadata !== undefined) out.metadata = orderedMetadata(obj.metadata);
  for (const k of Object.keys(obj)) if (!(k in out) && obj[k] !== undefined) out[k] = obj[k];
  return out;
}

const RV_SLOT = '"resourceVersion":""';

/**
 * Splits an object's JSON around its resourceVersion value: the object is written in the
 * order above with an empty resourceVersion, and the version goes between head and tail.
 * Runs on the shard worker, for every write (src/storage/lmdb/lmdb-storage.ts sends the object).
 */
export function encodeForCommit(obj: Record<string, any>): { head: string; tail: string } {
  // One pass each over the object and its metadata (this runs on every write).
  const ordered: Record<string, any> = {};
  if (obj.kind !== undefined) ordered.kind = obj.kind;
  if (obj.apiVersion !== undefined) ordered.apiVersion = obj.apiVersion;
  const meta: Record<string, unknown> = obj.metadata ?? {};
  const m: Record<string, unknown> = {};
  for (let i = 0; i < META_ORDER.length; i++) {
    const k = META_ORDER[i];
    if (k === 'resourceVersion') m.resourceVersion = '';
    else if (meta[k] !== undefined) m[k] = meta[k];
  }
  for (const k in meta) if (!(k in m) && meta[k] !== undefined) m[k] = meta[k];
  ordered.metadata = m;
  for (const k in obj) if (!(k in ordered) && obj[k] !== undefined) ordered[k] = obj[k];
  const s = JSON.stringify(ordered);
  const i = s.indexOf(RV_SLOT);
  if (i < 0) throw new Error('object has no metadata');
  const cut = i + RV_SLOT.length - 1;
  return { head: s.slice(0, cut), tail: s.slice(cut) };
}
