// Assembles the server: storage (the backend --storage-backend names, under the cache
// layer), the registry, the filter chain
// and the transport. Start-up order matters: storage first (the version counter must be
// raised above everything stored before any write), then the initial namespaces, then
// the listener, and only then is the server ready.
import { join, resolve } from 'node:path';
import { mkdirSync } from 'node:fs';
import { completeOptions, frontThreadsFor, type ServerOptions } from './options.js';
import { availableParallelism, hostname } from 'node:os';
import { restrictUmask, tightenOwnDir } from './file-modes.js';
import { needsNodeFront, nodeTls, servingTls, uwsTls } from './http/tls-config.js';
import { createStorage, serveStorageSnapshots } from './storage/factory.js';
import { EncryptionTransformers } from './storage/encryption/index.js';
import { apiserverId } from './controllers/apiserver-identity.js';
import { StorageObjectCounts } from './storage/object-counts.js';
import { Cacher } from './storage/cacher.js';
import { Catalog } from './api/catalog.js';
import { Targets } from './api/targets.js';
import { Router } from './api/router.js';
import { Store } from './registry/store.js';
import { StrategyRegistry } from './registry/strategies.js';
import { NamespaceLifecycle } from './registry/namespace-lifecycle.js';
import { ensureKubernetesService } from './registry/kubernetes-service.js';
import { ensureDefaultServiceCidr } from './registry/allocators/ip-address-objects.js';
import { ServiceRepair } from './registry/allocators/service-repair.js';
import { GarbageCollector } from './controllers/garbage-collector.js';
import { GraceSweeper } from './controllers/grace-sweeper.js';
import { CustomResources } from './api/custom-resources.js';
import { CrdController } from './registry/crd/crd-controller.js';
import { FilterChain } from './http/filter-chain.js';
import type { ApiRequest, ResponseSink } from './http/types.js';
import { requestInfoFilter } from './http/filters/request-info.js';
import { authenticationFilter } from './http/filters/authentication.js';
import { buildTokenAuthenticator } from './auth/authenticator-union.js';
import { requestAuthenticatorFactories } from './auth/authenticator.js';
import { DynamicCaFile, clientCaSource } from './auth/dynamic-ca-file.js';
import { ensureSigningKey, ServiceAccountTokens } from './auth/service-account.js';
import { BootstrapTokenAuthenticator } from './auth/bootstrap-token.js';
import { buildJwtAuthenticators, serviceAccountKeyFiles } from './auth/oidc/start.js';
import { TokenCleaner } from './controllers/token-cleaner.js';
import { ServiceAccountsController } from './controllers/serviceaccounts.js';
import { RootCaPublisher } from './controllers/root-ca-publisher.js';
import { ClusterAuthenticationTrustController, type AuthenticationTrust } from './controllers/cluster-authentication-trust.js';
import { requestHeaderConfig } from './auth/authenticators/requestheader.js';
import { CsrController, loadSigningCa } from './controllers/csr-signing.js';
import { StorageProtectionController } from './controllers/storage-protection.js';
import { ValidatingAdmissionPolicyStatusController } from './controllers/validating-admission-policy-status.js';
import { compileMatchConditions } from './cel/match-conditions.js';
import { ResourceQuotaController } from './controllers/resource-quota.js';
import { FlowControlBootstrap } from './controllers/flowcontrol-bootstrap.js';
import { defaultAdmissionChain, enabledPluginNames } from './admission/index.js';
import { setConversionObjects } from './registry/crd/conversion-webhook.js';
import { readAdmissionConfiguration } from './admission/config.js';
import { controllerEnabled } from './controllers/controller-enabled.js';
import { podSecurityMetrics } from './admission/pod-security/metrics.js';
import { admissionMetrics } from './admission/webhook/metrics.js';
import { entryObject } from '../workers/watch/watch-cache.js';
import { objectKey } from './registry/store.js';
import { sendBody } from './http/respond.js';
import { impersonationFilter } from './http/filters/impersonation.js';
import { requestBodyFilter } from './http/filters/request-body.js';
import { auditFilter, withFailedAuthenticationAudit } from './http/filters/audit.js';
import { createAuditor } from './audit/auditor.js';
import { serveAudit } from './audit/remote-backend.js';
import { authorizationFilter, type AuthorizationAttributes, type Decision } from './http/filters/authorization.js';
import { buildAuthorizer } from './auth/authorizer-modes.js';
import { buildAuthorizerFromConfig } from './auth/authorization-config.js';
import { RbacResolver, RBAC_GROUP } from './auth/rbac/resolver.js';
import { RbacBootstrap } from './controllers/rbac-bootstrap.js';
import { PriorityClassBootstrap } from './controllers/priority-class-bootstrap.js';
import { ClusterRoleAggregation } from './controllers/clusterrole-aggregation.js';
import { InflightLimiter } from './flowcontrol/max-inflight.js';
import { PriorityAndFairness } from './flowcontrol/apf-filter.js';
import { SharedSeats } from './flowcontrol/shared-seats.js';
import { RemoteQueues } from './flowcontrol/remote-queues.js';
import { SharedWatchCounts } from './flowcontrol/watch-counts.js';
import { startUwsServer, type RunningServer } from './http/uws-transport.js';
import { startHttp2Server } from './http/http2-transport.js';
import { kubeletClient } from './kubelet/kubelet-client.js';
import { FrontThreads, claimPort, type FrontThreadData } from './front/front-threads.js';
import { BodyBudget } from './http/body-budget.js';
import { ForwardClient, serveForwarded } from './front/forward.js';
import { handoffFilter } from './front/handoff.js';
import type { MessagePort } from 'node:worker_threads';
import { ensureServingCert, GENERATED_CERT_FILES } from './auth/certs.js';
import { ensureAdminToken, writeKubeconfig } from './auth/admin-credentials.js';
import { loadTokenFile } from './auth/token-file.js';
import { StartupSteps, type HealthState } from './handlers/health.js';
import { ServerLifecycle } from './http/lifecycle.js';
import { requestTimeoutFilter } from './http/filters/request-timeout.js';
import { countWatchersIn, setBookmarkInterval, setFanoutTick } from '../workers/watch/watcher-group.js';
import { setMaxObjectBytes } from './registry/patch-limits.js';
import { features } from './features.js';
import { RequestMetrics } from './metrics/request-metrics.js';
import { metricsHandler } from './metrics/metrics-endpoint.js';
import { apiserverMetrics } from './metrics/apiserver-metrics.js';
import { countedFlowControl, timedAuthentication, timedAuthorization } from './metrics/auth-metrics.js';
import { instrumentStorage } from './storage/instrumented-storage.js';
import { storageSizeOf } from './storage/storage-size.js';
import { RequestTracing, setTracing } from './tracing/request-tracing.js';
import { readTracingConfig } from './tracing/tracing-config.js';
import { randomUUID } from 'node:crypto';
import { StatusError } from './errors.js';
import { LeaderElector } from './controllers/leader-election.js';
import { LeaderControllers, type ControllerSpec } from './controllers/leader-controllers.js';
import { NodeLifecycleController } from './controllers/node-lifecycle.js';
import { TaintEvictionController } from './controllers/taint-eviction.js';
import { Scheduler } from './scheduler/scheduler.js';
import { ReplicaSetController } from './controllers/replicaset.js';
import { DeploymentController } from './controllers/deployment.js';
import { ApiserverIdentity, serverHostname } from './controllers/apiserver-identity.js';
import { EndpointReconciler, LocalMasterLeases } from './controllers/endpoint-reconciler.js';
import { storeClient } from './controllers/object-client.js';
import { endpointAddress, leaseTimings } from './controllers/replica-settings.js';
import { Aggregator } from './aggregator/aggregator.js';
import { AvailableConditionController } from './aggregator/available-controller.js';
import { loadProxyClientCert } from './aggregator/backend-client.js';

/**
 * Set when startServer runs on a front thread other than the main one (issue 18): the
 * shards are the main thread's, reached over the ports given; the controllers and the
 * bootstrap writes stay on the main thread; this thread serves requests from its own
 * listener on the shared port (or only those other threads hand it, without one).
 */
export interface FrontThreadContext extends Omit<FrontThreadData, 'options'> {
  /** asks the main thread for a port to the bulk thread (started then if need be) */
  requestBulkPort(): Promise<MessagePort>;
}

export interface StartedServer {
  url: string;
  port: number;
  kubeconfigPath: string;
  /** The filter chain's entry, for in-process benchmarks (bench/front-inproc.ts) that skip TLS and HTTP. */
  handle(req: ApiRequest, res: ResponseSink): void;
  /** serves the requests another thread forwards over the port (handoff.ts) */
  serve(port: MessagePort): void;
  /** this thread's request metrics, for the main thread's scrape */
  /** this thread's request metrics and encryption at rest metrics, for the main thread's /metrics */
  renderMetrics(): Promise<string>;
  /** (another front thread) what the main thread tells of shard restarts */
  control(m: unknown): Promise<void>;
  /** stops accepting connections (the first step of shutdown; a front thread's before it ends) */
  stopListening(): void;
  /**
   * (another front thread) a signal of the graceful shutdown the main thread runs: resolves
   * once this thread has acted on it (for not-accepting: once its requests have drained).
   */
  lifecycleSignal(signal: LifecycleSignal): Promise<void>;
  shutdown(): Promise<void>;
}

/** The graceful shutdown's signals the main thread passes to the other front threads (src/http/lifecycle.ts). */
export type LifecycleSignal = 'initiated' | 'not-accepting';

/**
 * The start-up steps reported as kube's post-start hooks (/readyz's poststarthook/* checks),
 * in kube's order; server.ts finishes each at the step of ours that does that hook's work.
 */
function startupStepNames(o: ServerOptions): string[] {
  return [
    'start-apiserver-admission-initializer',
    'generic-apiserver-start-informers',
    ...(o.enablePriorityAndFairness ? ['priority-and-fairness-config-consumer', 'priority-and-fairness-filter'] : []),
    'storage-object-count-tracker-hook',
    'start-apiextensions-informers',
    'start-apiextensions-controllers',
    'crd-informer-synced',
    'start-system-namespaces-controller',
    'start-cluster-authentication-info-controller',
    'start-kube-apiserver-identity-lease-controller',
    'start-service-ip-repair-controllers',
    'rbac/bootstrap-roles',
    'scheduling/bootstrap-system-priority-classes',
    'priority-and-fairness-config-producer',
    'bootstrap-controller',
    'aggregator-reload-proxy-client-cert',
    'start-kube-aggregator-informers',
    'apiservice-status-local-available-controller',
    'apiservice-status-remote-available-controller',
    'apiservice-registration-controller',
    'apiservice-discovery-controller',
  ];
}

/** The steps only the main thread runs (the start-up writes, its controllers): done before another thread starts. */
const MAIN_THREAD_STEPS = new Set([
  'storage-object-count-tracker-hook',
  'start-apiextensions-controllers',
  'start-system-namespaces-controller',
  'start-cluster-authentication-info-controller',
  'start-kube-apiserver-identity-lease-controller',
  'start-service-ip-repair-controllers',
  'rbac/bootstrap-roles',
  'scheduling/bootstrap-system-priority-classes',
  'priority-and-fairness-config-producer',
  'bootstrap-controller',
  'apiservice-status-local-available-controller',
  'apiservice-status-remote-available-controller',
]);

/**
 * One of the writes every replica makes at start (kube-apiserver's post-start hooks). Replicas
 * starting together race on the same objects: a conflict (409) means another replica wrote
 * meanwhile, so the step runs again on what is stored now (each step skips what is already
 * right); one still losing after a few rounds is left to the replica that wins.
 */
async function startupWrite(what: string, step: () => Promise<void>): Promise<void> {
  for (let round = 1; ; round++) {
    try {
      return await step();
    } catch (e) {
      if (!(e instanceof StatusError && e.code === 409)) throw e;
      if (round >= 5) {
        console.warn(`W ${what}: ${e.message} (another replica is writing it)`);
        return;
      }
      await new Promise((r) => setTimeout(r, 50 * round));
    }
  }
}

export async function startServer(o: ServerOptions, thread?: FrontThreadContext): Promise<StartedServer> {
  /** the main thread: it owns the shard workers, runs the controllers and writes what start-up writes */
  const main = !thread;
  // (resolved once, on the main thread: the other threads get the options with it set)
  if (main) o = { ...o, frontThreads: frontThreadsFor(o.frontThreads, availableParallelism()) };
  // Before anything is written: nothing the server creates is for other local users.
  if (main) restrictUmask();
  features.reset();
  features.set(o.featureGates);
  if (main) for (const w of features.warnings) console.warn(`W feature gates: ${w}`);
  // kube's post-parse adjustments (anonymous off under AlwaysAllow, insecure cipher notes).
  for (const w of completeOptions(o)) if (main) console.warn(`W ${w}`);
  // Serving TLS (versions, suites, SNI certificates) is read now: a bad file stops start-up.
  const tlsSettings = servingTls(o);
  // The audit policy and backends first: a bad policy or webhook config stops start-up at once.
  const auditor = createAuditor(o.audit, thread?.audit);
  const dataDir = resolve(o.dataDir);
  // The post-start hooks' checks: each fails until its step is done (handlers/health.ts).
  const steps = new StartupSteps(startupStepNames(o));
  if (!main) for (const n of MAIN_THREAD_STEPS) steps.finish(n);
  // (--livez-grace-period counts from here, as kube's from its hooks' registration at start)
  const livezGraceUntil = o.livezGraceSeconds > 0 ? performance.now() + o.livezGraceSeconds * 1000 : undefined;
  // The backend is chosen before anything is written: one that cannot be built stops start-up here.
  // (the main thread's backend readied what another thread's starts from: Storage.connectFront)
  // (its requests timed for etcd_request_duration_seconds, and traced when tracing is on)
  const storage = instrumentStorage(createStorage(o, dataDir, thread && { index: thread.index, data: thread.storage }), apiserverMetrics);
  // --tracing-config-file: a bad file stops start-up; without it nothing is traced
  const tracing = o.tracingConfigFile ? new RequestTracing(readTracingConfig(o.tracingConfigFile), { host: o.bindAddress, port: o.securePort }, apiserverId(hostname())) : null;
  setTracing(tracing);
  mkdirSync(dataDir, { recursive: true });
  // What earlier versions left readable (0755 directories, 0644 shards, keys, kubeconfig):
  // the data dir's entries are the LMDB backend's layout file and shard directories, the
  // admin token and kubeconfig, the service-account key and the generated certificates
  // (a new file the server writes there joins this list).
  const warnFiles = (m: string) => console.warn(`W file permissions: ${m}`);
  const certDir = o.certDir || join(dataDir, 'certs');
  const ownEntries = new Set(['shards.json', 'admin-token.csv', 'admin.kubeconfig', 'sa.key', 'snapshot.sock', ...(o.certDir ? [] : ['certs'])]);
  if (main) tightenOwnDir(dataDir, (n) => ownEntries.has(n) || /^shard-\d+$/.test(n), warnFiles);
  if (main && o.certDir && !o.tlsCertFile) tightenOwnDir(certDir, (n) => GENERATED_CERT_FILES.has(n), warnFiles);
  const catalog = new Catalog({ runtimeConfig: o.runtimeConfig });
  const cert = ensureServingCert({ certDir, tlsCertFile: o.tlsCertFile, tlsPrivateKeyFile: o.tlsPrivateKeyFile, bindAddress: o.bindAddress });
  const admin = ensureAdminToken(dataDir);
  const tokens = new Map(admin.tokens);
  if (o.tokenAuthFile) for (const [t, u] of loadTokenFile(o.tokenAuthFile)) tokens.set(t, u);

  const cacher = new Cacher(storage, { watchCacheCapacity: o.defaultWatchCacheSize, watchCacheSizes: o.watchCacheSizes });
  setFanoutTick(o.watchFanoutTickMs);
  // The patch engines weigh their results against storage's limit before the write goes on.
  setMaxObjectBytes(o.maxObjectSizeBytes);
  setBookmarkInterval(o.watchBookmarkIntervalSeconds * 1000);
  // Encryption at rest: the configuration is loaded (each KMS plugin's first Status awaited)
  // before storage starts; one that does not load stops start-up, as kube's does. Every front
  // thread has its own transformers (they read encrypted values of their own), as has each
  // shard worker (storage/lmdb/lmdb-storage.ts useEncryption); the main thread's reloads lead.
  const encryption = await EncryptionTransformers.start({
    configFile: o.encryptionProviderConfig,
    automaticReload: o.encryptionProviderConfigAutomaticReload,
    apiServerId: apiserverId(hostname()),
    showHiddenMetrics: o.showHiddenMetricsForVersion === '1.32',
    // (the file's check interval is kube's minute; the tests shorten it)
    reloadIntervalMs: Number(process.env.KUBESHARD_ENCRYPTION_RELOAD_INTERVAL_MS) || undefined,
    onReloadError: (e) => console.error(`E ${e.message}`),
    onReloaded: main ? () => storage.encryptionReloaded?.() : undefined,
  });
  storage.useEncryption?.(encryption, { configFile: o.encryptionProviderConfig, automaticReload: o.encryptionProviderConfigAutomaticReload });
  for (const name of o.disabledMetrics) encryption.metrics.registry.removeSingleMetric(name);
  for (const name of o.disabledMetrics) admissionMetrics.registry.removeSingleMetric(name);
  try {
    await cacher.start();
    steps.finish('generic-apiserver-start-informers');
  } catch (err) {
    encryption.close();
    throw err;
  }
  // `kubeshard snapshot save` asks the running server over a socket in the data dir (LMDB)
  const snapshots = main ? await serveStorageSnapshots(storage, o, dataDir, (m) => console.warn(`W ${m}`)) : null;
  const strategies = new StrategyRegistry(cacher, {
    serviceClusterIpRange: o.serviceClusterIpRange,
    serviceNodePortRange: o.serviceNodePortRange,
  });
  const targets = new Targets(catalog, strategies);
  const store = new Store(cacher);
  store.deleteCollectionWorkers = o.deleteCollectionWorkers;
  // The built-in admission plugins read other objects from the front thread's caches.
  const cachedObjects = {
    get: (gr: string, ns: string, name: string) => {
      const e = cacher.cache(gr).items.get(objectKey(ns, name));
      return e ? entryObject(e) : undefined;
    },
    list: (gr: string, ns: string) => cacher.cache(gr).list(ns).map((e) => entryObject(e)),
  };
  // CRD conversion webhooks resolve a clientConfig.service from the same caches.
  setConversionObjects(cachedObjects);
  // kube's order and default-on set, less --disable-admission-plugins, plus
  // --enable-admission-plugins; each plugin gets its part of --admission-control-config-file.
  // CEL's `authorizer` in policies checks through the authorizer built below (kube's admission
  // authorizer); webhooks' matchConditions compile with the same CEL environment.
  let admissionAuthorize: ((a: AuthorizationAttributes) => Decision) | undefined;
  store.admission = defaultAdmissionChain(cachedObjects, {
    enable: o.enableAdmissionPlugins,
    disable: o.disableAdmissionPlugins,
    configs: readAdmissionConfiguration(o.admissionControlConfigFile, enabledPluginNames(o.enableAdmissionPlugins, o.disableAdmissionPlugins)),
    env: {
      defaultNotReadyTolerationSeconds: o.defaultNotReadyTolerationSeconds,
      defaultUnreachableTolerationSeconds: o.defaultUnreachableTolerationSeconds,
      namespaceLookup: () => store.namespaceLookup(),
      policies: {
        authorize: (a: AuthorizationAttributes) => (admissionAuthorize ? admissionAuthorize(a) : { allowed: false, reason: 'no authorizer' }),
      },
      webhooks: { compileMatchConditions },
    },
  });
  // CustomResourceDefinitions: the stored, established ones are served before the listener opens.
  // (another front thread only serves them: the main thread's controller writes their status)
  const crds = new CrdController(store, cacher, targets, new CustomResources(catalog));
  steps.finish('start-apiserver-admission-initializer');
  steps.finish('start-apiextensions-informers');
  await (main ? startupWrite('CustomResourceDefinitions', () => crds.start()) : crds.follow());
  if (main) steps.finish('start-apiextensions-controllers');
  steps.finish('crd-informer-synced');
  // What every replica writes at start (kube-apiserver's post-start hooks) tolerates another
  // replica having written it; the controllers that kube runs in kube-controller-manager run
  // only on the replica that holds the controller Lease (leaderControllers below).
  const namespaces = new NamespaceLifecycle(store, catalog, targets);
  if (main) await startupWrite('namespaces', () => namespaces.bootstrap());
  if (main) steps.finish('start-system-namespaces-controller');
  /** the kube-controller-manager side, started when this replica leads (leader-controllers.ts) */
  const controllerSpecs: ControllerSpec[] = [];
  // The default ServiceAccount of every namespace (kube's serviceaccount controller).
  controllerSpecs.push({ name: 'serviceaccount', make: (c) => new ServiceAccountsController(store, c, targets) });
  controllerSpecs.push({ name: 'namespace', make: (c) => namespaces.controller(c) });
  // Expired bootstrap-token Secrets deleted (kube-controller-manager's tokencleaner: off by default there too).
  controllerSpecs.push({ name: 'tokencleaner', make: (c) => (o.controllers.includes('tokencleaner') ? new TokenCleaner(store, c, targets.resolve('', 'v1', 'secrets')!) : undefined) });
  // The mandatory and suggested priority-and-fairness configuration, and FlowSchema status.
  const apfBootstrap = new FlowControlBootstrap(store, cacher, targets);
  if (main) await startupWrite('flowcontrol bootstrap', () => apfBootstrap.start());
  if (main) steps.finish('priority-and-fairness-config-producer');
  // RBAC: the default roles and bindings (kube's bootstrap-roles hook), the aggregated
  // roles' rules, and the resolver the authorizer and the escalation checks read. The
  // resolver's index follows the caches: any committed RBAC change marks it stale.
  // The system PriorityClasses (kube's scheduling/bootstrap-system-priority-classes hook).
  if (main) await startupWrite('system priority classes', () => new PriorityClassBootstrap(store, targets).start());
  if (main) steps.finish('scheduling/bootstrap-system-priority-classes');
  // kube-system/extension-apiserver-authentication: how this server authenticates, for
  // aggregated API servers (kube's cluster authentication trust controller)
  // The client CA files, followed while the server runs (kube's dynamic CA content): each
  // thread that serves keeps its own copy (the handshake, x509, the front proxy's check).
  const clientCa = o.clientCaFile ? new DynamicCaFile('--client-ca-file', o.clientCaFile) : undefined;
  const requestheaderCa = o.requestheaderClientCaFile ? new DynamicCaFile('--requestheader-client-ca-file', o.requestheaderClientCaFile) : undefined;
  // (followed on every thread: a thread that only reads the fingerprints has no listener to start it)
  clientCa?.start();
  requestheaderCa?.start();
  const rhConfig = requestHeaderConfig(o);
  const trustNow = (): AuthenticationTrust => ({ clientCa: clientCa?.pem ?? '', requestHeader: rhConfig && requestheaderCa ? { ...rhConfig, caPem: requestheaderCa.pem } : null });
  const authTrust = main ? new ClusterAuthenticationTrustController(store, cacher, targets, trustNow()) : undefined;
  if (authTrust) await startupWrite('extension-apiserver-authentication', () => authTrust.start());
  if (main) steps.finish('start-cluster-authentication-info-controller');
  if (authTrust) for (const f of [clientCa, requestheaderCa]) f?.onChange(() => void authTrust.update(trustNow()).catch((e) => console.warn(`W extension-apiserver-authentication: ${e}`)));
  const rbacBootstrap = new RbacBootstrap(store, targets);
  if (main) await startupWrite('rbac bootstrap', () => rbacBootstrap.start());
  if (main) steps.finish('rbac/bootstrap-roles');
  controllerSpecs.push({ name: 'clusterrole-aggregation', make: (c) => new ClusterRoleAggregation(store, c, rbacBootstrap.clusterRolesT) });
  const rbacTargets = Object.fromEntries(['clusterroles', 'roles', 'clusterrolebindings', 'rolebindings'].map((r) => [r, targets.resolve(RBAC_GROUP, 'v1', r)!]));
  const rbacGrs = new Set(Object.values(rbacTargets).map((t) => t.gr));
  const rbac = new RbacResolver({
    objects: (resource) => [...store.cacheOf(rbacTargets[resource]).items.values()].map((e) => entryObject(e)).filter((o) => o && !o.metadata?.deletionTimestamp),
  });
  cacher.observe((cache) => {
    if (rbacGrs.has(cache.gr)) rbac.invalidate();
  });
  const authzContext = { options: o, services: { rbac, store, cacher, targets } };
  const authorizer = o.authorizationConfigFile ? buildAuthorizerFromConfig(o.authorizationConfigFile, authzContext) : buildAuthorizer(o.authorizationMode, authzContext);
  // CEL evaluates synchronously: a webhook mode without a cached answer counts as NoOpinion there
  admissionAuthorize = (a) => authorizer.decideSync(a);
  // kube-root-ca.crt in every namespace (kube's root-ca-cert-publisher).
  controllerSpecs.push({
    name: 'root-ca-certificate-publisher',
    make: (c) => (controllerEnabled(o.controllers, 'root-ca-certificate-publisher-controller') ? new RootCaPublisher(store, c, targets, cert.caPem) : undefined),
  });
  // CertificateSigningRequests: kube-controller-manager's csrapproving (kubelet client
  // requests, by SubjectAccessReview) and csrsigning (with --cluster-signing-cert-file).
  const signingCa = o.clusterSigningCertFile ? loadSigningCa(o.clusterSigningCertFile, o.clusterSigningKeyFile) : null;
  controllerSpecs.push({
    name: 'csr',
    make: (c) =>
      new CsrController(store, c, targets, {
        ca: controllerEnabled(o.controllers, 'certificatesigningrequest-signing-controller') ? signingCa : null,
        durationSeconds: o.clusterSigningDurationSeconds,
        authorize: controllerEnabled(o.controllers, 'certificatesigningrequest-approving-controller') ? (a) => authorizer.decide(a) : null,
      }),
  });
  // Finishes deletions of claims and volumes that StorageObjectInUseProtection protects.
  controllerSpecs.push({
    name: 'storage-protection',
    make: (c) =>
      new StorageProtectionController(store, c, targets, {
        claims: controllerEnabled(o.controllers, 'persistentvolumeclaim-protection-controller'),
        volumes: controllerEnabled(o.controllers, 'persistentvolume-protection-controller'),
      }),
  });
  // ValidatingAdmissionPolicy status: type checking warnings and observedGeneration.
  controllerSpecs.push({
    name: 'validatingadmissionpolicy-status',
    make: (c) =>
      controllerEnabled(o.controllers, 'validatingadmissionpolicy-status-controller') ? new ValidatingAdmissionPolicyStatusController(store, c, targets, cachedObjects) : undefined,
  });
  // ResourceQuota status (hard and used), as kube's resource quota controller keeps it.
  controllerSpecs.push({
    name: 'resourcequota',
    make: (c) => (controllerEnabled(o.controllers, 'resourcequota-controller') ? new ResourceQuotaController(store, c, targets, cachedObjects) : undefined),
  });
  const host = o.bindAddress.includes(':') ? `[${o.bindAddress}]` : o.bindAddress;
  const advertised = o.bindAddress === '0.0.0.0' || o.bindAddress === '::' ? '127.0.0.1' : host;
  // MultiCIDRServiceAllocator (GA in 1.33): the default ServiceCIDR, then the IPAddress
  // objects of the allocated ClusterIPs (repaired after a crash), then the kubernetes Service.
  // (the allocators' state is the main thread's: other front threads hand it the writes of
  // Services and their addresses, front/front-threads.ts MAIN_THREAD_WRITES)
  const serviceCidrs = [strategies.serviceAllocator.ips.cidr];
  if (main) {
    await startupWrite('default ServiceCIDR', () => ensureDefaultServiceCidr(store, targets, serviceCidrs));
    strategies.onDefaultServiceCidrDeleted = () => {
      ensureDefaultServiceCidr(store, targets, serviceCidrs).catch((e) => console.warn(`W default ServiceCIDR: ${(e as Error).message}`));
    };
    strategies.serviceAllocator.objects.attach(store, targets);
    // a storage other replicas write too: claims in storage, and a view that follows theirs
    if (storage.name !== 'lmdb') strategies.serviceAllocator.shared = { nodePorts: storage.nodePortClaims?.(strategies.serviceAllocator.ports.min, strategies.serviceAllocator.ports.max) };
    strategies.serviceAllocator.follow(cacher);
    steps.finish('start-service-ip-repair-controllers');
    await startupWrite('kubernetes Service', () => ensureKubernetesService(store, targets, strategies.serviceAllocator, o.securePort));
  }
  // kube's allocator repair loops: what a crash left (an address without its IPAddress, an
  // IPAddress whose Service is gone, a NodePort claimed for a Service never stored) is put
  // right by the leader, at once and every 3 minutes.
  controllerSpecs.push({ name: 'service-repair', make: (c) => new ServiceRepair(strategies.serviceAllocator, c) });
  // The workload controllers: ReplicaSets keep their pods, Deployments roll out through ReplicaSets.
  controllerSpecs.push({ name: 'replicaset-controller', make: (c) => (controllerEnabled(o.controllers, 'replicaset-controller') ? new ReplicaSetController(store, c, targets) : undefined) });
  controllerSpecs.push({ name: 'deployment-controller', make: (c) => (controllerEnabled(o.controllers, 'deployment-controller') ? new DeploymentController(store, c, targets) : undefined) });
  // In-process controllers that finish deletions: the garbage collector and the grace-period sweeper.
  controllerSpecs.push({ name: 'garbagecollector', make: (c) => new GarbageCollector(store, c, catalog, targets) });
  controllerSpecs.push({ name: 'grace-sweeper', make: (c) => new GraceSweeper(store, c, [targets.resolve('', 'v1', 'pods')!]) });
  // Nodes (spec 3.4): heartbeats watched, Ready=Unknown and the unreachable/not-ready taints
  // (kube's node-lifecycle-controller), pods evicted from NoExecute taints they do not
  // tolerate (taint-eviction-controller), and a minimal scheduler binding pending pods
  // ('scheduler': off with --controllers=*,-scheduler where a real kube-scheduler runs).
  controllerSpecs.push({
    name: 'node-lifecycle-controller',
    make: (c) =>
      controllerEnabled(o.controllers, 'node-lifecycle-controller')
        ? new NodeLifecycleController(store, c, targets, {
            monitorPeriodMs: o.nodeMonitorPeriodSeconds * 1000,
            monitorGraceMs: o.nodeMonitorGracePeriodSeconds * 1000,
            startupGraceMs: o.nodeStartupGracePeriodSeconds * 1000,
            evictionRate: o.nodeEvictionRate,
            secondaryEvictionRate: o.secondaryNodeEvictionRate,
            largeClusterThreshold: o.largeClusterSizeThreshold,
            unhealthyZoneThreshold: o.unhealthyZoneThreshold,
          })
        : undefined,
  });
  controllerSpecs.push({ name: 'taint-eviction-controller', make: (c) => (controllerEnabled(o.controllers, 'taint-eviction-controller') ? new TaintEvictionController(store, c, targets) : undefined) });
  controllerSpecs.push({ name: 'scheduler', make: (c) => (controllerEnabled(o.controllers, 'scheduler') ? new Scheduler(store, c, targets, serverHostname()) : undefined) });

  // Leader election (kube-controller-manager's, over the Lease kube-system/kube-controller-manager):
  // the controllers above run while this replica holds it. On the embedded LMDB this process
  // is the only candidate: the first try takes the Lease, whoever an earlier run left in it.
  const timings = leaseTimings();
  const leaderControllers = new LeaderControllers(cacher, controllerSpecs);
  const leasesT = targets.resolve('coordination.k8s.io', 'v1', 'leases')!;
  const elector = main
    ? new LeaderElector(storeClient(store, leasesT), {
        namespace: 'kube-system',
        name: 'kube-controller-manager',
        identity: `${serverHostname()}_${randomUUID()}`,
        leaseDurationSeconds: timings.leaseDurationSeconds,
        renewDeadlineMs: timings.renewDeadlineMs,
        retryPeriodMs: timings.retryPeriodMs,
        soleCandidate: storage.name === 'lmdb',
        onStartedLeading: () => leaderControllers.start(),
        onStoppedLeading: () => leaderControllers.stop(),
        log: (m) => console.warn(`I leaderelection: ${m}`),
      })
    : undefined;
  await elector?.start();
  // kube's APIServerIdentity Lease, on every replica.
  const identity = main
    ? new ApiserverIdentity(storeClient(store, leasesT), { log: (m) => console.warn(`W ${m}`) })
    : undefined;
  identity?.start();
  if (main) steps.finish('start-kube-apiserver-identity-lease-controller');
  // The kubernetes Service's endpoints: kube's lease endpoint reconciler, each replica
  // keeping a master lease for its advertised address in storage (etcd: beside kube-apiserver's).
  const endpointIp = main ? endpointAddress(o.advertiseAddress, o.bindAddress) : undefined;
  let endpoints: EndpointReconciler | undefined;
  if (endpointIp && 'refused' in endpointIp) {
    console.warn(`W kubernetes endpoints: ${endpointIp.refused}`);
  } else if (endpointIp) {
    const epT = targets.resolve('', 'v1', 'endpoints')!;
    const sliceT = targets.resolve('discovery.k8s.io', 'v1', 'endpointslices');
    endpoints = new EndpointReconciler(storage.masterLeases?.() ?? new LocalMasterLeases(), storeClient(store, epT), sliceT && storeClient(store, sliceT), endpointIp.ip, o.securePort, {
      intervalMs: timings.endpointIntervalMs,
      ttlSeconds: timings.masterLeaseTtlSeconds,
      log: (m) => console.warn(`W ${m}`),
    });
    // (the first pass before the listener opens: the endpoints name this replica once it serves)
    await endpoints.reconcile().catch((e) => console.warn(`W kubernetes endpoints: ${(e as Error).message}`));
    endpoints.start();
  }
  // (kube's bootstrap-controller: the kubernetes Service and its endpoints)
  if (main) steps.finish('bootstrap-controller');

  // Service-account tokens: a signing key generated in the data dir at first start unless
  // --service-account-signing-key-file names one; audiences default to the issuers.
  const signingKeyFile = o.serviceAccountSigningKeyFile || join(dataDir, 'sa.key');
  if (main && !o.serviceAccountSigningKeyFile) ensureSigningKey(signingKeyFile);
  const lookupTargets = { serviceaccounts: targets.resolve('', 'v1', 'serviceaccounts')!, pods: targets.resolve('', 'v1', 'pods')!, secrets: targets.resolve('', 'v1', 'secrets')! };
  const serviceAccounts = new ServiceAccountTokens(
    {
      issuers: o.serviceAccountIssuers,
      apiAudiences: o.apiAudiences.length ? o.apiAudiences : o.serviceAccountIssuers,
      signingKeyFile,
      keyFiles: serviceAccountKeyFiles(o, signingKeyFile, main),
      lookup: o.serviceAccountLookup,
      maxExpirationSeconds: o.serviceAccountMaxTokenExpirationSeconds,
    },
    (resource, ns, name) => {
      const e = store.cacheOf(lookupTargets[resource]).items.get(objectKey(ns, name));
      return e ? entryObject(e) : null;
    },
  );
  // The bearer-token authenticators in kube's order: token file, service accounts, then the
  // registered ones (bootstrap, OIDC/JWT, webhook) that these options configure. The JWT
  // issuers are built first: they fetch their keys before the server serves.
  const jwtAuthenticators = await buildJwtAuthenticators(o, (m) => console.warn(`W ${m}`), serviceAccounts.opts.apiAudiences);
  const bootstrapTokens = o.enableBootstrapTokenAuth
    ? new BootstrapTokenAuthenticator((name) => {
        const e = store.cacheOf(lookupTargets.secrets).items.get(objectKey('kube-system', name));
        return e ? entryObject(e) : null;
      })
    : undefined;
  const authnContext = { options: o, services: { store, cacher, targets, serviceAccounts, bootstrapTokens, jwtAuthenticators, requestheaderCa }, apiAudiences: serviceAccounts.opts.apiAudiences };
  const tokenAuthenticator = buildTokenAuthenticator(authnContext, { tokens, serviceAccounts });
  const requestAuthenticators = requestAuthenticatorFactories()
    .map(([, f]) => f(authnContext))
    .filter((a): a is NonNullable<typeof a> => !!a);
  const authOpts = {
    anonymous: o.anonymousAuth,
    tokens: tokenAuthenticator,
    requestAuthenticators,
    // With the front proxy's CA the transport trusts two bundles: x509 checks its own
    // (and without --client-ca-file there is no x509 authenticator at all). The followed
    // file is checked per request, so that a chain of a replaced CA stops authenticating.
    clientCaAnchors: clientCa ?? (o.requestheaderClientCaFile ? null : undefined),
    anonymousConfig: jwtAuthenticators ? () => jwtAuthenticators.anonymous : undefined,
  };
  const extraPaths = new Map<string, (req: any, res: any) => void | Promise<void>>();
  // The issuer's OpenID discovery documents, served when the issuer is an https URL (as kube).
  if (/^https:\/\//.test(serviceAccounts.issuer)) {
    const jwksUri = o.serviceAccountJwksUri || `https://${advertised}:${o.securePort}/openid/v1/jwks`;
    const config = serviceAccounts.openidConfiguration(jwksUri);
    const jwks = await serviceAccounts.jwks();
    const cache: Array<[string, string]> = [['Cache-Control', 'public, max-age=3600']];
    extraPaths.set('/.well-known/openid-configuration', (req, res) => sendBody(req, res, 200, 'application/json', config, cache));
    extraPaths.set('/openid/v1/jwks', (req, res) => sendBody(req, res, 200, 'application/jwk-set+json', jwks, cache));
  }

  const health: HealthState = { ready: false, shuttingDown: false, storage: () => storage.storageProblem(), more: kmsHealth(encryption), steps, livezGraceUntil };
  // The graceful shutdown's state on this thread (--shutdown-* flags; the sequence is in shutdown() below).
  const lifecycle = new ServerLifecycle({
    sendRetryAfter: o.shutdownSendRetryAfter,
    watchGraceMs: o.shutdownWatchTerminationGraceSeconds * 1000,
    // (the requests' own deadline, and a little for their answers to leave)
    drainLimitMs: o.requestTimeoutSeconds * 1000 + 5000,
    log: main ? (m) => console.warn(`I ${m}`) : undefined,
  });
  // Priority and fairness (kube's default): the two inflight limits together are its
  // concurrency; with it off, they limit read-only and mutating requests apart, as before.
  // Either way the seats are the server's: every front thread counts them in one table,
  // made here by the main thread and handed to the others (front/front-threads.ts).
  // (shares for the listening front threads and the bulk thread, handoff.ts)
  const seats = new SharedSeats(thread?.seats, thread?.index ?? 0, o.frontThreads + 1);
  // apiserver_storage_objects: counted in storage where it can count (etcd, polled by the
  // main thread: the metric is process-wide), else from the caches
  const storageCounts = main && storage.count ? new StorageObjectCounts(storage.count.bind(storage), () => cacher.resourceTypes(), o.etcdCountMetricPollPeriodSeconds * 1000) : null;
  storageCounts?.start();
  // The work estimator's counts (kube's ObjectCountTracker and WatchTracker): objects as
  // storage last counted them, else as the caches hold them; the watchers of every front
  // thread (watch-counts.ts; this thread's own if the shared table had no room).
  const watchCounts = new SharedWatchCounts(thread?.watchCounts);
  countWatchersIn(watchCounts);
  const workSources = {
    objectCount: (gr: string) => storageCounts?.countOf(gr) ?? cacher.peek(gr)?.items.size,
    watchCount: (gr: string, ns: string) => watchCounts.interested(gr, ns) ?? cacher.peek(gr)?.watchers.interested(ns) ?? 0,
  };
  const apf = o.enablePriorityAndFairness
    ? new PriorityAndFairness(
        cacher,
        store,
        apfBootstrap.fsT,
        apfBootstrap.plT,
        {
          serverConcurrencyLimit: o.maxRequestsInflight + o.maxMutatingRequestsInflight,
          requestTimeoutSeconds: o.requestTimeoutSeconds,
          // the seat borrowing loop is the server's: the main thread runs it
          borrowing: main,
          showHiddenMetrics: o.showHiddenMetricsForVersion === '1.32',
          // the other front threads' requests that must wait, wait in the main thread's queues
          remote: thread ? new RemoteQueues(thread.queues) : undefined,
        },
        seats,
        workSources,
      )
    : null;
  const limiter = new InflightLimiter({ maxReadonly: o.maxRequestsInflight, maxMutating: o.maxMutatingRequestsInflight }, seats);
  // apiserver_current_inflight_requests: the last second's most, as kube's watermark (the
  // main thread rolls the period; every thread shows the same figures)
  const peakTimer = main ? setInterval(() => seats.rollPeaks(), 1000).unref() : undefined;
  const flowControl = apf ? apf.filter() : limiter.filter();
  if (apf) {
    steps.finish('priority-and-fairness-config-consumer');
    steps.finish('priority-and-fairness-filter');
  }
  if (main) steps.finish('storage-object-count-tracker-hook');
  const metrics = new RequestMetrics(
    {
      inflight: () => seats.peaks(),
      storageObjects: () => (storageCounts ? storageCounts.counts() : cacher.objectCounts()),
      // (with the plain inflight limits, read_vs_write_current_requests alone, as kube's max-inflight filter feeds it)
      flowControl: apf ? () => apf.snapshot() : main ? () => ({ flows: [], levels: [], readWrite: limiter.readWrite() }) : undefined,
    },
    new Set(o.disabledMetrics),
  );
  // PodSecurity's counts (src/admission/pod-security/metrics.ts), this thread's
  metrics.addSection(() => podSecurityMetrics.render());
  // authentication, authorization, audit, watch, watch cache and storage families (apiserver-metrics.ts)
  apiserverMetrics.setGauges({ watchCache: () => cacher.watchCacheStats(), storageSize: main ? () => storageSizeOf(o, dataDir) : undefined });
  const disabledMetrics = new Set(o.disabledMetrics);
  metrics.addSection(() => apiserverMetrics.render(disabledMetrics));
  // (another front thread hands a scrape to the main thread, which adds up every thread's)
  extraPaths.set('/metrics', thread ? (req, res) => toMain!.forward(req, res) : metricsHandler(metrics, () => others.renderMetrics(), async () => (await encryption.metrics.text()) + (availability?.metricsText() ?? '') + (await admissionMetrics.text())));
  // API aggregation (kube-aggregator): every front thread proxies and merges discovery from
  // what its cache says; the main thread alone keeps the APIServices' Available condition.
  // (the intervals are kube's; the tests shorten them)
  const aggregator = new Aggregator(cacher, cachedObjects, {
    enableAggregatorRouting: o.enableAggregatorRouting,
    proxyClientCert: loadProxyClientCert(o.proxyClientCertFile, o.proxyClientKeyFile),
    refreshMs: Number(process.env.KUBESHARD_AGGREGATOR_REFRESH_MS) || undefined,
  });
  steps.finish('aggregator-reload-proxy-client-cert');
  aggregator.start();
  steps.finish('start-kube-aggregator-informers');
  steps.finish('apiservice-registration-controller');
  steps.finish('apiservice-discovery-controller');
  const availability = main
    ? new AvailableConditionController(store, cacher, targets.resolve('apiregistration.k8s.io', 'v1', 'apiservices')!, cachedObjects, aggregator.resolver, aggregator.client, Number(process.env.KUBESHARD_AGGREGATOR_RESYNC_MS) || undefined)
    : undefined;
  availability?.start();
  if (main) {
    steps.finish('apiservice-status-local-available-controller');
    steps.finish('apiservice-status-remote-available-controller');
  }
  const router = new Router({
    aggregator,
    metrics,
    catalog,
    targets,
    store,
    namespaces,
    health,
    serverAddress: `${advertised}:${o.securePort}`,
    limits: { minRequestTimeoutSeconds: o.minRequestTimeout, watchMaxBufferedBytes: 16 * 1024 * 1024 },
    auth: { authorizer, rbac, tokens: tokenAuthenticator, serviceAccounts, maxTokenExpirationSeconds: o.serviceAccountMaxTokenExpirationSeconds, extendTokenExpiration: o.serviceAccountExtendTokenExpiration },
    extraPaths,
    kubelet: kubeletClient(o),
  });
  // Requests another thread runs (handoff.ts): to the main thread, the writes whose state
  // it alone holds; to the bulk thread, writes with large bodies.
  const toMain = thread && new ForwardClient(thread.toMain);
  let bulkClient: Promise<ForwardClient> | null = null;
  const toBulk = (): Promise<ForwardClient> => {
    if (!thread) return others.toBulk();
    bulkClient ??= thread.requestBulkPort().then((port) => new ForwardClient(port));
    return bulkClient.then((c) => {
      if (!c.isClosed) return c;
      // (the bulk thread ended: the main thread starts another one)
      bulkClient = null;
      return toBulk();
    });
  };
  const storedBytes = (req: ApiRequest): number => {
    const info = req.requestInfo!;
    const t = targets.resolve(info.apiGroup, info.apiVersion, info.resource);
    return (t && store.cacheOf(t).items.get(objectKey(info.namespace, info.name))?.json.length) || 0;
  };
  const handoff = handoffFilter({ toMain, toBulk: thread?.bulk ? undefined : toBulk, largeBytes: o.largeRequestOffloadBytes, storedBytes });
  const chain = new FilterChain([
    requestInfoFilter,
    // (kube's WithRetryAfter, WithWaitGroup and the request deadline sit outside authentication)
    lifecycle.filter(),
    requestTimeoutFilter(o.requestTimeoutSeconds, (req, code) => metrics.terminated(req, code)),
    timedAuthentication(auditor ? withFailedAuthenticationAudit(authenticationFilter(authOpts), auditor) : authenticationFilter(authOpts), apiserverMetrics),
    // (the request's span opens once its user is known: whether the client's trace context is trusted depends on it)
    ...(tracing ? [tracing.filter()] : []),
    // Only when auditing is on: otherwise requests never meet the filter.
    ...(auditor ? [auditFilter(auditor)] : []),
    impersonationFilter(authorizer),
    // (its 429s counted in apiserver_request_terminations_total)
    countedFlowControl(flowControl, (req, code) => metrics.terminated(req, code)),
    timedAuthorization(authorizationFilter(authorizer), apiserverMetrics),
    // Only now is the body read: a request refused above never has its body buffered.
    requestBodyFilter,
    handoff,
    router,
  ]);
  // What this thread runs for another: from the headers again, without flow control and
  // audit (the thread that holds the connection holds the seat and writes the record), and
  // never handed on to the bulk thread again.
  const forwardedChain = new FilterChain([
    requestInfoFilter,
    authenticationFilter(authOpts),
    impersonationFilter(authorizer),
    authorizationFilter(authorizer),
    requestBodyFilter,
    // (on another front thread: what only the main thread runs still goes there)
    ...(toMain ? [handoffFilter({ toMain, largeBytes: 0 })] : []),
    router,
  ]);
  const serve = (port: MessagePort) => {
    serveForwarded(port, (req, res) => forwardedChain.handle(req, res));
  };
  // The front end: uWS, unless client certificates are to be read (it cannot read them);
  // node:http2 then serves HTTP/2 and HTTP/1.1 through the same chain.
  const front = {
    host: o.bindAddress,
    port: o.securePort,
    certFile: cert.certFile,
    keyFile: cert.keyFile,
    maxBodyBytes: o.maxRequestBodyBytes,
    // Room for 64 bodies of the largest size (192 MiB by default), far more of smaller ones.
    maxBodyBytesInFlight: 64 * o.maxRequestBodyBytes,
    bodyBudget: thread?.bodyBudget ?? BodyBudget.sharedBuffer(),
    // (with tracing on, each request's chain runs in its own async context: tracing.run)
    handle: tracing ? (req: ApiRequest, res: ResponseSink) => tracing.run(() => chain.handle(req, res)) : (req: ApiRequest, res: ResponseSink) => chain.handle(req, res),
    observer: metrics,
    maxBytesPerSec: o.maxConnectionBytesPerSec,
  };
  // (node:http2 also for a TLS minimum other than 1.2, which uWS's BoringSSL cannot serve,
  // and when the operator asks for it: its header limits are kube's, uWS's compiled-in ones are not)
  // (the union of the client CA bundles, as kube's dynamic serving CA: the handshake asks for
  // a certificate and accepts either authority's; each authenticator checks its own)
  const clientCaBundles = clientCaSource([clientCa, requestheaderCa].filter((f): f is DynamicCaFile => f !== undefined));
  const nodeWhy = [
    ...(o.clientCaFile ? ['--client-ca-file'] : []),
    ...(o.requestheaderClientCaFile ? ['--requestheader-client-ca-file'] : []),
    ...(needsNodeFront(tlsSettings) ? [`--tls-min-version=${o.tlsMinVersion}`] : []),
  ];
  const nodeNeeded = nodeWhy.length > 0;
  const nodeFront = o.frontEnd === 'http2' || (o.frontEnd === 'auto' && nodeNeeded);
  // The choice is visible at start-up (issue 21): which front end serves, and why.
  if (main)
    console.warn(
      nodeFront
        ? `I front end: node:http2 (HTTP/2 and HTTP/1.1, client certificates), ${o.frontEnd === 'http2' ? 'asked for by --front-end=http2' : `needed by ${nodeWhy.join(', ')}: uWebSockets.js cannot read client certificates`}; node's HTTP stack costs 1.75 to 2.8 times uWS's CPU per request (bench/README.md, "Authentication cost")`
        : `I front end: uWebSockets.js (HTTP/1.1), ${o.frontEnd === 'uws' ? 'asked for by --front-end=uws' : 'no flag needs node:http2 (--client-ca-file, --requestheader-client-ca-file, a --tls-min-version other than VersionTLS12)'}`,
    );
  // More front threads share the port through SO_REUSEPORT, which only the uWS front end
  // has here (node 20's net cannot set it).
  const frontThreads = nodeFront ? 1 : o.frontThreads;
  if (main && nodeFront && o.frontThreads > 1) console.warn(`W --front-threads=${o.frontThreads}: the node:http2 front end serves from the main thread only`);
  const tlsWarnings: string[] = [];
  const kubeconfigPath = join(dataDir, 'admin.kubeconfig');
  if (thread) {
    // another front thread: on the port the main thread listens on, or no listener at all
    const listener = thread.listenPort ? await startUwsServer({ ...front, port: thread.listenPort, sharedPort: true, tls: uwsTls(tlsSettings, tlsWarnings) }) : null;
    health.ready = true;
    let stopping: Promise<void> | null = null;
    return {
      url: '',
      port: listener?.port ?? 0,
      kubeconfigPath,
      handle: (req, res) => chain.handle(req, res),
      control: (m) => storage.control?.(m) ?? Promise.resolve(),
      serve,
      renderMetrics: async () => metrics.render() + (await encryption.metrics.text()) + (await admissionMetrics.text()),
      stopListening: () => listener?.stopListening(),
      async lifecycleSignal(signal) {
        health.shuttingDown = true;
        lifecycle.initiate();
        if (signal !== 'not-accepting') return;
        // as the main thread's listener (see shutdown() there): closed now, or (with
        // --shutdown-send-retry-after) at the stop that follows every thread's drain, so that
        // no thread's listener closes while the others still answer 429 (the kernel resets
        // the connections queued on a SO_REUSEPORT listener that closes)
        if (!o.shutdownSendRetryAfter) listener?.stopListening();
        await lifecycle.stopAccepting();
      },
      shutdown() {
        stopping ??= (async () => {
          health.shuttingDown = true;
          crds.stop();
          aggregator.stop();
          clientCa?.stop();
          requestheaderCa?.stop();
          listener?.stopListening();
          await auditor?.backend.shutdown();
          await cacher.close();
          encryption.close();
          await tracing?.shutdown();
          listener?.closeConnections?.();
        })();
        return stopping;
      },
    };
  }
  // (made before the listener opens: the first large write may start the bulk thread)
  const others = new FrontThreads(
    o,
    storage,
    front.bodyBudget,
    serve,
    seats,
    (port) => {
      if (auditor) serveAudit(port, auditor.backend);
      else port.close();
    },
    apf ? (port) => apf.hostRemote(port) : undefined,
    watchCounts.sab,
  );
  if (frontThreads > 1) await claimPort(o.bindAddress, o.securePort);
  const listener: RunningServer = nodeFront
    ? await startHttp2Server({ ...front, clientCa: clientCaBundles, maxStreams: o.http2MaxStreams, goawayChance: o.goawayChance, tls: nodeTls(tlsSettings, tlsWarnings, clientCaBundles) })
    : await startUwsServer({ ...front, sharedPort: frontThreads > 1, tls: uwsTls(tlsSettings, tlsWarnings) });
  for (const w of tlsWarnings) console.warn(`W ${w}`);
  // The other front threads, on the same port, once everything start-up writes is written.
  try {
    if (frontThreads > 1) await others.start(frontThreads - 1, listener.port);
  } catch (err) {
    listener.stopListening();
    await others.stop();
    availability?.stop();
    authTrust?.stop();
    clientCa?.stop();
    requestheaderCa?.stop();
    jwtAuthenticators?.close();
    aggregator.stop();
    endpoints?.halt();
    identity?.stop();
    await elector?.stop(false);
    leaderControllers.stop();
    await snapshots?.close();
    storageCounts?.stop();
    await cacher.close();
    encryption.close();
    throw err;
  }
  const url = `https://${advertised}:${listener.port}`;
  writeKubeconfig(kubeconfigPath, url, cert.caPem, admin.token);
  health.ready = true;

  let stopping: Promise<void> | null = null;
  return {
    url,
    port: listener.port,
    kubeconfigPath,
    handle: (req, res) => chain.handle(req, res),
    control: () => Promise.resolve(),
    serve,
    renderMetrics: async () => metrics.render() + (await encryption.metrics.text()) + (await admissionMetrics.text()),
    stopListening: () => listener.stopListening(),
    lifecycleSignal: () => Promise.resolve(),
    /**
     * The graceful shutdown, in the order of kube's preparedGenericAPIServer.RunWithContext
     * (its signals are logged by their names, as kube logs them):
     *   ShutdownInitiated: /readyz fails; the pre-shutdown hooks run (this replica's
     *     address leaves the kubernetes endpoints); everything is still served
     *   AfterShutdownDelayDuration, once --shutdown-delay-duration has passed
     *   NotAcceptingNewRequest, once the hooks are done too: without
     *     --shutdown-send-retry-after the listeners close now; with it they stay open and new
     *     requests get 429
     *   InFlightRequestsDrained: every thread's non-long-running requests have ended (each is
     *     bounded by --request-timeout), and its watches within their grace period
     *   HTTPServerStoppedListening (with --shutdown-send-retry-after, only now)
     *   the audit backends flush; then the controllers stop, the other threads end, and
     *     storage closes last, after every write that was acknowledged
     */
    shutdown() {
      stopping ??= (async () => {
        const log = (m: string) => console.warn(`I ${m}`);
        const event = (name: string) => log(`[graceful-termination] shutdown event name="${name}"`);
        health.shuttingDown = true;
        lifecycle.initiate();
        event('ShutdownInitiated');
        const threadsInitiated = others.lifecycleSignal('initiated');
        const hooks = (async () => {
          await endpoints?.stop();
          log('[graceful-termination] pre-shutdown hooks completed name="PreShutdownHooksStopped"');
        })();
        if (o.shutdownDelaySeconds > 0) await new Promise((r) => setTimeout(r, o.shutdownDelaySeconds * 1000));
        event('AfterShutdownDelayDuration');
        await Promise.all([hooks, threadsInitiated]);
        event('NotAcceptingNewRequest');
        if (!o.shutdownSendRetryAfter) {
          listener.stopListening();
          event('HTTPServerStoppedListening');
        }
        // (a thread's drain is bounded by the request timeout and the watches' grace period)
        const drainLimitMs = (o.requestTimeoutSeconds + o.shutdownWatchTerminationGraceSeconds) * 1000 + 10_000;
        await Promise.all([lifecycle.stopAccepting(), others.lifecycleSignal('not-accepting', drainLimitMs)]);
        event('InFlightRequestsDrained');
        if (o.shutdownSendRetryAfter) listener.stopListening();
        // the other front threads: their listeners first, then their watchers, caches and connections
        await others.stop();
        if (o.shutdownSendRetryAfter) event('HTTPServerStoppedListening');
        // What the audit backends buffered is written (or sent) before the process exits.
        if (auditor) {
          await auditor.backend.shutdown();
          log('[graceful-termination] audit backend shutdown completed');
        }
        // the controller Lease is released, so that another replica takes over at once
        identity?.stop();
        await elector?.stop();
        leaderControllers.stop();
        namespaces.stop();
        apfBootstrap.stop();
        apf?.stop();
        clearInterval(peakTimer);
        crds.stop();
        availability?.stop();
        authTrust?.stop();
        clientCa?.stop();
        requestheaderCa?.stop();
        aggregator.stop();
        await snapshots?.close();
        storageCounts?.stop();
        // storage last: every write acknowledged is committed, and what is in flight ends first
        await cacher.close();
        encryption.close();
        await tracing?.shutdown();
        listener.closeConnections?.();
        log('[graceful-termination] apiserver is exiting');
      })();
      return stopping;
    },
  };
}

/**
 * The KMS health checks of encryption at rest (kms-providers, or kms-provider-N), as the
 * synchronous checks /healthz, /livez and /readyz run: each is run in the background every
 * second (the plugin's own answer is cached by its provider, kube's TTLs), and the endpoints
 * report its last outcome.
 */
function kmsHealth(encryption: EncryptionTransformers): Array<[string, () => string]> {
  const checks = encryption.healthChecks();
  if (checks.length === 0) return [];
  const last = new Map<string, string>();
  const poll = () => {
    for (const c of encryption.healthChecks()) c.check().then(() => last.set(c.name, ''), (e: Error) => last.set(c.name, e.message || 'failed'));
  };
  poll();
  setInterval(poll, 1000).unref();
  return checks.map((c) => [c.name, () => last.get(c.name) ?? ''] as [string, () => string]);
}
