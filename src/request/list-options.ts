// ListOptions validation (spec 4.4, 4.6 "Invalid" cells, 7 rule 3), with kube-apiserver's
// rules and wording: the combinations it refuses are one 422 Invalid naming the fields of
// ListOptions (kind ListOptions, group meta.k8s.io, no name), listing every violation.
import { errors, type CauseType } from '../errors.js';
import type { ListOptions } from '../registry/store.js';

interface Violation {
  field: string;
  type: CauseType;
  value?: unknown;
  detail?: string;
}

const EXACT = 'Exact';
const NOT_OLDER_THAN = 'NotOlderThan';

function forbidden(field: string, detail: string): Violation {
  return { field, type: 'FieldValueForbidden', detail };
}

function notSupported(field: string, value: string, supported: string[]): Violation {
  return { field, type: 'FieldValueNotSupported', value, detail: `supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}` };
}

export function listOptionViolations(o: ListOptions, watch: boolean): Violation[] {
  const out: Violation[] = [];
  const match = o.resourceVersionMatch;
  if (watch) {
    if (o.sendInitialEvents !== undefined && match !== NOT_OLDER_THAN) {
      out.push(forbidden('resourceVersionMatch', `sendInitialEvents requires setting resourceVersionMatch to ${NOT_OLDER_THAN}`));
    }
    if (match !== '') {
      if (o.sendInitialEvents === undefined) out.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
      if (match !== NOT_OLDER_THAN) out.push(notSupported('resourceVersionMatch', match, [NOT_OLDER_THAN]));
      if (o.continueToken !== '') out.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
    }
    return out;
  }
  if (match !== '') {
    if (o.resourceVersion === '') out.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
    if (o.continueToken !== '') out.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
    if (match !== EXACT && match !== NOT_OLDER_THAN) out.push(notSupported('resourceVersionMatch', match, [EXACT, NOT_OLDER_THAN, '']));
    if (match === EXACT && o.resourceVersion === '0') out.push(forbidden('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
  }
  if (o.sendInitialEvents !== undefined) out.push(forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  return out;
}

/** Throws kube-apiserver's 422 for an invalid combination of list (or watch) options. */
export function validateListOptions(o: ListOptions, watch: boolean): void {
  const v = listOptionViolations(o, watch);
  if (v.length) throw errors.invalid('ListOptions', 'meta.k8s.io', '', v);
}
