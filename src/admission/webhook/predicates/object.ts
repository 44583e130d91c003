// A webhook's objectSelector (kube's webhook/predicates/object/matcher.go): the hook is called
// when the selector matches the labels of the new object or of the old one. An empty selector
// matches everything; an object without metadata matches nothing.
//
// Thread ownership: none (pure functions).
import { selectorMatches, type LabelSelectorSpec } from '../../../registry/label-selector.js';

/** Whether a selector is empty (no labels, no expressions): it selects everything. */
export function selectorEmpty(sel: LabelSelectorSpec | null | undefined): boolean {
  if (!sel || typeof sel !== 'object') return true;
  const labels = sel.matchLabels;
  return (!labels || Object.keys(labels).length === 0) && (!Array.isArray(sel.matchExpressions) || sel.matchExpressions.length === 0);
}

function labelsOf(obj: any): Record<string, string> | undefined | false {
  if (obj === null || typeof obj !== 'object' || obj.metadata === null || typeof obj.metadata !== 'object') return false;
  return obj.metadata.labels ?? undefined;
}

export function matchObjectSelector(sel: LabelSelectorSpec | null | undefined, obj: any, old: any): boolean {
  if (selectorEmpty(sel)) return true;
  for (const o of [obj, old]) {
    const l = labelsOf(o);
    if (l !== false && selectorMatches(sel, l)) return true;
  }
  return false;
}
