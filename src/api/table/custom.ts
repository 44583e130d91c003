// The Table of a custom resource, from its CRD version's additionalPrinterColumns (kube's
// CRD table convertor): Name, then each column's value at its JSON path; a CRD without
// columns gets one, Age (.metadata.creationTimestamp). Date cells are printed as ages.
import { col, nameCol, type KindPrinter } from './types.js';
import { since } from './format.js';
import type { PrinterColumn } from '../custom-resources.js';

const DEFAULT_COLUMNS: PrinterColumn[] = [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }];

/** The value at a simple JSON path (.a.b, .a[0].b, .a['b.c']); undefined when absent. */
function at(obj: unknown, path: string): unknown {
  const segs: Array<string | number> = [];
  const re = /\.([^.[\]]+)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]/g;
  let m: RegExpExecArray | null;
  const p = path.replace(/^\{|\}$/g, '');
  while ((m = re.exec(p))) segs.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : (m[3] ?? m[4])));
  let v: any = obj;
  for (const s of segs) {
    if (v === null || typeof v !== 'object') return undefined;
    v = v[s as any];
  }
  return v;
}

function cell(v: unknown, type: string, now: number): unknown {
  if (v === undefined || v === null) return null;
  if (type === 'date') return since(v, now);
  if (type === 'integer') return typeof v === 'number' && Number.isInteger(v) ? v : null;
  if (type === 'number') return typeof v === 'number' ? v : null;
  if (type === 'boolean') return typeof v === 'boolean' ? v : null;
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

const printers = new WeakMap<PrinterColumn[], KindPrinter>();

export function customPrinter(columns: PrinterColumn[]): KindPrinter {
  const cols = columns.length ? columns : DEFAULT_COLUMNS;
  let p = printers.get(columns);
  if (!p) {
    p = {
      columns: [nameCol(), ...cols.map((c) => col(c.name, c.type, c.description ?? '', c.priority ?? 0, c.format ?? ''))],
      row: (o, now) => ({ cells: [o?.metadata?.name ?? '', ...cols.map((c) => cell(at(o, c.jsonPath), c.type, now))] }),
    };
    printers.set(columns, p);
  }
  return p;
}
