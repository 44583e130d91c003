import { describe, expect, it } from 'vitest';
import { storageKeyOf } from './storage-key.js';

describe('storageKeyOf', () => {
  it("names an LMDB object by kube's etcd key (its resource prefix, kube's exceptions included)", () => {
    expect(storageKeyOf('secrets', 'default/db')).toBe('/registry/secrets/default/db');
    expect(storageKeyOf('deployments.apps', 'ns/web')).toBe('/registry/deployments/ns/web');
    expect(storageKeyOf('services', 'ns/svc')).toBe('/registry/services/specs/ns/svc');
    expect(storageKeyOf('nodes', '/n1')).toBe('/registry/minions/n1');
    expect(storageKeyOf('widgets.example.com', 'ns/w')).toBe('/registry/example.com/widgets/ns/w');
  });
});
