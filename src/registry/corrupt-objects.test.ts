import { describe, it, expect } from 'vitest';
import { decodeProblem, storageKey } from './corrupt-objects.js';
import type { ResourceTarget } from './store.js';

const target = (resource: string, namespaced: boolean) => ({ info: { resource, namespaced } }) as unknown as ResourceTarget;

describe('corrupt objects', () => {
  it('names the storage key as kube-apiserver does', () => {
    expect(storageKey(target('configmaps', true), 'ns/a')).toBe('/registry/configmaps/ns/a');
    expect(storageKey(target('deployments', true), 'ns/a')).toBe('/registry/deployments/ns/a');
    expect(storageKey(target('clusterroles', false), '/admin')).toBe('/registry/clusterroles/admin');
  });

  it('says why bytes do not decode, in the words of Go\'s JSON decoder', () => {
    expect(decodeProblem(Buffer.from('garbage'))).toBe("couldn't get version/kind; json parse error: invalid character 'g' looking for beginning of value");
    expect(decodeProblem(Buffer.from([0x00, 0xff]))).toBe("couldn't get version/kind; json parse error: invalid character '\\x00' looking for beginning of value");
    expect(decodeProblem(Buffer.from('   '))).toBe("couldn't get version/kind; json parse error: unexpected end of JSON input");
    expect(decodeProblem(Buffer.from('{"kind":"ConfigMap"'))).toBe("couldn't get version/kind; json parse error: unexpected end of JSON input");
  });
});
