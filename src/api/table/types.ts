// Types of the Table representation (meta.k8s.io/v1 Table, spec 2.5). Pure data: the
// printers in this folder turn a stored object into one row; table.ts assembles and
// encodes whole Tables.

export interface TableColumn {
  name: string;
  /** OpenAPI type of the cells: string, integer, boolean, number, date */
  type: string;
  /** "name" marks the column that identifies the object; otherwise empty */
  format: string;
  description: string;
  /** 0: always shown; 1: shown by kubectl only with -o wide */
  priority: number;
}

export interface TableRowCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface PrintedRow {
  cells: unknown[];
  conditions?: TableRowCondition[];
}

/** What a kind contributes: its columns, and one row per object. `now` is epoch ms. */
export interface KindPrinter {
  columns: TableColumn[];
  row(obj: any, now: number): PrintedRow;
  /** true for the default Name / Created At table (it lists no rows as null, as kube does) */
  isDefault?: boolean;
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

export function col(name: string, type: string, description: string, priority = 0, format = ''): TableColumn {
  return { name, type, format, description, priority };
}

export function nameCol(description = 'Name of the object, unique among its kind in its namespace.', priority = 0): TableColumn {
  return col('Name', 'string', description, priority, 'name');
}

export const AGE_DESCRIPTION = 'Time since the object was created.';
export function ageCol(): TableColumn {
  return col('Age', 'string', AGE_DESCRIPTION);
}
