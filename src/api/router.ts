// The last filter: routes a request to the health and discovery endpoints, or to the
// handler of its verb on its resource, or (a group-version served nowhere here) to the
// server an APIService names (src/aggregator). Discovery documents are built once per
// served set (the catalog's, the aggregated APIs') and sent as the same bytes.
import { AggregatedDiscovery } from './aggregated-discovery.js';
import { sendDiscoveryDoc } from './discovery-response.js';
import { offloadYaml } from '../codec/yaml-offload.js';
import { bodyText } from '../codec/decode.js';
import type { Filter } from '../http/filter-chain.js';
import type { ApiRequest, ResponseSink } from '../http/types.js';
import { sendJson, sendText } from '../http/respond.js';
import { errors } from '../errors.js';
import type { Catalog } from './catalog.js';
import type { Targets } from './targets.js';
import * as discovery from './discovery.js';
import { OpenApiHandler } from './openapi-handler.js';
import { checkCustomRequest } from './custom-requests.js';
import type { Store } from '../registry/store.js';
import type { NamespaceLifecycle } from '../registry/namespace-lifecycle.js';
import type { HandlerContext, ServerLimits } from '../handlers/context.js';
import { handleGet } from '../handlers/get.js';
import { handleList } from '../handlers/list.js';
import { handleWatch } from '../handlers/watch.js';
import { handleCreate } from '../handlers/create.js';
import { handleUpdate } from '../handlers/update.js';
import { handlePatch } from '../handlers/patch.js';
import { handleDelete } from '../handlers/delete.js';
import { handleDeleteCollection } from '../handlers/deletecollection.js';
import { healthHandler, type HealthState } from '../handlers/health.js';
import { handleScale } from '../handlers/scale.js';
import { handleEviction } from '../handlers/eviction.js';
import { handleBinding } from '../handlers/binding.js';
import { handleFinalize } from '../handlers/finalize.js';
import { handleReview, REVIEW_KINDS } from '../handlers/review.js';
import { handleServiceAccountToken } from '../handlers/serviceaccount-token.js';
import { handleLog } from '../handlers/log.js';
import { handleExecOrAttach, handlePortForward } from '../handlers/connect.js';
import { handleProxy } from '../handlers/proxy.js';
import type { AuthContext } from '../handlers/context.js';
import type { Aggregator } from '../aggregator/aggregator.js';
import { inHandlerSpan, tracingOn } from '../tracing/request-tracing.js';

type VerbHandler = (c: HandlerContext) => void | Promise<void>;

const HANDLERS: Record<string, VerbHandler> = {
  get: handleGet,
  list: handleList,
  watch: handleWatch,
  create: handleCreate,
  update: handleUpdate,
  patch: handlePatch,
  delete: handleDelete,
  deletecollection: handleDeleteCollection,
};

/** Subresources that are served by the generic store as views of the main object. */
// pods/ephemeralcontainers and pods/resize are views of the pod whose writes change one part of the spec (src/registry/pod-subresources.ts).
// certificatesigningrequests/approval is the CSR's Approved and Denied conditions (src/registry/csr-strategy.ts).
const STORE_SUBRESOURCES = new Set(['status', 'ephemeralcontainers', 'resize', 'approval']);

/** Subresources with a handler of their own (the catalog says which verbs each allows). */
const SUBRESOURCE_HANDLERS: Record<string, VerbHandler> = {
  scale: handleScale,
  eviction: handleEviction,
  binding: handleBinding,
  finalize: handleFinalize,
  token: handleServiceAccountToken,
  log: handleLog,
  exec: handleExecOrAttach,
  attach: handleExecOrAttach,
  portforward: handlePortForward,
  proxy: handleProxy,
};

/**
 * kube's deprecation warning of a resource (apiserver/pkg/endpoints/deprecation): "<gv> <Kind>
 * is deprecated in v1.X+[, unavailable in v1.Y+][; use <gv> <Kind>]". Spec 7.5, 9.4. The
 * request also sets the apiserver_requested_deprecated_apis gauge (src/metrics).
 */
export function deprecationWarning(group: string, version: string, kind: string, d: { deprecated: string; removed?: string; replacement?: string }): string {
  let msg = `${group ? `${group}/${version}` : version} ${kind} is deprecated in v${d.deprecated}+`;
  if (d.removed) msg += `, unavailable in v${d.removed}+`;
  if (d.replacement) msg += `; use ${d.replacement}`;
  return msg;
}

const AGGREGATED_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const AGGREGATED_V2BETA1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

interface Doc {
  body: Buffer;
  contentType: string;
  etag?: string;
  encoded?: Map<string, Buffer>;
}

export interface RouterDeps {
  catalog: Catalog;
  targets: Targets;
  store: Store;
  namespaces: NamespaceLifecycle;
  limits: ServerLimits;
  health: HealthState;
  serverAddress: string;
  auth?: AuthContext;
  /** non-resource GET endpoints served by another component (the service-account issuer's OIDC documents) */
  extraPaths?: Map<string, (req: ApiRequest, res: ResponseSink) => void | Promise<void>>;
  /** the request metrics: a deprecated API's use is noted there */
  metrics?: import('../metrics/request-metrics.js').RequestMetrics;
  /** API aggregation: the group-versions other servers serve (src/aggregator) */
  aggregator?: Aggregator;
  /** how node agents are reached (--kubelet-* flags) */
  kubelet?: import('../kubelet/kubelet-client.js').KubeletClient;
}

export class Router implements Filter {
  readonly name = 'handler';
  private docs!: Map<string, Doc>;
  private health: (req: ApiRequest, res: ResponseSink) => boolean;

  constructor(private deps: RouterDeps) {
    this.buildDocs();
    this.health = healthHandler(deps.health);
  }

  /**
   * The discovery documents and OpenAPI handler of the served set, built once per catalog
   * generation: at start-up, and again when a CRD starts or stops being served (new bytes,
   * so new ETags and OpenAPI hashes, as kube's discovery and OpenAPI controllers republish).
   */
  private buildDocs(): void {
    const json = (s: string): Doc => ({ body: Buffer.from(s), contentType: 'application/json' });
    const { catalog, aggregator } = this.deps;
    this.docsGeneration = catalog.generation;
    this.aggregatorGeneration = aggregator?.generation ?? 0;
    this.docs = new Map();
    this.docs.set('/version', json(discovery.versionDoc()));
    this.docs.set('/api', json(discovery.apiVersionsDoc(this.deps.serverAddress)));
    this.docs.set('/apis', json(discovery.apiGroupListDoc(catalog)));
    this.docs.set('aggregated:api:v2', { body: Buffer.from(discovery.aggregatedDiscoveryDoc(catalog, 'api', 'v2')), contentType: AGGREGATED_V2 });
    this.docs.set('aggregated:apis:v2', { body: Buffer.from(discovery.aggregatedDiscoveryDoc(catalog, 'apis', 'v2')), contentType: AGGREGATED_V2 });
    this.docs.set('aggregated:api:v2beta1', { body: Buffer.from(discovery.aggregatedDiscoveryDoc(catalog, 'api', 'v2beta1')), contentType: AGGREGATED_V2BETA1 });
    this.docs.set('aggregated:apis:v2beta1', { body: Buffer.from(discovery.aggregatedDiscoveryDoc(catalog, 'apis', 'v2beta1')), contentType: AGGREGATED_V2BETA1 });
    for (const gv of catalog.servedGroupVersions()) {
      if (gv.group === '') {
        this.docs.set(`/api/${gv.version}`, json(discovery.apiResourceListDoc(catalog, '', gv.version)));
      } else {
        if (!this.docs.has(`/apis/${gv.group}`)) this.docs.set(`/apis/${gv.group}`, json(discovery.apiGroupDoc(catalog, gv.group)));
        this.docs.set(`/apis/${gv.group}/${gv.version}`, json(discovery.apiResourceListDoc(catalog, gv.group, gv.version)));
      }
    }
    // The aggregated groups join /apis, aggregated discovery and /apis/<group> (kube-aggregator's handlers).
    if (aggregator?.hasGroups) {
      const localGroups = new Set(catalog.groups().map((g) => g.name));
      this.docs.get('/apis')!.body = aggregator.mergeGroupList(this.docs.get('/apis')!.body);
      for (const v of ['v2', 'v2beta1']) this.docs.get(`aggregated:apis:${v}`)!.body = aggregator.mergeAggregated(this.docs.get(`aggregated:apis:${v}`)!.body);
      for (const [path, body] of aggregator.groupDocs(localGroups)) this.docs.set(path, json(body));
    }
    this.openapi = new OpenApiHandler(catalog, aggregator?.openApi);
    const docs = this.docs;
    this.aggregated = new AggregatedDiscovery((which, v) => docs.get(`aggregated:${which}:${v}`)!.body);
  }

  private docsGeneration = -1;
  private aggregatorGeneration = 0;
  private openapi!: OpenApiHandler;
  private aggregated!: AggregatedDiscovery;

  run(req: ApiRequest, res: ResponseSink): void | Promise<void> {
    const info = req.requestInfo!;
    if (!info.isResourceRequest) return this.nonResource(req, res);
    // A large YAML body is parsed on a worker thread before the handler reads it.
    const parsing = offloadYaml(req.body, req.headers['content-type'], () => bodyText(req.body!));
    if (parsing) return parsing.then(() => this.resource(req, res, info));
    return this.resource(req, res, info);
  }

  private resource(req: ApiRequest, res: ResponseSink, info: NonNullable<ApiRequest['requestInfo']>): void | Promise<void> {
    const target = this.deps.targets.resolve(info.apiGroup, info.apiVersion, info.resource);
    if (!target) {
      // (only a group-version served nowhere here is looked for among the aggregated ones)
      const remote = this.deps.aggregator?.proxyFor(info.apiGroup, info.apiVersion);
      if (remote) return this.deps.aggregator!.serve(req, res, remote);
      throw errors.resourceNotFound();
    }
    if (target.info.custom) checkCustomRequest(req, info, target.info.custom);
    if (!target.info.namespaced) {
      if (info.namespace && info.resource !== 'namespaces') throw errors.resourceNotFound();
      // /api/v1/namespaces/{name} names a cluster-scoped object: it lives in no namespace.
      info.namespace = '';
    }
    const dep = target.info.deprecation;
    if (dep) {
      this.deps.metrics?.deprecatedRequested(target.info.group, target.info.version, target.info.resource, info.subresource, dep.removed ?? '');
      if (!info.subresource) (req.warnings ??= []).push(deprecationWarning(target.info.group, target.info.version, target.info.kind, dep));
      if (req.audit !== undefined) {
        req.audit.annotate('k8s.io/deprecated', 'true');
        if (dep.removed) req.audit.annotate('k8s.io/removed-release', dep.removed);
      }
    }
    let verbs = target.info.verbs;
    const ctx = (): HandlerContext => ({ req, res, info, target, store: this.deps.store, namespaces: this.deps.namespaces, limits: this.deps.limits, targets: this.deps.targets, auth: this.deps.auth, kubelet: this.deps.kubelet });
    if (info.subresource) {
      const sub = target.info.subresources.find((s) => s.name === info.subresource);
      const own = sub ? SUBRESOURCE_HANDLERS[sub.name] : undefined;
      if (sub && own) {
        if (!sub.verbs.includes(info.verb)) throw errors.methodNotAllowed();
        if (target.info.namespaced && !info.namespace) throw errors.resourceNotFound();
        return own(ctx());
      }
      if (!sub || !STORE_SUBRESOURCES.has(sub.name)) throw errors.resourceNotFound();
      verbs = sub.verbs;
    } else if (REVIEW_KINDS.has(target.gr)) {
      // Create-only virtual kinds: nothing stored, no name; every other verb is not served.
      if (info.verb !== 'create' || info.name) throw errors.methodNotAllowed();
      if (target.info.namespaced && !info.namespace) throw errors.resourceNotFound();
      return handleReview(ctx());
    } else if (target.gr === 'bindings' && info.verb === 'create') {
      if (!info.namespace) throw errors.resourceNotFound();
      return handleBinding(ctx());
    }
    const verb = info.verb;
    const handler = HANDLERS[verb];
    if (!handler) throw errors.methodNotAllowed();
    if (!verbs.includes(verb === 'watch' && info.name ? 'watch' : verb)) {
      // A watch of one named object is a filtered watch of the collection.
      throw errors.methodNotAllowed();
    }
    if (target.info.namespaced && !info.namespace && verb !== 'list' && verb !== 'watch' && verb !== 'create') {
      throw errors.resourceNotFound();
    }
    // (under kube's handler span when tracing is on)
    return tracingOn() ? inHandlerSpan(verb, req, () => handler(ctx())) : handler(ctx());
  }

  private nonResource(req: ApiRequest, res: ResponseSink): void | Promise<void> {
    if (this.docsGeneration !== this.deps.catalog.generation || this.aggregatorGeneration !== (this.deps.aggregator?.generation ?? 0)) this.buildDocs();
    const path = req.path.length > 1 && req.path.endsWith('/') ? req.path.slice(0, -1) : req.path;
    if (this.health(req, res)) return;
    const extra = this.deps.extraPaths?.get(path);
    if (extra) {
      if (req.method !== 'GET' && req.method !== 'HEAD') throw errors.methodNotAllowed();
      return extra(req, res);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      if (this.docs.has(path)) throw errors.methodNotAllowed();
      const remote = path.startsWith('/apis/') ? this.deps.aggregator?.proxyForPath(path) : undefined;
      if (remote) return this.deps.aggregator!.serve(req, res, remote);
      sendText(res, 404, '404 page not found\n');
      return;
    }
    if ((path === '/api' || path === '/apis') && this.aggregated.serve(req, res, path === '/api' ? 'api' : 'apis')) return;
    if (path.startsWith('/openapi/') && this.openapi.serve(req, res, path)) return;
    const doc = this.docs.get(path);
    if (doc) {
      // /version is JSON whatever the Accept; the discovery documents are negotiated.
      if (path === '/version') sendJson(req, res, 200, doc.body);
      else sendDiscoveryDoc(req, res, doc);
      return;
    }
    if (path.startsWith('/apis/')) {
      const remote = this.deps.aggregator?.proxyForPath(path);
      if (remote) return this.deps.aggregator!.serve(req, res, remote);
    }
    if (path.startsWith('/api/') || path.startsWith('/apis/')) throw errors.resourceNotFound();
    sendText(res, 404, '404 page not found\n');
  }
}
