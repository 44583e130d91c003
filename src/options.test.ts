import { describe, it, expect } from 'vitest';
import { completeOptions, etcdServersOverrides, parseArgs, type ServerOptions } from './options.js';

describe('parseArgs', () => {
  it('defaults as kube-apiserver, with our data dir', () => {
    const o = parseArgs([]) as any;
    expect(o.securePort).toBe(6443);
    expect(o.bindAddress).toBe('127.0.0.1');
    expect(o.dataDir).toBe('./data');
    expect(o.maxRequestsInflight).toBe(400);
  });
  it("the node lifecycle flags: kube-controller-manager's names and defaults", () => {
    const d = parseArgs([]) as any;
    expect([d.nodeMonitorPeriodSeconds, d.nodeMonitorGracePeriodSeconds, d.nodeStartupGracePeriodSeconds, d.nodeEvictionRate, d.secondaryNodeEvictionRate, d.largeClusterSizeThreshold, d.unhealthyZoneThreshold]).toEqual([5, 50, 60, 0.1, 0.01, 50, 0.55]);
    const o = parseArgs(['--node-monitor-period=500ms', '--node-monitor-grace-period=4s', '--node-startup-grace-period=1m', '--node-eviction-rate=1', '--secondary-node-eviction-rate=0', '--large-cluster-size-threshold=10', '--unhealthy-zone-threshold=0.4']) as any;
    expect([o.nodeMonitorPeriodSeconds, o.nodeMonitorGracePeriodSeconds, o.nodeStartupGracePeriodSeconds, o.nodeEvictionRate, o.secondaryNodeEvictionRate, o.largeClusterSizeThreshold, o.unhealthyZoneThreshold]).toEqual([0.5, 4, 60, 1, 0, 10, 0.4]);
    expect(() => parseArgs(['--node-monitor-period=0s'])).toThrowError(/node-monitor-period/);
  });
  it('--goaway-chance between 0 and 0.02; --client-ca-file must exist', () => {
    expect((parseArgs(['--goaway-chance', '0.02']) as any).goawayChance).toBe(0.02);
    expect(() => parseArgs(['--goaway-chance', '0.03'])).toThrowError(/can not be less than 0 or greater than 0.02/);
    expect(() => parseArgs(['--goaway-chance=-0.01'])).toThrowError(/goaway-chance/);
    expect(() => parseArgs(['--client-ca-file', '/no/such/ca.crt'])).toThrowError(/unable to load client CA file/);
  });
  it('the --kubelet-* flags: kube\'s defaults, known address types, files that exist, certificate with key', () => {
    const d = parseArgs([]) as any;
    expect([d.kubeletPreferredAddressTypes, d.kubeletPort, d.kubeletClientCertificate]).toEqual([['Hostname', 'InternalDNS', 'InternalIP', 'ExternalDNS', 'ExternalIP'], 10250, '']);
    expect((parseArgs(['--kubelet-preferred-address-types=InternalIP,Hostname']) as any).kubeletPreferredAddressTypes).toEqual(['InternalIP', 'Hostname']);
    expect(() => parseArgs(['--kubelet-preferred-address-types=Internal'])).toThrowError(/unknown address type "Internal"/);
    expect(() => parseArgs(['--kubelet-certificate-authority=/no/such/ca.crt'])).toThrowError('--kubelet-certificate-authority: open /no/such/ca.crt: no such file or directory');
    expect(() => parseArgs(['--kubelet-client-certificate=package.json'])).toThrowError('--kubelet-client-certificate and --kubelet-client-key must be given together');
  });
  it('--storage-backend: lmdb (the default) or etcd3, which needs --etcd-servers (kube\'s message)', () => {
    expect((parseArgs([]) as any).storageBackend).toBe('lmdb');
    expect(() => parseArgs(['--storage-backend=etcd3'])).toThrowError('--etcd-servers must be specified');
    expect((parseArgs(['--storage-backend=etcd3', '--etcd-servers=http://127.0.0.1:2379']) as any).storageBackend).toBe('etcd3');
    expect(() => parseArgs(['--storage-backend=etcd2'])).toThrowError(/must be lmdb or etcd3/);
  });
  it('the --etcd-* flags and --storage-media-type: kube\'s defaults and messages', () => {
    const d = parseArgs([]) as any;
    expect([d.etcdPrefix, d.etcdCompactionIntervalSeconds, d.etcdCountMetricPollPeriodSeconds, d.storageMediaType]).toEqual(['/registry', 300, 60, 'application/vnd.kubernetes.protobuf']);
    const o = parseArgs(['--storage-backend=etcd3', '--etcd-servers=http://a:1,https://b:2', '--etcd-prefix=/kubeshard', '--etcd-compaction-interval=0', '--etcd-count-metric-poll-period=10s', '--storage-media-type=application/json']) as any;
    expect([o.etcdServers, o.etcdPrefix, o.etcdCompactionIntervalSeconds, o.etcdCountMetricPollPeriodSeconds, o.storageMediaType]).toEqual([['http://a:1', 'https://b:2'], '/kubeshard', 0, 10, 'application/json']);
    expect(() => parseArgs(['--storage-media-type=application/yaml'])).toThrowError('--storage-media-type "application/yaml" invalid');
    expect(() => parseArgs(['--etcd-servers-overrides=events#http://x:1'])).toThrowError('--etcd-servers-overrides invalid, must be of format: group/resource#servers');
    expect(etcdServersOverrides(['/events#http://x:1;http://y:2', 'coordination.k8s.io/leases#http://z:3'])).toEqual([
      { gr: 'events', servers: ['http://x:1', 'http://y:2'] },
      { gr: 'leases.coordination.k8s.io', servers: ['http://z:3'] },
    ]);
  });
  it('--front-end: auto (the default), uws or http2; uws cannot take client certificates or another TLS minimum', () => {
    expect((parseArgs([]) as any).frontEnd).toBe('auto');
    expect((parseArgs(['--front-end=http2']) as any).frontEnd).toBe('http2');
    expect(() => parseArgs(['--front-end=h3'])).toThrowError(/must be auto, uws or http2/);
    expect(() => parseArgs(['--front-end=uws', '--tls-min-version=VersionTLS13'])).toThrowError(/cannot read client certificates/);
  });
  it('durations as Go writes them: units from h to ns, combined, fractional; a bare number is seconds', () => {
    expect((parseArgs([]) as any).storageBatchIntervalSeconds).toBe(0.1);
    expect((parseArgs(['--storage-batch-interval=250ms']) as any).storageBatchIntervalSeconds).toBeCloseTo(0.25);
    expect((parseArgs(['--storage-batch-interval', '0']) as any).storageBatchIntervalSeconds).toBe(0);
    expect((parseArgs(['--history-retention=1h1m30.5s']) as any).historyRetentionSeconds).toBeCloseTo(3690.5);
    expect((parseArgs(['--request-timeout=1.5m']) as any).requestTimeoutSeconds).toBe(90);
    expect((parseArgs(['--request-timeout=1500us']) as any).requestTimeoutSeconds).toBeCloseTo(0.0015);
    expect(() => parseArgs(['--storage-batch-interval=100 ms'])).toThrowError(/invalid duration "100 ms"/);
    expect(() => parseArgs(['--history-retention=5x'])).toThrowError(/invalid duration/);
  });
  it("the graceful shutdown, request and health flags, with kube's defaults", () => {
    expect(parseArgs([]) as ServerOptions).toMatchObject({
      requestTimeoutSeconds: 60,
      shutdownDelaySeconds: 0,
      shutdownSendRetryAfter: false,
      shutdownWatchTerminationGraceSeconds: 0,
      livezGraceSeconds: 0,
      deleteCollectionWorkers: 1,
      maxConnectionBytesPerSec: 0,
    });
    expect(
      parseArgs(['--shutdown-delay-duration=10s', '--shutdown-send-retry-after', '--shutdown-watch-termination-grace-period=1m', '--livez-grace-period=30s', '--delete-collection-workers=4', '--max-connection-bytes-per-sec=65536']) as ServerOptions,
    ).toMatchObject({ shutdownDelaySeconds: 10, shutdownSendRetryAfter: true, shutdownWatchTerminationGraceSeconds: 60, livezGraceSeconds: 30, deleteCollectionWorkers: 4, maxConnectionBytesPerSec: 65536 });
    expect(() => parseArgs(['--delete-collection-workers=0'])).toThrowError(/--delete-collection-workers must be at least 1/);
    expect(() => parseArgs(['--max-connection-bytes-per-sec=-1'])).toThrowError(/can not be negative/);
  });
  it('--encryption-provider-config and its automatic reload (which needs the file)', () => {
    expect(parseArgs([]) as ServerOptions).toMatchObject({ encryptionProviderConfig: '', encryptionProviderConfigAutomaticReload: false });
    expect(parseArgs(['--encryption-provider-config=/etc/enc.yaml', '--encryption-provider-config-automatic-reload']) as ServerOptions).toMatchObject({
      encryptionProviderConfig: '/etc/enc.yaml',
      encryptionProviderConfigAutomaticReload: true,
    });
    expect(() => parseArgs(['--encryption-provider-config-automatic-reload'])).toThrowError('--encryption-provider-config-automatic-reload must be set with --encryption-provider-config');
  });
  it('reads both --flag=value and --flag value', () => {
    const o = parseArgs(['--secure-port=7443', '--data-dir', '/tmp/x', '--anonymous-auth=false']) as any;
    expect(o.securePort).toBe(7443);
    expect(o.dataDir).toBe('/tmp/x');
    expect(o.anonymousAuth).toBe(false);
  });
  it('--watch-cache-sizes per resource (0 turns one off); --watch-cache=false turns every one off', () => {
    const o = parseArgs(['--watch-cache-sizes=secrets#0,deployments.apps#50']) as any;
    expect(o.watchCacheSizes).toEqual({ secrets: 0, 'deployments.apps': 50 });
    expect(o.defaultWatchCacheSize).toBeGreaterThan(0);
    const off = parseArgs(['--watch-cache=false', '--watch-cache-sizes=deployments.apps#50']) as any;
    expect(off.defaultWatchCacheSize).toBe(0);
    expect(off.watchCacheSizes).toEqual({});
    expect(() => parseArgs(['--watch-cache-sizes=secrets'])).toThrowError(/watch-cache-sizes/);
  });
  it('refuses port 0, unknown flags and bad values', () => {
    expect(() => parseArgs(['--secure-port=0'])).toThrowError(/not allowed/);
    expect(() => parseArgs(['--nope'])).toThrowError(/unknown flag/);
    expect(() => parseArgs(['--secure-port=abc'])).toThrowError(/invalid argument/);
    expect(() => parseArgs(['--tls-cert-file=/x'])).toThrowError(/together/);
  });
  it("--authorization-mode takes every kube mode; ABAC and Webhook need their files, as kube's validation words it", () => {
    expect((parseArgs(['--authorization-mode=Node,RBAC']) as any).authorizationMode).toEqual(['Node', 'RBAC']);
    expect(() => parseArgs(['--authorization-mode=Webhook'])).toThrowError("authorization-mode Webhook's authorization config file not passed");
    expect(() => parseArgs(['--authorization-mode=ABAC'])).toThrowError("authorization-mode ABAC's authorization policy file not passed");
    expect(() => parseArgs(['--authorization-policy-file=/etc/passwd'])).toThrowError('cannot specify --authorization-policy-file without mode ABAC');
    expect(() => parseArgs(['--authorization-config=/etc/passwd', '--authorization-webhook-version=v1'])).toThrowError(
      '--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined',
    );
    expect(() => parseArgs(['--authorization-mode=Bogus'])).toThrowError(/not a valid mode/);
    expect(() => parseArgs(['--authorization-mode=RBAC,RBAC'])).toThrowError(/more than once/);
  });
  it('anonymous is switched off, with kube\'s warning, whenever AlwaysAllow is among the modes', () => {
    const warning = 'AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer';
    for (const args of [[], ['--anonymous-auth=true'], ['--authorization-mode=RBAC,AlwaysAllow']]) {
      const o = parseArgs(args) as ServerOptions;
      expect(completeOptions(o)).toEqual([warning]);
      expect(o.anonymousAuth).toBe(false);
    }
    for (const args of [['--anonymous-auth=false'], ['--authorization-mode=RBAC'], ['--authorization-mode=Node,RBAC', '--anonymous-auth=true']]) {
      const o = parseArgs(args) as ServerOptions;
      const anonymous = o.anonymousAuth;
      expect(completeOptions(o)).toEqual([]);
      expect(o.anonymousAuth).toBe(anonymous);
    }
  });
  it('--tls-min-version takes kube\'s four names; --tls-cipher-suites Go\'s names, insecure ones with a warning', () => {
    expect((parseArgs([]) as ServerOptions).tlsMinVersion).toBe('');
    expect((parseArgs(['--tls-min-version=VersionTLS13']) as ServerOptions).tlsMinVersion).toBe('VersionTLS13');
    expect(() => parseArgs(['--tls-min-version=VersionTLS14'])).toThrowError('unknown tls version "VersionTLS14"');
    expect(() => parseArgs(['--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,NOPE'])).toThrowError("Cipher suite NOPE not supported or doesn't exist");
    // repeated flags add up, as pflag's string slices do
    const o = parseArgs(['--tls-cipher-suites=TLS_RSA_WITH_AES_128_GCM_SHA256', '--tls-cipher-suites', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256']) as ServerOptions;
    expect(o.tlsCipherSuites).toEqual(['TLS_RSA_WITH_AES_128_GCM_SHA256', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256']);
    o.authorizationMode = ['RBAC'];
    expect(completeOptions(o)).toEqual(["Use of insecure cipher 'TLS_RSA_WITH_AES_128_GCM_SHA256' detected."]);
    // Go's HTTP/2 server (so kube-apiserver) will not start without HTTP/2's mandatory suite below TLS 1.3
    expect(() => parseArgs(['--tls-cipher-suites=TLS_RSA_WITH_AES_128_GCM_SHA256'])).toThrowError(/missing an HTTP\/2-required AES_128_GCM_SHA256 cipher/);
    expect((parseArgs(['--tls-min-version=VersionTLS13', '--tls-cipher-suites=TLS_AES_128_GCM_SHA256']) as ServerOptions).tlsCipherSuites).toEqual(['TLS_AES_128_GCM_SHA256']);
  });
  it('--tls-sni-cert-key as kube\'s: cert,key[:names], repeatable', () => {
    const o = parseArgs(['--tls-sni-cert-key=a.crt,a.key', '--tls-sni-cert-key', 'b.crt,b.key:*.foo.com, foo.com']) as ServerOptions;
    expect(o.tlsSniCertKeys).toEqual([
      { certFile: 'a.crt', keyFile: 'a.key', names: [] },
      { certFile: 'b.crt', keyFile: 'b.key', names: ['*.foo.com', 'foo.com'] },
    ]);
    expect(() => parseArgs(['--tls-sni-cert-key=a.crt'])).toThrowError('invalid argument "a.crt" for "--tls-sni-cert-key" flag: expected comma separated certificate and key file paths');
    expect(() => parseArgs(['--tls-sni-cert-key=a.crt,a.key:'])).toThrowError(/empty names list is not allowed/);
  });
});

describe('--front-threads', () => {
  it('0 is one front thread per two cores, at least one', async () => {
    const { frontThreadsFor } = await import('./options.js');
    expect(frontThreadsFor(0, 1)).toBe(1);
    expect(frontThreadsFor(0, 2)).toBe(1);
    expect(frontThreadsFor(0, 16)).toBe(8);
    expect(frontThreadsFor(0, 256)).toBe(62);
    expect(frontThreadsFor(3, 2)).toBe(3);
  });
});
