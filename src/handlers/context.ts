// What every verb handler receives from the router.
import type { ApiRequest, ResponseSink } from '../http/types.js';
import type { RequestInfo } from '../request/request-info.js';
import type { ResourceTarget, Store } from '../registry/store.js';
import type { NamespaceLifecycle } from '../registry/namespace-lifecycle.js';
import type { Targets } from '../api/targets.js';

export interface ServerLimits {
  minRequestTimeoutSeconds: number;
  watchMaxBufferedBytes: number;
}

export interface HandlerContext {
  req: ApiRequest;
  res: ResponseSink;
  info: RequestInfo;
  target: ResourceTarget;
  store: Store;
  namespaces: NamespaceLifecycle;
  limits: ServerLimits;
  /** every resource, for handlers that touch another kind (eviction reads PodDisruptionBudgets) */
  targets: Targets;
}

export function apiVersionOf(t: ResourceTarget): string {
  return t.info.group ? `${t.info.group}/${t.info.version}` : t.info.version;
}
