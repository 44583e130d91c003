// A controller's read-modify-write of one stored object that writes only when the change
// function says it changed something (kube's controllers compare before they PATCH or
// UpdateStatus): the function runs on a fresh copy, again on a lost race, and decides
// from what it sees then.
//
// Thread ownership: the thread of the store (the main thread for controllers).
import type { ResourceTarget, Store } from '../registry/store.js';

const UNCHANGED = Symbol('unchanged');

/** true: written; false: nothing to change (or the object is gone). Other failures throw. */
export async function updateIfChanged(store: Store, t: ResourceTarget, ns: string, name: string, change: (obj: any) => boolean): Promise<boolean> {
  try {
    await store.storageUpdate(t, ns, name, false, (obj) => {
      if (!change(obj)) throw UNCHANGED;
    });
    return true;
  } catch (err) {
    if (err === UNCHANGED) return false;
    if ((err as { code?: number }).code === 404) return false;
    throw err;
  }
}
