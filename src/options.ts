import { existsSync } from 'node:fs';
import { ALLOWED_SIGNING_ALGS, type OidcFlags } from './auth/oidc/jwt-config.js';
import { isIP } from 'node:net';
import { FeatureGates, FeatureGateError } from './features.js';
import { ALL_ORDERED_PLUGINS, enabledPluginNames, validatePluginFlags } from './admission/registry.js';
import { readAdmissionConfiguration } from './admission/config.js';
import { backendFlags, defaultAuditOptions, validateAuditOptions, type AuditOptions } from './audit/audit-options.js';
import { cipherSuiteNames, cipherSuitesError, insecureCipherWarnings, isTlsVersionName, parseSniCertKey, type SniCertKey } from './http/tls-config.js';

// Command-line flags, named and defaulted as kube-apiserver's where kube-apiserver has
// them. A flag we do not know, or a value we cannot use, stops start-up with a message.

export interface ServerOptions {
  securePort: number;
  bindAddress: string;
  /** --advertise-address: the address the kubernetes Service's endpoints give ('' = the bind address) */
  advertiseAddress: string;
  certDir: string;
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  /** --tls-min-version: VersionTLS10..VersionTLS13 ('' means VersionTLS12) */
  tlsMinVersion: string;
  /** --tls-cipher-suites: Go's crypto/tls names (none: Go's defaults) */
  tlsCipherSuites: string[];
  /** --tls-sni-cert-key, in flag order (earlier ones win a name) */
  tlsSniCertKeys: SniCertKey[];
  tokenAuthFile: string;
  /** --enable-aggregator-routing: aggregated APIs reached through their Services' endpoints (src/aggregator/service-resolver.ts) */
  enableAggregatorRouting: boolean;
  /** --proxy-client-cert-file / --proxy-client-key-file: the certificate the aggregator presents to the servers it proxies to */
  proxyClientCertFile: string;
  proxyClientKeyFile: string;
  /** --kubelet-client-certificate / --kubelet-client-key: what the server presents to node agents (logs, exec, port-forward, proxy) */
  kubeletClientCertificate: string;
  kubeletClientKey: string;
  /** --kubelet-certificate-authority: verifies the agents' serving certificates ('' verifies nothing, as kube) */
  kubeletCertificateAuthority: string;
  /** --kubelet-preferred-address-types: which of a Node's addresses reaches its agent, in order */
  kubeletPreferredAddressTypes: string[];
  /** --kubelet-port: the agent's port when the Node does not give one */
  kubeletPort: number;
  /** --client-ca-file: X509 client certificates (served through the node:http2 front end) */
  clientCaFile: string;
  /**
   * The front proxy's request-header authentication (kube's RequestHeaderAuthenticationOptions,
   * src/auth/authenticators/requestheader.ts): the CA of the proxy's client certificate, the
   * common names allowed, and the identity headers (undefined: the defaults, set with the CA).
   */
  requestheaderClientCaFile: string;
  requestheaderAllowedNames: string[];
  requestheaderUsernameHeaders?: string[];
  requestheaderGroupHeaders?: string[];
  requestheaderUidHeaders?: string[];
  requestheaderExtraHeadersPrefix?: string[];
  /** which front end serves: uWS unless something needs node:http2 ('auto'), or either by name */
  frontEnd: 'auto' | 'uws' | 'http2';
  /** threads serving requests (issue 18): the main one and frontThreads - 1 front workers; 0 until resolved (frontThreadsFor) */
  frontThreads: number;
  /** bodies of at least this size are written on the bulk thread (src/front/handoff.ts); 0: never */
  largeRequestOffloadBytes: number;
  /** --http2-max-streams-per-connection (0: the runtime's default) */
  http2MaxStreams: number;
  /** --goaway-chance: the probability that an HTTP/2 request ends its connection (GOAWAY) */
  goawayChance: number;
  dataDir: string;
  anonymousAuth: boolean;
  authorizationMode: string[];
  /** --authorization-config: an AuthorizationConfiguration file (exclusive with the mode and webhook flags) */
  authorizationConfigFile: string;
  /** --authorization-mode or an --authorization-webhook-* flag was given (kube's AreLegacyFlagsSet) */
  authorizationLegacyFlagsSet?: boolean;
  /** --authorization-policy-file: ABAC's policies, one JSON Policy a line */
  authorizationPolicyFile: string;
  /** --authorization-webhook-*: the Webhook mode's kubeconfig, review version and cache TTLs (seconds) */
  authorizationWebhookConfigFile: string;
  authorizationWebhookVersion: 'v1' | 'v1beta1';
  authorizationWebhookCacheAuthorizedTtlSeconds: number;
  authorizationWebhookCacheUnauthorizedTtlSeconds: number;
  /** --authentication-token-webhook-*: the webhook token authenticator's kubeconfig, cache TTL (seconds), review version */
  authenticationTokenWebhookConfigFile: string;
  authenticationTokenWebhookCacheTtlSeconds: number;
  authenticationTokenWebhookVersion: 'v1' | 'v1beta1';
  maxRequestsInflight: number;
  maxMutatingRequestsInflight: number;
  enablePriorityAndFairness: boolean;
  minRequestTimeout: number;
  /** --request-timeout: a non-long-running request is answered 504 past it (src/http/filters/request-timeout.ts) */
  requestTimeoutSeconds: number;
  /** --shutdown-delay-duration, seconds: /readyz fails while everything is still served (src/http/lifecycle.ts) */
  shutdownDelaySeconds: number;
  /** --shutdown-send-retry-after: during the drain new requests get 429 with Retry-After, the listener stays open */
  shutdownSendRetryAfter: boolean;
  /** --shutdown-watch-termination-grace-period, seconds: how long the drain waits for watches to end (0: not at all) */
  shutdownWatchTerminationGraceSeconds: number;
  /** --livez-grace-period, seconds: unfinished start-up steps pass /livez for this long after start */
  livezGraceSeconds: number;
  /** --delete-collection-workers: deletes a deletecollection runs at once */
  deleteCollectionWorkers: number;
  /** --max-connection-bytes-per-sec: a streamed (long-running) response's byte rate, 0 for none */
  maxConnectionBytesPerSec: number;
  runtimeConfig: string;
  /** --storage-backend: lmdb (the shard workers), or etcd3 (an etcd cluster, src/storage/etcd) */
  storageBackend: 'lmdb' | 'etcd3';
  /** --etcd-servers: the etcd client URLs (etcd3 only) */
  etcdServers: string[];
  /** --etcd-prefix: the key prefix of every object in etcd */
  etcdPrefix: string;
  /** --etcd-cafile, --etcd-certfile, --etcd-keyfile: TLS to etcd ('' for none) */
  etcdCafile: string;
  etcdCertfile: string;
  etcdKeyfile: string;
  /** --etcd-compaction-interval in seconds (0: this server never compacts) */
  etcdCompactionIntervalSeconds: number;
  /** --etcd-count-metric-poll-period in seconds (0: apiserver_storage_objects is not polled) */
  etcdCountMetricPollPeriodSeconds: number;
  /** --storage-media-type: how built-in kinds are stored in etcd (custom resources are JSON whatever it says) */
  storageMediaType: 'application/vnd.kubernetes.protobuf' | 'application/json';
  /** --etcd-servers-overrides as given: group/resource#url;url (parsed by etcdServersOverrides) */
  etcdServersOverrides: string[];
  shards: number;
  shardMap: Record<string, number>;
  watchCache: boolean;
  watchCacheSizes: Record<string, number>;
  defaultWatchCacheSize: number;
  historyRetentionSeconds: number;
  /** --event-ttl in seconds: how long an Event is kept after its last write (kube's TTL on each write); 0: kept for ever */
  eventTtlSeconds: number;
  /** --storage-batch-interval: how often each shard's B-tree takes the write-ahead log's records */
  storageBatchIntervalSeconds: number;
  /** --max-object-size-bytes: the largest object storage takes, in encoded bytes (etcd's --max-request-bytes) */
  maxObjectSizeBytes: number;
  /** --encryption-provider-config: an EncryptionConfiguration file ('' for none: nothing encrypted) */
  encryptionProviderConfig: string;
  /** --tracing-config-file: a TracingConfiguration file ('' for none: no spans made) */
  tracingConfigFile: string;
  /** --encryption-provider-config-automatic-reload: re-read that file when it changes */
  encryptionProviderConfigAutomaticReload: boolean;
  serviceClusterIpRange: string;
  serviceNodePortRange: { min: number; max: number };
  maxRequestBodyBytes: number;
  watchFanoutTickMs: number;
  /** --disabled-metrics: metric names not served on /metrics */
  disabledMetrics: string[];
  /** --show-hidden-metrics-for-version: '' or the previous minor release */
  showHiddenMetricsForVersion: string;
  /** --feature-gates as given (Gate=true,Other=false); checked at parse time, applied by the server */
  featureGates: string;
  watchBookmarkIntervalSeconds: number;
  defaultNotReadyTolerationSeconds: number;
  defaultUnreachableTolerationSeconds: number;
  /** --service-account-issuer: the first issues tokens, all are accepted */
  serviceAccountIssuers: string[];
  /** --service-account-signing-key-file ('' means <data-dir>/sa.key, generated at first start) */
  serviceAccountSigningKeyFile: string;
  /** --service-account-key-file (none means the signing key's public half) */
  serviceAccountKeyFiles: string[];
  /** --api-audiences (none means the issuers) */
  apiAudiences: string[];
  serviceAccountLookup: boolean;
  serviceAccountMaxTokenExpirationSeconds: number;
  serviceAccountJwksUri: string;
  serviceAccountExtendTokenExpiration: boolean;
  /** the --oidc-* flags (one JWT issuer; src/auth/oidc/jwt-config.ts) */
  oidc: OidcFlags;
  /** whether any --oidc-* flag was given (kube's OIDC FlagsSet) */
  oidcFlagsSet: boolean;
  /** --authentication-config: an AuthenticationConfiguration file (JWT issuers, anonymous) */
  authenticationConfigFile: string;
  /** --enable-bootstrap-token-auth */
  enableBootstrapTokenAuth: boolean;
  /** whether --anonymous-auth was given (kube's Anonymous FlagsSet) */
  anonymousAuthSet: boolean;
  /** --cluster-signing-cert-file / --cluster-signing-key-file: the CA of kube-controller-manager's csrsigning ('' means no signer runs) */
  clusterSigningCertFile: string;
  clusterSigningKeyFile: string;
  /** --cluster-signing-duration: the longest validity of a signed certificate (default 8760h) */
  clusterSigningDurationSeconds: number;
  /** --enable-admission-plugins: plugins on besides the default-on ones, by kube's names */
  enableAdmissionPlugins: string[];
  /** --disable-admission-plugins: default-on plugins switched off, by kube's names */
  disableAdmissionPlugins: string[];
  /** --admission-control-config-file: an AdmissionConfiguration (per-plugin configuration) */
  admissionControlConfigFile: string;
  /** --controllers: kube-controller-manager's list of the in-process controllers ('*', 'name', '-name') */
  controllers: string[];
  /** kube-controller-manager's node lifecycle flags (src/controllers/node-lifecycle.ts), durations in seconds */
  nodeMonitorPeriodSeconds: number;
  nodeMonitorGracePeriodSeconds: number;
  nodeStartupGracePeriodSeconds: number;
  nodeEvictionRate: number;
  secondaryNodeEvictionRate: number;
  largeClusterSizeThreshold: number;
  unhealthyZoneThreshold: number;
  /** the --audit-* flags */
  audit: AuditOptions;
}

export class FlagError extends Error {}

function oidcSet(o: ServerOptions, f: (flags: OidcFlags) => void): void {
  o.oidcFlagsSet = true;
  f(o.oidc);
}

// kube's BuiltInAuthenticationOptions.Validate for the JWT flags: the file and the flags
// are exclusive; the flags need both the issuer and the client id; algorithms from kube's list.
function validateOidcFlags(o: ServerOptions): void {
  if (o.authenticationConfigFile) {
    if (o.oidcFlagsSet) throw new FlagError('authentication-config file and oidc-* flags are mutually exclusive');
    if (!existsSync(o.authenticationConfigFile)) throw new FlagError(`failed to load authentication configuration from file ${JSON.stringify(o.authenticationConfigFile)}: open ${o.authenticationConfigFile}: no such file or directory`);
    return;
  }
  if (!o.oidcFlagsSet) return;
  if (!o.oidc.issuerURL || !o.oidc.clientID) throw new FlagError('oidc-issuer-url and oidc-client-id must be specified together when any oidc-* flags are set');
  let u: URL | undefined;
  try {
    u = new URL(o.oidc.issuerURL);
  } catch {
    /* below */
  }
  if (!u || u.protocol !== 'https:') throw new FlagError(`jwt[0].issuer.url: Invalid value: ${JSON.stringify(o.oidc.issuerURL)}: URL scheme must be https`);
  for (const a of o.oidc.signingAlgs) {
    if (!ALLOWED_SIGNING_ALGS.includes(a)) throw new FlagError(`oidc: unsupported signing alg: ${JSON.stringify(a)}`);
  }
  if (o.oidc.caFile && !existsSync(o.oidc.caFile)) throw new FlagError(`oidc-ca-file: open ${o.oidc.caFile}: no such file or directory`);
}

type Kind = 'int' | 'float' | 'string' | 'bool' | 'duration' | 'list';

interface FlagSpec {
  kind: Kind;
  help: string;
  set: (o: ServerOptions, v: any) => void;
}

const DURATION_UNITS: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, 'µs': 1e-6, ns: 1e-9 };

/** A Go duration ("1m30s", "100ms", "1.5h"), in seconds; a bare number is seconds. */
function parseDuration(flag: string, v: string): number {
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v);
  const part = /(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)/y;
  let total = 0;
  let at = 0;
  for (let m: RegExpExecArray | null; at < v.length && (m = part.exec(v)); at = part.lastIndex) total += Number(m[1]) * DURATION_UNITS[m[2]];
  if (v === '' || at !== v.length) throw new FlagError(`invalid argument "${v}" for "--${flag}" flag: time: invalid duration "${v}"`);
  return total;
}

function parseShardMap(v: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of v.split(',').filter(Boolean)) {
    const [k, n] = part.split('=');
    if (!k || n === undefined || !/^\d+$/.test(n)) throw new FlagError(`invalid --shard-map entry "${part}": want group-resource=index, e.g. pods=1 or deployments.apps=0`);
    out[k] = Number(n);
  }
  return out;
}

function parseCacheSizes(v: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of v.split(',').filter(Boolean)) {
    const [k, n] = part.split('#');
    if (!k || n === undefined || !/^\d+$/.test(n)) throw new FlagError(`invalid --watch-cache-sizes entry "${part}": want resource[.group]#size`);
    out[k] = Number(n);
  }
  return out;
}

const FLAGS: Record<string, FlagSpec> = {
  'secure-port': { kind: 'int', help: 'The port on which to serve HTTPS. It cannot be switched off with 0. (default 6443)', set: (o, v) => (o.securePort = v) },
  'bind-address': { kind: 'string', help: 'The IP address on which to listen. (default 127.0.0.1)', set: (o, v) => (o.bindAddress = v) },
  'advertise-address': {
    kind: 'string',
    help: 'The IP address on which to advertise the server to members of the cluster (the kubernetes Service\'s endpoints). If blank, the --bind-address is used.',
    set: (o, v) => (o.advertiseAddress = v),
  },
  'cert-dir': { kind: 'string', help: 'Where the self-signed serving certificate is generated when none is given. (default <data-dir>/certs)', set: (o, v) => (o.certDir = v) },
  'tls-cert-file': { kind: 'string', help: 'x509 serving certificate (with intermediates after it).', set: (o, v) => (o.tlsCertFile = v) },
  'tls-private-key-file': { kind: 'string', help: 'x509 private key matching --tls-cert-file.', set: (o, v) => (o.tlsPrivateKeyFile = v) },
  'tls-min-version': {
    kind: 'string',
    help: 'Minimum TLS version supported: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13. The uWebSockets.js front end (BoringSSL) is fixed at TLS 1.2 and 1.3, so any other minimum is served through the node:http2 front end. (default VersionTLS12)',
    set: (o, v) => (o.tlsMinVersion = v),
  },
  'tls-cipher-suites': {
    kind: 'list',
    help: `Comma-separated cipher suites for TLS 1.0-1.2, by Go's crypto/tls names (TLS 1.3's suites are always on, as in Go). If omitted, Go's defaults: ECDHE key exchange only, with AES-GCM, ChaCha20-Poly1305 or AES-CBC-SHA. Suites the front end's TLS library lacks (RC4 and CBC-SHA256 in uWebSockets.js's BoringSSL; RC4 and 3DES in Node's OpenSSL 3) are left out with a warning. Preferred values: ${cipherSuiteNames().preferred.join(', ')}. Insecure values: ${cipherSuiteNames().insecure.join(', ')}.`,
    set: (o, v: string[]) => (o.tlsCipherSuites = [...o.tlsCipherSuites, ...v]),
  },
  'tls-sni-cert-key': {
    kind: 'string',
    help: 'A certificate and key file pair, optionally followed by the domain patterns it serves ("foo.crt,foo.key:*.foo.com,foo.com"); without patterns, the names in the certificate. Explicit patterns win over extracted names, exact names over wildcards, earlier flags over later ones. Repeatable. (Clients that send no server name, e.g. to an IP address, get the default certificate.)',
    set: (o, v: string) => {
      try {
        o.tlsSniCertKeys = [...o.tlsSniCertKeys, parseSniCertKey(v)];
      } catch (e) {
        throw new FlagError(`invalid argument "${v}" for "--tls-sni-cert-key" flag: ${(e as Error).message}`);
      }
    },
  },
  'client-ca-file': { kind: 'string', help: 'Authorities that sign client certificates: a verified certificate authenticates its common name, its organizations as groups. Served through the node:http2 front end (HTTP/2 and HTTP/1.1).', set: (o, v) => (o.clientCaFile = v) },
  'requestheader-client-ca-file': {
    kind: 'string',
    help: 'Authorities of the authenticating front proxy: a request whose client certificate they verify (client-auth usage, and a common name in --requestheader-allowed-names when that is set) is authenticated by the identity headers below. Those headers are removed from every request, trusted or not. Needs the node:http2 front end (client certificates).',
    set: (o, v) => (o.requestheaderClientCaFile = v),
  },
  'requestheader-allowed-names': { kind: 'list', help: 'Common names a front proxy certificate may carry; empty allows any certificate --requestheader-client-ca-file verifies.', set: (o, v: string[]) => (o.requestheaderAllowedNames = [...o.requestheaderAllowedNames, ...v]) },
  'requestheader-username-headers': { kind: 'list', help: 'Headers that carry the user name, the first one with a value wins. (default X-Remote-User once --requestheader-client-ca-file is set)', set: (o, v: string[]) => (o.requestheaderUsernameHeaders = [...(o.requestheaderUsernameHeaders ?? []), ...v]) },
  'requestheader-group-headers': { kind: 'list', help: 'Headers whose every value is a group. (default X-Remote-Group once --requestheader-client-ca-file is set)', set: (o, v: string[]) => (o.requestheaderGroupHeaders = [...(o.requestheaderGroupHeaders ?? []), ...v]) },
  'requestheader-uid-headers': { kind: 'list', help: 'Headers that carry the user\'s UID, the first one with a value wins; X-Remote-Uid is suggested. Needs the RemoteRequestHeaderUID feature (beta, on). Read only when set, as kube.', set: (o, v: string[]) => (o.requestheaderUidHeaders = [...(o.requestheaderUidHeaders ?? []), ...v]) },
  'requestheader-extra-headers-prefix': { kind: 'list', help: 'Header name prefixes whose rest (lower-cased, percent-decoded) names an extra field of the user. (default X-Remote-Extra- once --requestheader-client-ca-file is set)', set: (o, v: string[]) => (o.requestheaderExtraHeadersPrefix = [...(o.requestheaderExtraHeadersPrefix ?? []), ...v]) },
  'kubelet-client-certificate': { kind: 'string', help: 'PEM client certificate the server presents to node agents (pods/log, exec, attach, portforward, the proxy subresources).', set: (o, v) => (o.kubeletClientCertificate = v) },
  'kubelet-client-key': { kind: 'string', help: 'PEM private key of --kubelet-client-certificate.', set: (o, v) => (o.kubeletClientKey = v) },
  'kubelet-certificate-authority': { kind: 'string', help: "PEM bundle that verifies node agents' serving certificates; without it they are not verified, as in kube-apiserver.", set: (o, v) => (o.kubeletCertificateAuthority = v) },
  'kubelet-preferred-address-types': {
    kind: 'list',
    help: "Node address types tried, in order, to reach a node's agent. (default Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP)",
    set: (o, v: string[]) => {
      const known = ['Hostname', 'InternalIP', 'ExternalIP', 'InternalDNS', 'ExternalDNS'];
      for (const t of v) if (!known.includes(t)) throw new FlagError(`--kubelet-preferred-address-types: unknown address type ${JSON.stringify(t)}, want one of ${known.join(', ')}`);
      o.kubeletPreferredAddressTypes = v;
    },
  },
  'kubelet-port': { kind: 'int', help: "The agents' port when a Node's status.daemonEndpoints.kubeletEndpoint.Port is not set. (default 10250; deprecated in kube-apiserver)", set: (o, v) => (o.kubeletPort = v) },
  'front-end': {
    kind: 'string',
    help: 'The HTTPS front end: uws (uWebSockets.js, HTTP/1.1, fastest), http2 (node:http2: HTTP/2 and HTTP/1.1, client certificates, TLS 1.0-1.1 minimums, and kube\'s header limits: up to 1 MiB of headers in any number of lines, where the uWS build drops a connection past 48 header lines or 4 KiB of headers split over reads), or auto: uws unless --client-ca-file, --requestheader-client-ca-file or --tls-min-version needs http2. (default auto)',
    set: (o, v: string) => {
      if (v !== 'auto' && v !== 'uws' && v !== 'http2') throw new FlagError(`--front-end: must be auto, uws or http2, got ${JSON.stringify(v)}`);
      o.frontEnd = v;
    },
  },
  'goaway-chance': { kind: 'float', help: 'Probability (0 to 0.02) that an HTTP/2 request closes its connection gracefully (GOAWAY), so clients spread over servers; 0 disables. (default 0)', set: (o, v) => (o.goawayChance = v) },
  'http2-max-streams-per-connection': { kind: 'int', help: 'Streams per HTTP/2 connection on the node:http2 front end (with --client-ca-file, or a --tls-min-version other than VersionTLS12); 0 means the runtime default.', set: (o, v) => (o.http2MaxStreams = v) },
  'cluster-signing-cert-file': { kind: 'string', help: 'PEM CA certificate of the CertificateSigningRequest signers (kubernetes.io/kube-apiserver-client, kube-apiserver-client-kubelet, kubelet-serving), as kube-controller-manager\'s. (default none: CSRs are not signed)', set: (o, v) => (o.clusterSigningCertFile = v) },
  'cluster-signing-key-file': { kind: 'string', help: 'PEM private key of --cluster-signing-cert-file.', set: (o, v) => (o.clusterSigningKeyFile = v) },
  'cluster-signing-duration': { kind: 'duration', help: 'Longest validity of a certificate the signers issue; spec.expirationSeconds may shorten it. (default 8760h0m0s)', set: (o, v) => (o.clusterSigningDurationSeconds = v) },
  'token-auth-file': { kind: 'string', help: 'Static bearer tokens: CSV token,user,uid[,"groups"].', set: (o, v) => (o.tokenAuthFile = v) },
  'data-dir': { kind: 'string', help: 'Directory of the LMDB shards and generated files. (default ./data)', set: (o, v) => (o.dataDir = v) },
  'anonymous-auth': {
    kind: 'bool',
    help: 'Allow anonymous requests (user system:anonymous, group system:unauthenticated). Switched off, with a warning, when AlwaysAllow is among the authorization modes, as in kube-apiserver. (default true)',
    set: (o, v) => {
      o.anonymousAuth = v;
      o.anonymousAuthSet = true;
    },
  },
  'authentication-config': {
    kind: 'string',
    help: 'File with an AuthenticationConfiguration (apiserver.config.k8s.io/v1): JWT issuers with claim mappings and validation rules (CEL), and the anonymous authenticator; reloaded when it changes. Exclusive with the --oidc-* flags.',
    set: (o, v) => (o.authenticationConfigFile = v),
  },
  'enable-bootstrap-token-auth': {
    kind: 'bool',
    help: "Allow Secrets of type 'bootstrap.kubernetes.io/token' in kube-system to be used for TLS bootstrapping authentication.",
    set: (o, v) => (o.enableBootstrapTokenAuth = v),
  },
  'oidc-issuer-url': { kind: 'string', help: 'The URL of the OpenID issuer, only HTTPS scheme will be accepted. If set, it will be used to verify the OIDC JSON Web Token (JWT).', set: (o, v) => oidcSet(o, (f) => (f.issuerURL = v)) },
  'oidc-client-id': { kind: 'string', help: 'The client ID for the OpenID Connect client, must be set if oidc-issuer-url is set.', set: (o, v) => oidcSet(o, (f) => (f.clientID = v)) },
  'oidc-username-claim': {
    kind: 'string',
    help: "The OpenID claim to use as the user name. Claims other than email are prefixed with the issuer URL and '#' unless --oidc-username-prefix is given. (default \"sub\")",
    set: (o, v) => oidcSet(o, (f) => (f.usernameClaim = v)),
  },
  'oidc-username-prefix': { kind: 'string', help: "Prefix of user names from the username claim; '-' disables prefixing.", set: (o, v) => oidcSet(o, (f) => (f.usernamePrefix = v)) },
  'oidc-groups-claim': { kind: 'string', help: "The OpenID claim holding the user's groups (a string or a list of strings).", set: (o, v) => oidcSet(o, (f) => (f.groupsClaim = v)) },
  'oidc-groups-prefix': { kind: 'string', help: 'Prefix of group names from the groups claim.', set: (o, v) => oidcSet(o, (f) => (f.groupsPrefix = v)) },
  'oidc-required-claim': {
    kind: 'string',
    help: 'A key=value pair that must be a claim of the ID token with that value. Repeat this flag for several claims.',
    set: (o, v: string) =>
      oidcSet(o, (f) => {
        for (const kv of v.split(',')) {
          const eq = kv.indexOf('=');
          if (eq < 0) throw new FlagError(`invalid argument "${v}" for "--oidc-required-claim" flag: ${kv} must be formatted as key=value`);
          f.requiredClaims[kv.slice(0, eq).trim()] = kv.slice(eq + 1).trim();
        }
      }),
  },
  'oidc-signing-algs': { kind: 'list', help: 'The signing algorithms accepted, of RS256, RS384, RS512, ES256, ES384, ES512, PS256, PS384, PS512. (default [RS256])', set: (o, v) => oidcSet(o, (f) => (f.signingAlgs = v)) },
  'oidc-ca-file': { kind: 'string', help: "The CA that signed the OpenID server's serving certificate (else the host's roots).", set: (o, v) => oidcSet(o, (f) => (f.caFile = v)) },
  'enable-aggregator-routing': {
    kind: 'bool',
    help: "Route the aggregator's requests to an APIService's Service through its EndpointSlices' endpoints rather than its cluster IP. Nothing routes cluster IPs here (there is no kube-proxy), so a ClusterIP Service is reached through its endpoints either way; false dials an ExternalName Service by its name, true refuses one, as kube. (default false)",
    set: (o, v) => (o.enableAggregatorRouting = v),
  },
  'proxy-client-cert-file': { kind: 'string', help: 'Client certificate the aggregator presents to the servers of aggregated APIs when it proxies a request, vouching for the X-Remote-User/Group/Extra-* identity it sends.', set: (o, v) => (o.proxyClientCertFile = v) },
  'proxy-client-key-file': { kind: 'string', help: 'Private key of --proxy-client-cert-file.', set: (o, v) => (o.proxyClientKeyFile = v) },
  'authorization-mode': { kind: 'list', help: 'Ordered list of AlwaysAllow, AlwaysDeny, ABAC, Webhook, RBAC, Node: the first mode that allows or denies decides. (default AlwaysAllow)', set: (o, v) => ((o.authorizationLegacyFlagsSet = true), (o.authorizationMode = v)) },
  'authorization-config': { kind: 'string', help: 'File with an AuthorizationConfiguration (apiserver.config.k8s.io/v1): an ordered chain of authorizers, webhooks with matchConditions and failurePolicy. Reloaded when it changes. Exclusive with --authorization-mode and --authorization-webhook-*.', set: (o, v) => (o.authorizationConfigFile = v) },
  'authorization-policy-file': { kind: 'string', help: 'File with the ABAC policies, one JSON Policy a line, for --authorization-mode=ABAC.', set: (o, v) => (o.authorizationPolicyFile = v) },
  'authorization-webhook-config-file': { kind: 'string', help: 'File in kubeconfig format naming the authorization webhook, for --authorization-mode=Webhook.', set: (o, v) => ((o.authorizationLegacyFlagsSet = true), (o.authorizationWebhookConfigFile = v)) },
  'authorization-webhook-version': { kind: 'string', help: 'The SubjectAccessReview version sent to the authorization webhook: v1beta1 or v1. (default "v1beta1")', set: (o, v) => ((o.authorizationLegacyFlagsSet = true), (o.authorizationWebhookVersion = v as any)) },
  'authorization-webhook-cache-authorized-ttl': { kind: 'duration', help: "How long the authorization webhook's allowed answers are cached. (default 5m0s)", set: (o, v) => ((o.authorizationLegacyFlagsSet = true), (o.authorizationWebhookCacheAuthorizedTtlSeconds = v)) },
  'authorization-webhook-cache-unauthorized-ttl': { kind: 'duration', help: "How long the authorization webhook's other answers are cached. (default 30s)", set: (o, v) => ((o.authorizationLegacyFlagsSet = true), (o.authorizationWebhookCacheUnauthorizedTtlSeconds = v)) },
  'authentication-token-webhook-config-file': { kind: 'string', help: 'File in kubeconfig format naming the token authentication webhook (TokenReview).', set: (o, v) => (o.authenticationTokenWebhookConfigFile = v) },
  'authentication-token-webhook-cache-ttl': { kind: 'duration', help: "How long the token webhook's answers are cached. (default 2m0s)", set: (o, v) => (o.authenticationTokenWebhookCacheTtlSeconds = v) },
  'authentication-token-webhook-version': { kind: 'string', help: 'The TokenReview version sent to the token authentication webhook: v1beta1 or v1. (default "v1beta1")', set: (o, v) => (o.authenticationTokenWebhookVersion = v as any) },
  'max-requests-inflight': { kind: 'int', help: 'Maximum non-mutating requests in flight. (default 400)', set: (o, v) => (o.maxRequestsInflight = v) },
  'max-mutating-requests-inflight': { kind: 'int', help: 'Maximum mutating requests in flight. (default 200)', set: (o, v) => (o.maxMutatingRequestsInflight = v) },
  'enable-priority-and-fairness': { kind: 'bool', help: 'Priority and fairness (FlowSchemas, priority levels, queues) instead of the plain inflight limits; the two limits together are its concurrency. (default true)', set: (o, v) => (o.enablePriorityAndFairness = v) },
  'min-request-timeout': { kind: 'int', help: 'Minimum watch timeout in seconds; the server picks one between it and twice it. (default 1800)', set: (o, v) => (o.minRequestTimeout = v) },
  'request-timeout': {
    kind: 'duration',
    help: 'How long a request that is not long-running (not a watch, exec, attach, port-forward, proxy or log) may take before it is answered 504 Timeout; a request\'s ?timeout= may shorten it. (default 1m0s)',
    set: (o, v) => (o.requestTimeoutSeconds = v),
  },
  'shutdown-delay-duration': {
    kind: 'duration',
    help: 'On SIGTERM, how long the server goes on serving every request as before while /readyz already fails (its shutdown check), so that load balancers take it out first; the graceful shutdown begins after it. (default 0s)',
    set: (o, v) => (o.shutdownDelaySeconds = v),
  },
  'shutdown-send-retry-after': {
    kind: 'bool',
    help: 'During the graceful shutdown, keep listening until the requests in flight (watches aside) have drained, answering every new request but health checks and /metrics with 429, Retry-After: 5 and Connection: close. False closes the listener when the delay ends. (default false)',
    set: (o, v) => (o.shutdownSendRetryAfter = v),
  },
  'shutdown-watch-termination-grace-period': {
    kind: 'duration',
    help: 'During the graceful shutdown, the longest the server waits for open watches, which it ends then (at least 200 a second), before it stops; 0 does not wait for them. (default 0s)',
    set: (o, v) => (o.shutdownWatchTerminationGraceSeconds = v),
  },
  'livez-grace-period': {
    kind: 'duration',
    help: 'For this long after start, /livez counts start-up steps (poststarthook/*) that have not finished as passing, so that a slow start does not get the server restarted; /readyz has no such grace. (default 0s)',
    set: (o, v) => (o.livezGraceSeconds = v),
  },
  'delete-collection-workers': { kind: 'int', help: 'How many deletes a deletecollection runs at once. (default 1)', set: (o, v) => (o.deleteCollectionWorkers = v) },
  'max-connection-bytes-per-sec': {
    kind: 'int',
    help: 'When not 0, the bytes per second each streamed (long-running) response may send: watches, logs. Other responses are not held back. (default 0)',
    set: (o, v) => (o.maxConnectionBytesPerSec = v),
  },
  'runtime-config': { kind: 'string', help: 'Comma-separated key[=value] switching group-versions or resources on or off: api/all, api/ga, api/beta, api/alpha, group/version, group/version/resource (core: v1, v1/pods).', set: (o, v) => (o.runtimeConfig = v) },
  'front-threads': {
    kind: 'int',
    help: 'Threads that serve requests, each with its own listener on the port (SO_REUSEPORT), caches and watchers; the uWS front end only. 0: one per two cores, as the shard workers and the bulk thread need cores too. (default 0)',
    set: (o, v) => (o.frontThreads = v),
  },
  'large-request-offload-bytes': {
    kind: 'int',
    help: 'A create, update or patch whose body has at least this many bytes, or an update, patch or delete of a stored object that large, runs on a thread of its own (the bulk thread, started at the first one), so that decoding and checking a large object never holds up the requests of the thread that received it; 0 runs every request where it arrived. (default 262144)',
    set: (o, v) => (o.largeRequestOffloadBytes = v),
  },
  'storage-backend': {
    kind: 'string',
    help: "The storage backend, as kube-apiserver's --storage-backend: lmdb (shard workers over LMDB in --data-dir) or etcd3 (the etcd cluster of --etcd-servers, in kube-apiserver's key layout and value format, so both servers can share it). (default lmdb)",
    set: (o, v: string) => {
      if (v !== 'lmdb' && v !== 'etcd3') throw new FlagError(`--storage-backend: must be lmdb or etcd3, got ${JSON.stringify(v)}`);
      o.storageBackend = v;
    },
  },
  'etcd-servers': { kind: 'list', help: 'With --storage-backend=etcd3: the etcd client URLs (http:// or https://), comma-separated; requests fail over from one to the next.', set: (o, v) => (o.etcdServers = v) },
  'etcd-prefix': { kind: 'string', help: 'With --storage-backend=etcd3: the etcd key prefix every object is stored under, as kube-apiserver lays keys out. (default "/registry")', set: (o, v) => (o.etcdPrefix = v) },
  'etcd-cafile': { kind: 'string', help: 'With --storage-backend=etcd3: the CA bundle that verifies the etcd servers\' certificates.', set: (o, v) => (o.etcdCafile = v) },
  'etcd-certfile': { kind: 'string', help: 'With --storage-backend=etcd3: the client certificate presented to etcd (with --etcd-keyfile).', set: (o, v) => (o.etcdCertfile = v) },
  'etcd-keyfile': { kind: 'string', help: 'With --storage-backend=etcd3: the private key of --etcd-certfile.', set: (o, v) => (o.etcdKeyfile = v) },
  'etcd-compaction-interval': {
    kind: 'duration',
    help: "With --storage-backend=etcd3: how often etcd's history is compacted, as kube-apiserver's compactor (the replicas take turns through etcd; each round keeps one interval of history). 0 means this server never compacts. (default 5m0s)",
    set: (o, v) => (o.etcdCompactionIntervalSeconds = v),
  },
  'etcd-count-metric-poll-period': {
    kind: 'duration',
    help: 'With --storage-backend=etcd3: how often each resource\'s objects are counted in etcd for apiserver_storage_objects. 0 means never. (default 1m0s)',
    set: (o, v) => (o.etcdCountMetricPollPeriodSeconds = v),
  },
  'storage-media-type': {
    kind: 'string',
    help: 'With --storage-backend=etcd3: how built-in kinds are encoded in etcd: application/vnd.kubernetes.protobuf (kube-apiserver\'s default) or application/json. Custom resources are stored as JSON either way. Objects are read in either format. (default "application/vnd.kubernetes.protobuf")',
    set: (o, v: string) => {
      if (v !== 'application/vnd.kubernetes.protobuf' && v !== 'application/json') {
        throw new FlagError(`--storage-media-type ${JSON.stringify(v)} invalid, allowed values: application/json, application/vnd.kubernetes.protobuf`);
      }
      o.storageMediaType = v;
    },
  },
  'etcd-servers-overrides': {
    kind: 'list',
    help: 'With --storage-backend=etcd3: per-resource etcd servers, comma-separated group/resource#servers with the servers\' URLs semicolon-separated (e.g. /events#http://127.0.0.1:4002, the core group empty): those resources are stored there, each cluster with its own client, watch and resource versions, under the same --etcd-prefix and TLS files.',
    set: (o, v) => (o.etcdServersOverrides = v),
  },
  shards: { kind: 'int', help: 'Number of LMDB shard workers. (default 2)', set: (o, v) => (o.shards = v) },
  'shard-map': { kind: 'string', help: 'Explicit placement: comma-separated group-resource=shard, e.g. pods=1,leases.coordination.k8s.io=0.', set: (o, v) => (o.shardMap = parseShardMap(v)) },
  'watch-cache': { kind: 'bool', help: 'Keep a watch cache ring per resource. (default true)', set: (o, v) => (o.watchCache = v) },
  'watch-cache-sizes': { kind: 'string', help: 'Per-resource ring sizes, resource[.group]#size; 0 disables.', set: (o, v) => (o.watchCacheSizes = parseCacheSizes(v)) },
  'default-watch-cache-size': { kind: 'int', help: 'Ring size for resources not in --watch-cache-sizes. (default 10000)', set: (o, v) => (o.defaultWatchCacheSize = v) },
  'watch-fanout-tick': { kind: 'int', help: 'Milliseconds the watch fan-out writes to watchers before it lets other work run; frames committed meanwhile leave with each watcher\'s next write. (default 5)', set: (o, v) => (o.watchFanoutTickMs = v) },
  'disabled-metrics': { kind: 'list', help: 'Metric names not to serve on /metrics (an escape hatch for a misbehaving metric).', set: (o, v) => (o.disabledMetrics = v) },
  'show-hidden-metrics-for-version': {
    kind: 'string',
    help: 'The previous minor release (1.32) whose deprecated metrics, hidden in this one, are shown again.',
    set: (o, v) => (o.showHiddenMetricsForVersion = v),
  },
  'watch-bookmark-interval': { kind: 'duration', help: 'How often watchers that allow bookmarks get a BOOKMARK event. (default 1m0s)', set: (o, v) => (o.watchBookmarkIntervalSeconds = v) },
  'enable-admission-plugins': {
    kind: 'list',
    help: `admission plugins that should be enabled in addition to default enabled ones. Comma-delimited list of admission plugins: ${ALL_ORDERED_PLUGINS.join(', ')}. The order of plugins in this flag does not matter.`,
    set: (o, v) => (o.enableAdmissionPlugins = v),
  },
  'disable-admission-plugins': {
    kind: 'list',
    help: `admission plugins that should be disabled although they are in the default enabled plugins list. Comma-delimited list of admission plugins: ${ALL_ORDERED_PLUGINS.join(', ')}. The order of plugins in this flag does not matter.`,
    set: (o, v) => (o.disableAdmissionPlugins = v),
  },
  'admission-control-config-file': { kind: 'string', help: 'File with admission control configuration.', set: (o, v) => (o.admissionControlConfigFile = v) },
  controllers: {
    kind: 'list',
    help: "In-process controllers, as kube-controller-manager's flag: '*' all, 'foo' on, '-foo' off (root-ca-certificate-publisher-controller, persistentvolumeclaim-protection-controller, persistentvolume-protection-controller, validatingadmissionpolicy-status-controller, node-lifecycle-controller, taint-eviction-controller, replicaset-controller, deployment-controller, and scheduler: kubeshard's minimal in-process scheduler, off with -scheduler where a real kube-scheduler runs). (default *)",
    set: (o, v) => (o.controllers = v),
  },
  'node-monitor-period': {
    kind: 'duration',
    help: "kube-controller-manager's: how often the node lifecycle controller checks the nodes' heartbeats (Leases in kube-node-lease and the Ready condition's lastHeartbeatTime). (default 5s)",
    set: (o, v) => (o.nodeMonitorPeriodSeconds = v),
  },
  'node-monitor-grace-period': {
    kind: 'duration',
    help: "kube-controller-manager's: how long a running node may go without a heartbeat before its Ready condition becomes Unknown and it is tainted node.kubernetes.io/unreachable. Must be N times more than the node agent's status update frequency, where N is the retries allowed. (default 50s)",
    set: (o, v) => (o.nodeMonitorGracePeriodSeconds = v),
  },
  'node-startup-grace-period': {
    kind: 'duration',
    help: "kube-controller-manager's: how long a node that never posted a Ready condition may stay silent before it is marked unhealthy. (default 1m0s)",
    set: (o, v) => (o.nodeStartupGracePeriodSeconds = v),
  },
  'node-eviction-rate': {
    kind: 'float',
    help: "kube-controller-manager's: nodes per second that get the NoExecute taint (so that their pods are evicted) when a zone is healthy (see --unhealthy-zone-threshold). Zone refers to the entire cluster in a cluster without zone labels. (default 0.1)",
    set: (o, v) => (o.nodeEvictionRate = v),
  },
  'secondary-node-eviction-rate': {
    kind: 'float',
    help: "kube-controller-manager's: nodes per second that get the NoExecute taint when a zone is unhealthy; implicitly 0 for zones of --large-cluster-size-threshold nodes or fewer. (default 0.01)",
    set: (o, v) => (o.secondaryNodeEvictionRate = v),
  },
  'large-cluster-size-threshold': {
    kind: 'int',
    help: "kube-controller-manager's: the number of nodes above which a zone is large for the eviction logic (--secondary-node-eviction-rate applies; 0 otherwise). (default 50)",
    set: (o, v) => (o.largeClusterSizeThreshold = v),
  },
  'unhealthy-zone-threshold': {
    kind: 'float',
    help: "kube-controller-manager's: the fraction of a zone's nodes (at least 3) that must be not Ready for the zone to be unhealthy. (default 0.55)",
    set: (o, v) => (o.unhealthyZoneThreshold = v),
  },
  'event-ttl': { kind: 'duration', help: 'Amount of time to retain events, counted from their last write. (default 1h0m0s)', set: (o, v) => (o.eventTtlSeconds = v) },
  'history-retention': { kind: 'duration', help: 'How long revision history is kept before compaction. (default 5m0s)', set: (o, v) => (o.historyRetentionSeconds = v) },
  'storage-batch-interval': {
    kind: 'duration',
    help: "At most how often each shard's B-tree takes the records of its write-ahead log, as etcd's backend batch interval: fewer B-tree flushes leave the device to the log's fdatasync, which writes wait for. Reads never wait for it. 0 means after every group commit. (default 100ms)",
    set: (o, v) => (o.storageBatchIntervalSeconds = v),
  },
  'max-object-size-bytes': {
    kind: 'int',
    help: "The largest object storage takes, in bytes of its stored JSON, as etcd's --max-request-bytes: a create, update or patch whose result is larger is refused as kube-apiserver refuses it over etcd (500, \"etcdserver: request is too large\"); after an update or a non-apply patch is refused, it is tried once more without metadata.managedFields. Deleting a larger object stored before is never refused. (default 1572864, 1.5 MiB)",
    set: (o, v) => {
      if (v < 1024) throw new FlagError(`invalid argument "${v}" for "--max-object-size-bytes" flag: must be at least 1024`);
      o.maxObjectSizeBytes = v;
    },
  },
  'tracing-config-file': {
    kind: 'string',
    help: 'The file of an apiserver.config.k8s.io TracingConfiguration (v1, v1beta1 or v1alpha1): endpoint and samplingRatePerMillion. Requests, their storage operations and admission webhook calls become OpenTelemetry spans, exported in batches over OTLP/gRPC without TLS, as kube-apiserver exports them, to the endpoint, a gRPC target (host:port, dns:///host:port or unix:///path; default localhost:4317; an http(s) URL is refused, as kube refuses it). A client\'s W3C traceparent is the parent for users in system:masters or system:monitoring, a link for others. Without the flag no span is made.',
    set: (o, v) => (o.tracingConfigFile = v),
  },
  'encryption-provider-config': {
    kind: 'string',
    help: 'The file (YAML or JSON) of an apiserver.config.k8s.io/v1 EncryptionConfiguration: which resources are encrypted at rest, on either storage backend, and how (identity, aescbc, aesgcm, secretbox, kms with apiVersion v2). The first provider of a resource encrypts, every provider listed can decrypt; the stored prefixes are kube-apiserver\'s (k8s:enc:aescbc:v1:<key>:), so either server reads what the other wrote to a shared etcd.',
    set: (o, v) => (o.encryptionProviderConfig = v),
  },
  'encryption-provider-config-automatic-reload': {
    kind: 'bool',
    help: 'Re-read --encryption-provider-config about every minute and use it once it loads and its KMS plugins answer; a file that does not load leaves the last good configuration in place (counted in apiserver_encryption_config_controller_automatic_reloads_total{status="failure"}). With it, KMS provider names must be unique and the KMS health checks are one, kms-providers.',
    set: (o, v) => (o.encryptionProviderConfigAutomaticReload = v),
  },
  'feature-gates': {
    kind: 'string',
    help: 'Comma-separated Gate=true|false pairs, e.g. CBORServingAndStorage=true. (APIResponseCompression=true, CBORServingAndStorage=false, WatchList=false, ...)',
    set: (o, v: string) => {
      try {
        new FeatureGates().set(v);
      } catch (e) {
        if (e instanceof FeatureGateError) throw new FlagError(`invalid argument "${v}" for "--feature-gates" flag: ${e.message}`);
        throw e;
      }
      o.featureGates = o.featureGates ? `${o.featureGates},${v}` : v;
    },
  },
  'service-cluster-ip-range': { kind: 'string', help: 'CIDR for Service ClusterIPs. (default 10.96.0.0/12)', set: (o, v) => (o.serviceClusterIpRange = v) },
  'default-not-ready-toleration-seconds': {
    kind: 'int',
    help: 'tolerationSeconds of the notReady:NoExecute toleration added to every pod that has none. (default 300)',
    set: (o, v) => (o.defaultNotReadyTolerationSeconds = v),
  },
  'default-unreachable-toleration-seconds': {
    kind: 'int',
    help: 'tolerationSeconds of the unreachable:NoExecute toleration added to every pod that has none. (default 300)',
    set: (o, v) => (o.defaultUnreachableTolerationSeconds = v),
  },
  'service-account-issuer': {
    kind: 'string',
    help: 'Identifier of the service account token issuer (the iss claim); repeat it to also accept tokens of earlier issuers. (default https://kubernetes.default.svc.cluster.local)',
    set: (o, v: string) => (o.serviceAccountIssuers = o.serviceAccountIssuers === DEFAULT_ISSUERS ? [v] : [...o.serviceAccountIssuers, v]),
  },
  'service-account-signing-key-file': { kind: 'string', help: 'PEM private key that signs service account tokens. (default <data-dir>/sa.key, generated)', set: (o, v) => (o.serviceAccountSigningKeyFile = v) },
  'service-account-key-file': {
    kind: 'string',
    help: 'PEM public or private keys (or certificates) that verify service account tokens; may be repeated. (default the signing key)',
    set: (o, v: string) => (o.serviceAccountKeyFiles = [...o.serviceAccountKeyFiles, v]),
  },
  'api-audiences': { kind: 'list', help: 'Audiences of the API: a service account token must name one of them. (default the issuers)', set: (o, v) => (o.apiAudiences = v) },
  'service-account-lookup': { kind: 'bool', help: 'Check that a service account token\'s account (and bound object) still exists. (default true)', set: (o, v) => (o.serviceAccountLookup = v) },
  'service-account-max-token-expiration': { kind: 'duration', help: 'Longest validity of an issued service account token; 0 means none. (default 0s)', set: (o, v) => (o.serviceAccountMaxTokenExpirationSeconds = v) },
  'service-account-jwks-uri': { kind: 'string', help: 'jwks_uri of the OpenID discovery document. (default https://<advertised address>/openid/v1/jwks)', set: (o, v) => (o.serviceAccountJwksUri = v) },
  'service-account-extend-token-expiration': { kind: 'bool', help: "Pod-bound tokens requested for 3607 seconds (the kubelet's projected tokens) are valid for a year and carry kubernetes.io.warnafter at the requested expiry, as kube-apiserver issues them. (default true)", set: (o, v) => (o.serviceAccountExtendTokenExpiration = v) },
  'service-node-port-range': {
    kind: 'string',
    help: 'Port range for NodePort Services, inclusive. (default 30000-32767)',
    set: (o, v: string) => {
      const m = /^(\d+)-(\d+)$/.exec(v);
      if (!m || Number(m[1]) > Number(m[2])) throw new FlagError(`invalid argument "${v}" for "--service-node-port-range" flag: want min-max`);
      o.serviceNodePortRange = { min: Number(m[1]), max: Number(m[2]) };
    },
  },
  'audit-policy-file': { kind: 'string', help: 'Path to the audit.k8s.io/v1 Policy (YAML or JSON) deciding what is audited; without it nothing is.', set: (o, v) => (o.audit.policyFile = v) },
  'audit-log-path': { kind: 'string', help: "If set, audit events are written to this file; '-' means standard out.", set: (o, v) => (o.audit.log.path = v) },
  'audit-log-format': { kind: 'string', help: 'Format of the audit log: "legacy" (one line of text per event) or "json" (one Event per line). (default "json")', set: (o, v) => (o.audit.log.format = v) },
  'audit-log-maxage': { kind: 'int', help: 'Days to keep old audit log files (by the timestamp in their name); 0 keeps them.', set: (o, v) => (o.audit.log.maxAge = v) },
  'audit-log-maxbackup': { kind: 'int', help: 'Old audit log files to keep; 0 keeps them all.', set: (o, v) => (o.audit.log.maxBackup = v) },
  'audit-log-maxsize': { kind: 'int', help: 'Megabytes of the audit log file before it is rotated. (default 100 when 0)', set: (o, v) => (o.audit.log.maxSize = v) },
  'audit-log-compress': { kind: 'bool', help: 'Gzip rotated audit log files.', set: (o, v) => (o.audit.log.compress = v) },
  ...auditFlags('log'),
  'audit-webhook-config-file': { kind: 'string', help: 'Path to a kubeconfig naming the remote audit webhook (its server, and how to authenticate to it).', set: (o, v) => (o.audit.webhook.configFile = v) },
  'audit-webhook-initial-backoff': { kind: 'duration', help: 'Wait before the first retry of a failed webhook request; later ones back off exponentially. (default 10s)', set: (o, v) => (o.audit.webhook.initialBackoff = v) },
  ...auditFlags('webhook'),
};

function auditFlags(plugin: 'log' | 'webhook'): Record<string, FlagSpec> {
  const out: Record<string, FlagSpec> = {};
  for (const [name, f] of Object.entries(backendFlags(plugin))) out[name] = { kind: f.kind, help: f.help, set: (o, v) => f.set(o.audit, v) };
  return out;
}

const DEFAULT_ISSUERS = ['https://kubernetes.default.svc.cluster.local'];

export function defaultOptions(): ServerOptions {
  return {
    securePort: 6443,
    bindAddress: '127.0.0.1',
    advertiseAddress: '',
    certDir: '',
    tlsCertFile: '',
    tlsPrivateKeyFile: '',
    tlsMinVersion: '',
    tlsCipherSuites: [],
    tlsSniCertKeys: [],
    tokenAuthFile: '',
    clusterSigningCertFile: '',
    clusterSigningKeyFile: '',
    clusterSigningDurationSeconds: 8760 * 3600,
    enableAggregatorRouting: false,
    proxyClientCertFile: '',
    proxyClientKeyFile: '',
    clientCaFile: '',
    kubeletClientCertificate: '',
    kubeletClientKey: '',
    kubeletCertificateAuthority: '',
    kubeletPreferredAddressTypes: ['Hostname', 'InternalDNS', 'InternalIP', 'ExternalDNS', 'ExternalIP'],
    kubeletPort: 10250,
    requestheaderClientCaFile: '',
    requestheaderAllowedNames: [],
    frontEnd: 'auto',
    frontThreads: 0,
    largeRequestOffloadBytes: 262144,
    http2MaxStreams: 0,
    goawayChance: 0,
    dataDir: './data',
    anonymousAuth: true,
    authorizationMode: ['AlwaysAllow'],
    authorizationPolicyFile: '',
    authorizationConfigFile: '',
    authorizationWebhookConfigFile: '',
    authorizationWebhookVersion: 'v1beta1',
    authorizationWebhookCacheAuthorizedTtlSeconds: 300,
    authorizationWebhookCacheUnauthorizedTtlSeconds: 30,
    authenticationTokenWebhookConfigFile: '',
    authenticationTokenWebhookCacheTtlSeconds: 120,
    authenticationTokenWebhookVersion: 'v1beta1',
    maxRequestsInflight: 400,
    maxMutatingRequestsInflight: 200,
    enablePriorityAndFairness: true,
    minRequestTimeout: 1800,
    requestTimeoutSeconds: 60,
    shutdownDelaySeconds: 0,
    shutdownSendRetryAfter: false,
    shutdownWatchTerminationGraceSeconds: 0,
    livezGraceSeconds: 0,
    deleteCollectionWorkers: 1,
    maxConnectionBytesPerSec: 0,
    runtimeConfig: '',
    storageBackend: 'lmdb',
    etcdServers: [],
    etcdPrefix: '/registry',
    etcdCafile: '',
    etcdCertfile: '',
    etcdKeyfile: '',
    etcdCompactionIntervalSeconds: 300,
    etcdCountMetricPollPeriodSeconds: 60,
    storageMediaType: 'application/vnd.kubernetes.protobuf',
    etcdServersOverrides: [],
    shards: 2,
    shardMap: {},
    watchCache: true,
    watchCacheSizes: {},
    defaultWatchCacheSize: 10000,
    historyRetentionSeconds: 300,
    eventTtlSeconds: 3600,
    storageBatchIntervalSeconds: 0.1,
    maxObjectSizeBytes: 1_572_864,
    encryptionProviderConfig: '',
    tracingConfigFile: '',
    encryptionProviderConfigAutomaticReload: false,
    serviceClusterIpRange: '10.96.0.0/12',
    serviceNodePortRange: { min: 30000, max: 32767 },
    maxRequestBodyBytes: 3 * 1024 * 1024,
    watchFanoutTickMs: 5,
    disabledMetrics: [],
    showHiddenMetricsForVersion: '',
    featureGates: '',
    watchBookmarkIntervalSeconds: 60,
    enableAdmissionPlugins: [],
    disableAdmissionPlugins: [],
    admissionControlConfigFile: '',
    controllers: ['*'],
    nodeMonitorPeriodSeconds: 5,
    nodeMonitorGracePeriodSeconds: 50,
    nodeStartupGracePeriodSeconds: 60,
    nodeEvictionRate: 0.1,
    secondaryNodeEvictionRate: 0.01,
    largeClusterSizeThreshold: 50,
    unhealthyZoneThreshold: 0.55,
    defaultNotReadyTolerationSeconds: 300,
    defaultUnreachableTolerationSeconds: 300,
    serviceAccountIssuers: DEFAULT_ISSUERS,
    serviceAccountSigningKeyFile: '',
    serviceAccountKeyFiles: [],
    apiAudiences: [],
    serviceAccountLookup: true,
    serviceAccountMaxTokenExpirationSeconds: 0,
    serviceAccountJwksUri: '',
    serviceAccountExtendTokenExpiration: true,
    oidc: { issuerURL: '', clientID: '', usernameClaim: 'sub', groupsClaim: '', groupsPrefix: '', requiredClaims: {}, signingAlgs: ['RS256'], caFile: '' },
    oidcFlagsSet: false,
    authenticationConfigFile: '',
    enableBootstrapTokenAuth: false,
    anonymousAuthSet: false,
    audit: defaultAuditOptions(),
  };
}

/** Every flag's name (without the dashes). */
export function flagNames(): string[] {
  return Object.keys(FLAGS);
}

export function usage(): string {
  const lines = ['Usage: kubeshard [flags]', '       kubeshard snapshot save|restore|status FILE ... (backup and restore; kubeshard snapshot --help)', '', 'Flags:'];
  const heads = Object.entries(FLAGS).map(([name, f]) => [`      --${name} ${f.kind === 'bool' ? '' : f.kind}`.trimEnd(), f.help]);
  const width = Math.max(...heads.map(([h]) => h.length)) + 2;
  for (const [head, help] of heads) lines.push(head.padEnd(width) + help);
  return lines.join('\n');
}

export function parseArgs(argv: string[]): ServerOptions | 'help' {
  const o = defaultOptions();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') return 'help';
    if (!arg.startsWith('--')) throw new FlagError(`unexpected argument "${arg}"`);
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const spec = FLAGS[name];
    if (!spec) throw new FlagError(`unknown flag: --${name}`);
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else if (spec.kind === 'bool') value = 'true';
    else {
      if (i + 1 >= argv.length) throw new FlagError(`flag needs an argument: --${name}`);
      value = argv[++i];
    }
    let parsed: unknown;
    switch (spec.kind) {
      case 'int':
        if (!/^-?\d+$/.test(value)) throw new FlagError(`invalid argument "${value}" for "--${name}" flag: strconv.ParseInt: parsing "${value}": invalid syntax`);
        parsed = Number(value);
        break;
      case 'float':
        if (!/^-?(\d+\.?\d*|\.\d+)(e-?\d+)?$/i.test(value)) throw new FlagError(`invalid argument "${value}" for "--${name}" flag: strconv.ParseFloat: parsing "${value}": invalid syntax`);
        parsed = Number(value);
        break;
      case 'bool':
        if (!/^(true|false|1|0|t|f|TRUE|FALSE|True|False)$/.test(value)) throw new FlagError(`invalid argument "${value}" for "--${name}" flag: strconv.ParseBool: parsing "${value}": invalid syntax`);
        parsed = /^(true|1|t|TRUE|True)$/.test(value);
        break;
      case 'duration':
        parsed = parseDuration(name, value);
        break;
      case 'list':
        parsed = value.split(',').map((s) => s.trim()).filter(Boolean);
        break;
      default:
        parsed = value;
    }
    spec.set(o, parsed);
  }
  validate(o);
  return o;
}

/**
 * Start-up adjustments kube-apiserver makes after parsing (its Complete and ApplyTo
 * steps), applied to o; the warnings it logs are returned, for the caller to log.
 */
export function completeOptions(o: ServerOptions): string[] {
  const warnings: string[] = [];
  // kube's BuiltInAuthenticationOptions.ApplyAuthorization: AlwaysAllow would hand every
  // anonymous request the whole cluster, so anonymous authentication is switched off
  // (unauthenticated requests get 401 everywhere, /healthz included).
  if (o.anonymousAuth && o.authorizationMode.includes('AlwaysAllow')) {
    o.anonymousAuth = false;
    warnings.push('AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer');
  }
  warnings.push(...insecureCipherWarnings(o.tlsCipherSuites));
  return warnings;
}

function validate(o: ServerOptions): void {
  if (o.securePort === 0) throw new FlagError('--secure-port 0 is not allowed: the secure port cannot be switched off');
  if (o.securePort < 1 || o.securePort > 65535) throw new FlagError(`--secure-port ${o.securePort} must be between 1 and 65535, inclusive`);
  if (!/^[0-9.]+$|^[0-9a-fA-F:]+$/.test(o.bindAddress)) throw new FlagError(`invalid argument "${o.bindAddress}" for "--bind-address" flag: failed to parse IP: "${o.bindAddress}"`);
  if (o.advertiseAddress && !isIP(o.advertiseAddress)) throw new FlagError(`invalid argument "${o.advertiseAddress}" for "--advertise-address" flag: failed to parse IP: "${o.advertiseAddress}"`);
  if (Boolean(o.tlsCertFile) !== Boolean(o.tlsPrivateKeyFile)) throw new FlagError('--tls-cert-file and --tls-private-key-file must be given together');
  if (o.tlsMinVersion && !isTlsVersionName(o.tlsMinVersion)) throw new FlagError(`unknown tls version ${JSON.stringify(o.tlsMinVersion)}`);
  const cipherError = cipherSuitesError(o.tlsCipherSuites, isTlsVersionName(o.tlsMinVersion) ? o.tlsMinVersion : 'VersionTLS12');
  if (cipherError) throw new FlagError(cipherError);
  if (o.frontEnd === 'uws' && (o.clientCaFile || o.requestheaderClientCaFile || (o.tlsMinVersion && o.tlsMinVersion !== 'VersionTLS12')))
    throw new FlagError('--front-end=uws: the uWebSockets.js front end cannot read client certificates (--client-ca-file, --requestheader-client-ca-file) or serve a --tls-min-version other than VersionTLS12; use --front-end=http2 or auto');
  if (o.requestheaderClientCaFile && !existsSync(o.requestheaderClientCaFile)) throw new FlagError(`--requestheader-client-ca-file: unable to load client CA file "${o.requestheaderClientCaFile}": no such file`);
  if (Boolean(o.clusterSigningCertFile) !== Boolean(o.clusterSigningKeyFile)) throw new FlagError('--cluster-signing-cert-file and --cluster-signing-key-file must be given together');
  for (const f of [o.clusterSigningCertFile, o.clusterSigningKeyFile]) if (f && !existsSync(f)) throw new FlagError(`unable to load the cluster signing certificate or key "${f}": no such file`);
  if (Boolean(o.proxyClientCertFile) !== Boolean(o.proxyClientKeyFile)) throw new FlagError('--proxy-client-cert-file and --proxy-client-key-file must be given together');
  for (const f of [o.proxyClientCertFile, o.proxyClientKeyFile]) if (f && !existsSync(f)) throw new FlagError(`unable to load proxy client certificate or key "${f}": no such file`);
  for (const [flag, f] of [['kubelet-client-certificate', o.kubeletClientCertificate], ['kubelet-client-key', o.kubeletClientKey], ['kubelet-certificate-authority', o.kubeletCertificateAuthority]] as const) {
    if (f && !existsSync(f)) throw new FlagError(`--${flag}: open ${f}: no such file or directory`);
  }
  if (!o.kubeletClientCertificate !== !o.kubeletClientKey) throw new FlagError('--kubelet-client-certificate and --kubelet-client-key must be given together');
  if (o.clientCaFile && !existsSync(o.clientCaFile)) throw new FlagError(`--client-ca-file: unable to load client CA file "${o.clientCaFile}": no such file`);
  if (o.goawayChance < 0 || o.goawayChance > 0.02) throw new FlagError('--goaway-chance can not be less than 0 or greater than 0.02');
  if (o.http2MaxStreams < 0) throw new FlagError(`--http2-max-streams-per-connection ${o.http2MaxStreams} must not be negative`);
  if (!(o.nodeMonitorPeriodSeconds > 0)) throw new FlagError(`--node-monitor-period ${o.nodeMonitorPeriodSeconds}s must be greater than 0`);
  if (o.nodeEvictionRate < 0 || o.secondaryNodeEvictionRate < 0) throw new FlagError('--node-eviction-rate and --secondary-node-eviction-rate must not be negative');
  if (o.shards < 1 || o.shards > 64) throw new FlagError(`--shards ${o.shards} must be between 1 and 64`);
  for (const [gr, n] of Object.entries(o.shardMap)) if (n >= o.shards) throw new FlagError(`--shard-map ${gr}=${n}: there are only ${o.shards} shards`);
  const seen = new Set<string>();
  for (const m of o.authorizationMode) {
    if (!['AlwaysAllow', 'AlwaysDeny', 'ABAC', 'Webhook', 'RBAC', 'Node'].includes(m)) throw new FlagError(`--authorization-mode: authorization mode ${JSON.stringify(m)} is not a valid mode`);
    if (seen.has(m)) throw new FlagError(`--authorization-mode: authorization mode ${m} has mode specified more than once`);
    seen.add(m);
  }
  // kube's BuiltInAuthorizationOptions.Validate
  if (o.authorizationConfigFile) {
    if (o.authorizationLegacyFlagsSet) throw new FlagError('--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined');
    if (!existsSync(o.authorizationConfigFile)) throw new FlagError(`--authorization-config: open ${o.authorizationConfigFile}: no such file or directory`);
    // the chain comes from the file (its AlwaysAllow does not turn anonymous off here)
    o.authorizationMode = [];
  }
  const modes = new Set(o.authorizationMode);
  if (modes.has('ABAC') && !o.authorizationPolicyFile) throw new FlagError("authorization-mode ABAC's authorization policy file not passed");
  if (!modes.has('ABAC') && o.authorizationPolicyFile) throw new FlagError('cannot specify --authorization-policy-file without mode ABAC');
  if (modes.has('Webhook') && !o.authorizationWebhookConfigFile) throw new FlagError("authorization-mode Webhook's authorization config file not passed");
  if (!modes.has('Webhook') && o.authorizationWebhookConfigFile) throw new FlagError('cannot specify --authorization-webhook-config-file without mode Webhook');
  for (const [flag, f] of [['authorization-policy-file', o.authorizationPolicyFile], ['authorization-webhook-config-file', o.authorizationWebhookConfigFile], ['authentication-token-webhook-config-file', o.authenticationTokenWebhookConfigFile]]) {
    if (f && !existsSync(f)) throw new FlagError(`--${flag}: open ${f}: no such file or directory`);
  }
  if (o.authorizationWebhookVersion !== 'v1' && o.authorizationWebhookVersion !== 'v1beta1') throw new FlagError(`--authorization-webhook-version: unsupported version ${JSON.stringify(o.authorizationWebhookVersion)}, expected v1 or v1beta1`);
  if (o.authenticationTokenWebhookVersion !== 'v1' && o.authenticationTokenWebhookVersion !== 'v1beta1') throw new FlagError(`--authentication-token-webhook-version: unsupported version ${JSON.stringify(o.authenticationTokenWebhookVersion)}, expected v1 or v1beta1`);
  if (o.maxRequestsInflight < 0 || o.maxMutatingRequestsInflight < 0) throw new FlagError('inflight limits cannot be negative');
  if (o.minRequestTimeout < 1) throw new FlagError('--min-request-timeout must be positive');
  // kube's ServerRunOptions.Validate
  if (o.requestTimeoutSeconds < 0) throw new FlagError('--request-timeout can not be negative value');
  if (o.shutdownDelaySeconds < 0) throw new FlagError('--shutdown-delay-duration can not be negative value');
  if (o.shutdownWatchTerminationGraceSeconds < 0) throw new FlagError('shutdown-watch-termination-grace-period, if provided, can not be a negative value');
  if (o.livezGraceSeconds < 0) throw new FlagError('--livez-grace-period can not be a negative value');
  if (o.deleteCollectionWorkers < 1) throw new FlagError('--delete-collection-workers must be at least 1');
  if (o.maxConnectionBytesPerSec < 0) throw new FlagError('--max-connection-bytes-per-sec can not be negative value');
  if (!/^\d+\.\d+\.\d+\.\d+\/\d+$/.test(o.serviceClusterIpRange)) throw new FlagError(`invalid --service-cluster-ip-range "${o.serviceClusterIpRange}"`);
  // as kube-apiserver: without the watch cache, no type has one, whatever the sizes say
  if (!o.watchCache) {
    o.defaultWatchCacheSize = 0;
    o.watchCacheSizes = {};
  }
  if (!(o.watchBookmarkIntervalSeconds > 0)) throw new FlagError('--watch-bookmark-interval must be positive');
  if (o.serviceAccountMaxTokenExpirationSeconds !== 0 && o.serviceAccountMaxTokenExpirationSeconds < 3600) {
    throw new FlagError('service-account-max-token-expiration must be between 1 hour and 2^32 seconds');
  }
  if (o.serviceAccountIssuers.some((i) => i === '')) throw new FlagError('service-account-issuer should not be an empty string');
  validateOidcFlags(o);
  // kube takes only the previous minor release: hidden metrics come back for one release.
  if (o.showHiddenMetricsForVersion && o.showHiddenMetricsForVersion !== '1.32') {
    throw new FlagError(`--show-hidden-metrics-for-version: only the previous minor version 1.32 is allowed, not ${o.showHiddenMetricsForVersion}`);
  }
  if (o.watchFanoutTickMs < 0 || o.watchFanoutTickMs > 1000) throw new FlagError('--watch-fanout-tick must be between 0 and 1000 ms');
  if (!(o.frontThreads >= 0 && o.frontThreads <= 62)) throw new FlagError('--front-threads must be between 0 (one per two cores) and 62');
  // kube's EtcdOptions.Validate
  if (o.storageBackend === 'etcd3' && !o.etcdServers.length) throw new FlagError('--etcd-servers must be specified');
  for (const s of o.etcdServers) if (!/^https?:\/\/[^/]+\/?$/.test(s)) throw new FlagError(`--etcd-servers: ${JSON.stringify(s)} is not an etcd client URL (http://host:port or https://host:port)`);
  etcdServersOverrides(o.etcdServersOverrides);
  if (Boolean(o.etcdCertfile) !== Boolean(o.etcdKeyfile)) throw new FlagError('--etcd-certfile and --etcd-keyfile must be given together');
  if (o.etcdCompactionIntervalSeconds < 0) throw new FlagError('--etcd-compaction-interval must not be negative');
  if (o.eventTtlSeconds < 0) throw new FlagError('--event-ttl must not be negative');
  if (o.etcdCountMetricPollPeriodSeconds < 0) throw new FlagError('--etcd-count-metric-poll-period must not be negative');
  if (o.encryptionProviderConfigAutomaticReload && !o.encryptionProviderConfig) throw new FlagError('--encryption-provider-config-automatic-reload must be set with --encryption-provider-config');
  if (!(o.largeRequestOffloadBytes >= 0)) throw new FlagError('--large-request-offload-bytes must not be negative');
  // kube's AdmissionOptions.Validate: every error at once
  const admissionErrs = validatePluginFlags(o.enableAdmissionPlugins, o.disableAdmissionPlugins);
  if (admissionErrs.length) throw new FlagError(admissionErrs.length === 1 ? admissionErrs[0] : `[${admissionErrs.join(', ')}]`);
  if (o.admissionControlConfigFile) {
    try {
      readAdmissionConfiguration(o.admissionControlConfigFile, enabledPluginNames(o.enableAdmissionPlugins, o.disableAdmissionPlugins));
    } catch (e) {
      throw new FlagError((e as Error).message);
    }
  }
  try {
    validateAuditOptions(o.audit);
  } catch (e) {
    throw new FlagError((e as Error).message);
  }
}

/** One --etcd-servers-overrides entry: the group-resource it moves and the servers it moves it to. */
export interface EtcdServersOverride {
  /** the storage key of the group-resource ("events", "leases.coordination.k8s.io") */
  gr: string;
  servers: string[];
}

/**
 * --etcd-servers-overrides parsed (kube's EtcdOptions: group/resource#url;url, the core
 * group empty): a malformed entry is a FlagError with kube's message.
 */
export function etcdServersOverrides(entries: string[]): EtcdServersOverride[] {
  const bad = '--etcd-servers-overrides invalid, must be of format: group/resource#servers, where servers are URLs, semicolon separated';
  return entries.map((entry) => {
    const tokens = entry.split('#');
    if (tokens.length !== 2) throw new FlagError(bad);
    const gr = tokens[0].split('/');
    if (gr.length !== 2 || !gr[1]) throw new FlagError(bad);
    const servers = tokens[1].split(';').filter(Boolean);
    if (!servers.length) throw new FlagError(bad);
    return { gr: gr[0] ? `${gr[1]}.${gr[0]}` : gr[1], servers };
  });
}

/** --front-threads 0: one front thread per two cores (at least one, at most 62). */
export function frontThreadsFor(requested: number, cores: number): number {
  return requested > 0 ? requested : Math.min(62, Math.max(1, Math.ceil(cores / 2)));
}
