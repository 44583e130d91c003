// The feature gates the read path consults, read through one function each so that the
// read path does not depend on how gates are configured (--feature-gates, src/features.ts).
import { features } from '../features.js';

/** ListFromCacheSnapshot (alpha in 1.33, default off): Exact lists and continuations from cache snapshots kept 75 s. */
export function listFromCacheSnapshot(): boolean {
  return features.enabled('ListFromCacheSnapshot');
}
