// A webhook's namespaceSelector (kube's webhook/predicates/namespace/matcher.go): matched on
// the labels of the request's namespace, read from the cache. A cluster-scoped object other
// than a Namespace is never excluded; a Namespace being created or updated is matched on its
// own new labels (the cache does not hold them yet); a namespace that does not exist is a
// 404, as kube answers it.
//
// Thread ownership: none (reads the caller's ObjectSource).
import { errors, type StatusError } from '../../../errors.js';
import type { Attributes, ObjectSource } from '../../plugin.js';
import type { LabelSelectorSpec } from '../../../registry/label-selector.js';
import { selectorMatches } from '../../../registry/label-selector.js';
import { selectorEmpty } from './object.js';

/** true, false, or the error the request fails with. */
export function matchNamespaceSelector(objects: ObjectSource, sel: LabelSelectorSpec | null | undefined, a: Attributes, resource: string): boolean | StatusError {
  const isNamespace = resource === 'namespaces' && a.info.group === '';
  if (a.namespace === '' && !isNamespace) return true;
  if (selectorEmpty(sel)) return true;
  let labels: Record<string, string> | undefined;
  if (isNamespace && a.subresource === '' && (a.operation === 'CREATE' || a.operation === 'UPDATE')) {
    labels = a.obj?.metadata?.labels;
  } else {
    const name = isNamespace ? a.name : a.namespace;
    const ns = objects.get('namespaces', '', name);
    if (!ns) return errors.notFound({ group: '', resource: 'namespaces' }, name);
    labels = ns.metadata?.labels;
  }
  return selectorMatches(sel, labels);
}
