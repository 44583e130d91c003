import { describe, it, expect } from 'vitest';
import { parseIncludeObject, printerFor, renderTable } from './table.js';

const NOW = Date.parse('2025-03-01T12:00:00Z');
const cm = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'cfg', namespace: 'default', uid: 'u-1', resourceVersion: '42', creationTimestamp: '2025-03-01T11:00:00Z', labels: { app: 'x' } }, data: { a: '1' } };
const raw = Buffer.from(JSON.stringify(cm));

describe('renderTable', () => {
  it('a list: metadata, column definitions, rows with PartialObjectMetadata by default', () => {
    const t = JSON.parse(renderTable(printerFor('', 'configmaps'), [{ obj: cm, raw }], { resourceVersion: '50', continue: 'tok', remainingItemCount: 3 }, { includeObject: 'Metadata', now: NOW }).toString());
    expect(t.kind).toBe('Table');
    expect(t.apiVersion).toBe('meta.k8s.io/v1');
    expect(t.metadata).toEqual({ resourceVersion: '50', continue: 'tok', remainingItemCount: 3 });
    expect(t.columnDefinitions.map((c: any) => c.name)).toEqual(['Name', 'Data', 'Age']);
    expect(Object.keys(t.columnDefinitions[0])).toEqual(['name', 'type', 'format', 'description', 'priority']);
    expect(t.rows).toEqual([{ cells: ['cfg', 1, '60m'], object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: cm.metadata } }]);
  });

  it('includeObject Object splices the stored bytes; None sends null; no headers omits the columns', () => {
    const obj = JSON.parse(renderTable(printerFor('', 'configmaps'), [{ obj: cm, raw }], {}, { includeObject: 'Object', now: NOW, version: 'v1beta1' }).toString());
    expect(obj.apiVersion).toBe('meta.k8s.io/v1beta1');
    expect(obj.metadata).toEqual({});
    expect(obj.rows[0].object).toEqual(cm);
    const none = JSON.parse(renderTable(printerFor('', 'configmaps'), [{ obj: cm }], { resourceVersion: '42' }, { includeObject: 'None', noHeaders: true, now: NOW }).toString());
    expect(none.columnDefinitions).toBeNull();
    expect(none.rows[0].object).toBeNull();
    expect(none.metadata).toEqual({ resourceVersion: '42' });
  });

  it('empty lists: [] rows, null for the default table', () => {
    expect(JSON.parse(renderTable(printerFor('', 'pods'), [], { resourceVersion: '9' }, { includeObject: 'Metadata', now: NOW }).toString()).rows).toEqual([]);
    expect(JSON.parse(renderTable(printerFor('rbac.authorization.k8s.io', 'roles'), [], { resourceVersion: '9' }, { includeObject: 'Metadata', now: NOW }).toString()).rows).toBeNull();
  });

  it('parses includeObject', () => {
    expect(parseIncludeObject(undefined)).toBe('Metadata');
    expect(parseIncludeObject('')).toBe('Metadata');
    expect(parseIncludeObject('Object')).toBe('Object');
    expect(parseIncludeObject('None')).toBe('None');
    expect(parseIncludeObject('all')).toEqual({ error: `Unable to convert to Table as requested: includeObject: Invalid value: "all": must be 'Metadata', 'Object', 'None', or empty` });
  });
});

describe('buildTable', () => {
  it('is the object form of renderTable', async () => {
    const { buildTable } = await import('./table.js');
    for (const includeObject of ['None', 'Metadata', 'Object'] as const) {
      for (const noHeaders of [false, true]) {
        const opts = { includeObject, noHeaders, now: NOW };
        const meta = { resourceVersion: '7', remainingItemCount: 0 };
        const bytes = JSON.parse(renderTable(printerFor('', 'configmaps'), [{ obj: cm, raw }], meta, opts).toString());
        expect(JSON.parse(JSON.stringify(buildTable(printerFor('', 'configmaps'), [cm], meta, opts)))).toEqual(bytes);
      }
    }
    expect(buildTable(printerFor('', 'roles'), [], {}, { includeObject: 'Metadata', now: NOW }).rows).toBeNull();
  });
});
