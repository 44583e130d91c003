// What every verb handler receives from the router.
import type { ApiRequest, ResponseSink } from '../http/types.js';
import type { RequestInfo } from '../request/request-info.js';
import type { ResourceTarget, Store } from '../registry/store.js';
import type { NamespaceLifecycle } from '../registry/namespace-lifecycle.js';
import type { Targets } from '../api/targets.js';
import type { TokenAuthenticatorUnion } from '../auth/authenticator-union.js';
import type { ServiceAccountTokens } from '../auth/service-account.js';
import type { Authorizer } from '../http/filters/authorization.js';
import type { RbacResolver } from '../auth/rbac/resolver.js';
import type { KubeletClient } from '../kubelet/kubelet-client.js';

/** What the review kinds and serviceaccounts/token need: the server's authenticators and authorizer. */
export interface AuthContext {
  authorizer: Authorizer;
  /** RBAC's rule resolver, for the escalation checks on role and binding writes (whatever the modes, as kube) */
  rbac: RbacResolver;
  tokens: TokenAuthenticatorUnion;
  serviceAccounts: ServiceAccountTokens;
  /** --service-account-max-token-expiration (seconds, 0: none) */
  maxTokenExpirationSeconds: number;
  /** --service-account-extend-token-expiration */
  extendTokenExpiration?: boolean;
}

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
  auth?: AuthContext;
  /** how node agents are reached (the connect subresources: log, exec, attach, portforward, proxy) */
  kubelet?: KubeletClient;
}

export function apiVersionOf(t: ResourceTarget): string {
  return t.info.group ? `${t.info.group}/${t.info.version}` : t.info.version;
}
