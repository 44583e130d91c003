import { encodeList } from '../codec/representation.js';
import { encodeContextOf, responseRepresentation, sendEncoded } from './representation.js';
import { listOptions } from '../request/query.js';
import { deleteOptions } from './delete-options.js';
import type { HandlerContext } from './context.js';
import { errors } from '../errors.js';
import { deleteAdmission } from './admission.js';

export async function handleDeleteCollection(c: HandlerContext): Promise<void> {
  const repr = responseRepresentation(c);
  const lo = listOptions(c.req);
  const d = deleteOptions(c.req);
  if (d.ignoreStoreReadErrorWithClusterBreakingPotential) {
    throw errors.invalid('DeleteOptions', 'meta.k8s.io', '', [
      { field: 'ignoreStoreReadErrorWithClusterBreakingPotential', type: 'FieldValueInvalid', value: true, detail: 'is not allowed with DELETECOLLECTION, try again after removing the option' },
    ]);
  }
  // every item is admitted as kube does it: a DELETE whose old object is the item, with the
  // request's namespace and no name (kube's attributes of a collection delete carry none)
  // answered already (the write deadline's 504, or the client gone): the workers stop
  let over = false;
  c.res.onDone(() => (over = true));
  const deleted = await c.store.deleteCollection(c.target, c.info.namespace, lo, d, () => deleteAdmission(c, d, ''), () => over);
  const rv = c.store.storage.freshRv(c.target.gr);
  sendEncoded(c, 200, repr, encodeList(deleted.map((json) => ({ json })), { resourceVersion: String(rv) }, repr, encodeContextOf(c, repr)));
}
