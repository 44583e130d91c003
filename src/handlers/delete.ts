// delete: the object when the kind returns it, or when deletion is pending (finalizers);
// otherwise a Success Status naming what was deleted.
import { responseRepresentation, sendObject, sendStatus } from './representation.js';
import { deleteOptions } from './delete-options.js';
import type { HandlerContext } from './context.js';

export function successStatus(c: HandlerContext, name: string, uid: string | undefined): string {
  const details: Record<string, string> = { name };
  if (c.target.info.group) details.group = c.target.info.group;
  details.kind = c.target.info.resource;
  if (uid) details.uid = uid;
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details });
}

export async function handleDelete(c: HandlerContext): Promise<void> {
  const repr = responseRepresentation(c);
  const opts = deleteOptions(c.req);
  if (c.target.gr === 'namespaces') {
    const r = await c.namespaces.delete(c.target, c.info.name, opts);
    sendObject(c, repr, 200, r);
    return;
  }
  const r = await c.store.delete(c.target, c.info.namespace, c.info.name, opts);
  if (r.deleted && !c.target.strategy.returnDeletedObject) {
    sendStatus(c, repr, 200, successStatus(c, c.info.name, r.obj?.metadata?.uid));
  } else {
    // kube answers 202 only for a deletion left pending with the deprecated orphanDependents=false.
    sendObject(c, repr, !r.deleted && opts.orphanDependents === false ? 202 : 200, r.json);
  }
}
