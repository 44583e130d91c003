import { describe, it, expect } from 'vitest';
import { encodeForCommit } from './json.js';

describe('encodeForCommit', () => {
  it('splices the version into the metadata, not into a label of the same name', () => {
    const obj = { metadata: { labels: { resourceVersion: '' }, name: 'a"resourceVersion":""', namespace: 'n' }, apiVersion: 'v1', kind: 'ConfigMap', data: { resourceVersion: '' } };
    const { head, tail } = encodeForCommit(obj);
    const parsed = JSON.parse(head + '42' + tail);
    expect(parsed.metadata.resourceVersion).toBe('42');
    expect(parsed.metadata.labels.resourceVersion).toBe('');
    expect(parsed.data.resourceVersion).toBe('');
    expect(Object.keys(parsed)).toEqual(['kind', 'apiVersion', 'metadata', 'data']);
    expect(Object.keys(parsed.metadata)).toEqual(['name', 'namespace', 'resourceVersion', 'labels']);
  });
});
