// delete: the object when the kind returns it, or when deletion is pending (finalizers);
// otherwise a Success Status naming what was deleted.
import { responseRepresentation, sendObject, sendStatus } from './representation.js';
import { deleteOptions } from './delete-options.js';
import type { HandlerContext } from './context.js';
import { errors, qualifiedResource } from '../errors.js';
import { authorizeAlso } from '../http/filters/authorization.js';
import { unsafeDelete } from '../registry/corrupt-objects.js';
import { deleteAdmission } from './admission.js';
import { refuseSystemClassDelete } from '../controllers/priority-class-bootstrap.js';

const UNSAFE_VERB = 'unsafe-delete-ignore-read-errors';

/**
 * DELETE with ignoreStoreReadErrorWithClusterBreakingPotential (its gate is on, or the option
 * would have been dropped): the user needs the extra verb on the resource, as kube's
 * authorizeUnsafeDelete checks; then the corrupt object is removed without being read.
 */
async function handleUnsafeDelete(c: HandlerContext): Promise<void> {
  const repr = responseRepresentation(c);
  const gr = c.target.groupResource;
  const forbidden = (why: string) => {
    const what = c.info.name ? `${qualifiedResource(gr)} "${c.info.name}"` : qualifiedResource(gr);
    return errors.forbidden(gr, c.info.name || undefined, `${what} is forbidden: ${why}`);
  };
  if (c.info.subresource) throw forbidden('ignoreStoreReadErrorWithClusterBreakingPotential delete option is not allowed on a subresource or non-resource request');
  const d = await authorizeAlso(c.req, UNSAFE_VERB);
  if (!d.allowed) throw forbidden(`not permitted to do "${UNSAFE_VERB}", reason: ${d.reason}`);
  await unsafeDelete(c.store.cacher, c.target, c.info.namespace, c.info.name);
  // Nothing could be read back, so kube answers with a bare Success naming the kind.
  sendStatus(c, repr, 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: c.info.name, kind: c.target.info.kind }, code: 200 });
}

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
  if (opts.ignoreStoreReadErrorWithClusterBreakingPotential) return handleUnsafeDelete(c);
  refuseSystemClassDelete(c.target, c.info.name);
  if (c.target.gr === 'namespaces') {
    const r = await c.namespaces.delete(c.target, c.info.name, opts, deleteAdmission(c, opts));
    sendObject(c, repr, 200, r);
    return;
  }
  const r = await c.store.delete(c.target, c.info.namespace, c.info.name, opts, deleteAdmission(c, opts));
  // kube's ReturnDeletedObject: a catalog fact for the kinds whose DELETE answers with the
  // object (pods, services, PVs, storage classes, ...), or a strategy's own say.
  if (r.deleted && !c.target.strategy.returnDeletedObject && !c.target.info.deleteReturnsObject) {
    sendStatus(c, repr, 200, successStatus(c, c.info.name, r.obj?.metadata?.uid));
  } else {
    // kube answers 202 only for a deletion left pending with the deprecated orphanDependents=false.
    sendObject(c, repr, !r.deleted && opts.orphanDependents === false ? 202 : 200, r.json);
  }
}
