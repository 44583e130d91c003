// Assembling and encoding a meta.k8s.io Table (spec 2.5) from stored objects.
//
// The encoding is written by hand: the column definitions of a printer are encoded once
// and reused, and with includeObject=Object each row carries the object's stored JSON
// bytes as they are, without a parse-and-serialize round trip.
import type { IncludeObject, KindPrinter, TableColumn } from './types.js';

export type { IncludeObject, KindPrinter, TableColumn } from './types.js';
export { printerFor, defaultPrinter } from './printers.js';
export { scalePrinter } from './apps.js';

export const TABLE_VERSIONS = ['v1', 'v1beta1'] as const;
export type TableVersion = (typeof TABLE_VERSIONS)[number];

export interface TableOptions {
  includeObject: IncludeObject;
  /** Omit columnDefinitions (later events of a watch). */
  noHeaders?: boolean;
  /** epoch ms the ages are computed against */
  now: number;
  /** meta.k8s.io version asked for; v1 by default */
  version?: TableVersion;
}

export interface TableListMeta {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface TableItem {
  /** the parsed object; never mutated */
  obj: any;
  /** its JSON bytes, when at hand (spliced into rows for includeObject=Object) */
  raw?: Buffer;
}

const INCLUDE_VALUES: IncludeObject[] = ['Metadata', 'None', 'Object'];

/** The includeObject query parameter: Metadata when absent; an error message when unknown. */
export function parseIncludeObject(v: string | undefined | null): IncludeObject | { error: string } {
  if (v === undefined || v === null || v === '') return 'Metadata';
  if ((INCLUDE_VALUES as string[]).includes(v)) return v as IncludeObject;
  // kube-apiserver's 400 message (TableOptions validation), word for word.
  return { error: `Unable to convert to Table as requested: includeObject: Invalid value: ${JSON.stringify(v)}: must be 'Metadata', 'Object', 'None', or empty` };
}

const columnsJson = new WeakMap<KindPrinter, string>();
function encodeColumns(p: KindPrinter): string {
  let s = columnsJson.get(p);
  if (s === undefined) {
    s = JSON.stringify(p.columns.map((c: TableColumn) => ({ name: c.name, type: c.type, format: c.format, description: c.description, priority: c.priority })));
    columnsJson.set(p, s);
  }
  return s;
}

function encodeMeta(m: TableListMeta): string {
  const o: Record<string, unknown> = {};
  if (m.resourceVersion) o.resourceVersion = m.resourceVersion;
  if (m.continue) o.continue = m.continue;
  if (m.remainingItemCount !== undefined && m.remainingItemCount !== null) o.remainingItemCount = m.remainingItemCount;
  return JSON.stringify(o);
}

function rowObject(item: TableItem, include: IncludeObject, apiVersion: string): string | Buffer {
  switch (include) {
    case 'None':
      return 'null';
    case 'Object':
      return item.raw ?? JSON.stringify(item.obj);
    default:
      return `{"kind":"PartialObjectMetadata","apiVersion":${JSON.stringify(apiVersion)},"metadata":${JSON.stringify(item.obj?.metadata ?? {})}}`;
  }
}

/** The Table's JSON bytes. One item with a single object's metadata is a get; a list passes its list metadata. */
export function renderTable(printer: KindPrinter, items: TableItem[], meta: TableListMeta, opts: TableOptions): Buffer {
  const apiVersion = `meta.k8s.io/${opts.version ?? 'v1'}`;
  const parts: Array<string | Buffer> = [
    `{"kind":"Table","apiVersion":${JSON.stringify(apiVersion)},"metadata":${encodeMeta(meta)},"columnDefinitions":${opts.noHeaders ? 'null' : encodeColumns(printer)},"rows":`,
  ];
  if (items.length === 0 && printer.isDefault) parts.push('null');
  else {
    parts.push('[');
    for (let i = 0; i < items.length; i++) {
      const r = printer.row(items[i].obj, opts.now);
      let head = (i > 0 ? ',' : '') + `{"cells":${JSON.stringify(r.cells)}`;
      if (r.conditions && r.conditions.length) head += `,"conditions":${JSON.stringify(r.conditions)}`;
      parts.push(head + ',"object":', rowObject(items[i], opts.includeObject, apiVersion), '}');
    }
    parts.push(']');
  }
  parts.push('}');
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
}

function partialMetadata(obj: any, apiVersion: string): Record<string, unknown> {
  return { kind: 'PartialObjectMetadata', apiVersion, metadata: obj?.metadata ?? {} };
}

/**
 * The same Table as a plain object, for encoders that need one (YAML). Rows share the
 * given objects (and their metadata) by reference: encode it, do not mutate it.
 */
export function buildTable(printer: KindPrinter, objects: any[], meta: TableListMeta, opts: TableOptions): Record<string, unknown> {
  const apiVersion = `meta.k8s.io/${opts.version ?? 'v1'}`;
  const listMeta: TableListMeta = {};
  if (meta.resourceVersion) listMeta.resourceVersion = meta.resourceVersion;
  if (meta.continue) listMeta.continue = meta.continue;
  if (meta.remainingItemCount !== undefined && meta.remainingItemCount !== null) listMeta.remainingItemCount = meta.remainingItemCount;
  let rows: unknown[] | null = null;
  if (objects.length > 0 || !printer.isDefault) {
    rows = objects.map((obj) => {
      const r = printer.row(obj, opts.now);
      const row: Record<string, unknown> = { cells: r.cells };
      if (r.conditions && r.conditions.length) row.conditions = r.conditions;
      row.object = opts.includeObject === 'None' ? null : opts.includeObject === 'Object' ? obj : partialMetadata(obj, apiVersion);
      return row;
    });
  }
  return {
    kind: 'Table',
    apiVersion,
    metadata: listMeta,
    columnDefinitions: opts.noHeaders ? null : printer.columns.map((c) => ({ name: c.name, type: c.type, format: c.format, description: c.description, priority: c.priority })),
    rows,
  };
}
