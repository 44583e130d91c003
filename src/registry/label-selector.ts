// metav1.LabelSelector: matching a label set, and the string form kube prints for it
// (LabelSelectorAsSelector(...).String(): requirements sorted by key, values sorted).
export interface LabelSelectorSpec {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

/** null/undefined selects nothing; {} selects everything (policy/v1 semantics). */
export function selectorMatches(sel: LabelSelectorSpec | null | undefined, labels: Record<string, string> | undefined): boolean {
  if (!sel) return false;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(l, e.key);
    const vals = e.values ?? [];
    switch (e.operator) {
      case 'In':
        if (!has || !vals.includes(l[e.key])) return false;
        break;
      case 'NotIn':
        if (has && vals.includes(l[e.key])) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

export function selectorString(sel: LabelSelectorSpec | null | undefined): string {
  if (!sel) return '';
  const reqs: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) reqs.push([k, `${k}=${v}`]);
  for (const e of sel.matchExpressions ?? []) {
    const vals = [...(e.values ?? [])].sort().join(',');
    if (e.operator === 'In') reqs.push([e.key, `${e.key} in (${vals})`]);
    else if (e.operator === 'NotIn') reqs.push([e.key, `${e.key} notin (${vals})`]);
    else if (e.operator === 'Exists') reqs.push([e.key, e.key]);
    else if (e.operator === 'DoesNotExist') reqs.push([e.key, `!${e.key}`]);
  }
  return reqs
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map((r) => r[1])
    .join(',');
}

/** A plain map selector (ReplicationController spec.selector) as kube prints it. */
export function mapSelectorString(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${m![k]}`)
    .join(',');
}
