import { describe, it, expect } from 'vitest';
import { ApiserverMetrics, compressUsername } from './apiserver-metrics.js';
import { mergeMetricsText } from './merge-text.js';

describe('ApiserverMetrics', () => {
  it("compressUsername keeps kube's well-known identities, folds e-mail addresses and the rest", () => {
    expect(['admin', 'kubelet', 'system:serviceaccount:kube-system:default'].map(compressUsername)).toEqual(['admin', 'kubelet', 'system:serviceaccount:kube-system:default']);
    expect(compressUsername('jane@example.com')).toBe('email_id');
    expect(compressUsername('system:serviceaccount:ns:sa')).toBe('other');
  });

  it("writes kube's names, labels and buckets, each family once it has a series (label-free counters always)", () => {
    const m = new ApiserverMetrics();
    expect(m.render()).toBe(
      [
        '# HELP apiserver_audit_event_total [ALPHA] Audit events generated and handed to the audit backends.',
        '# TYPE apiserver_audit_event_total counter',
        'apiserver_audit_event_total 0',
        '# HELP apiserver_audit_requests_rejected_total [ALPHA] Requests refused because their audit events could not be stored.',
        '# TYPE apiserver_audit_requests_rejected_total counter',
        'apiserver_audit_requests_rejected_total 0',
        '# HELP apiserver_tls_handshake_errors_total [ALPHA] Connections dropped for a failed TLS handshake.',
        '# TYPE apiserver_tls_handshake_errors_total counter',
        'apiserver_tls_handshake_errors_total 0',
        '',
      ].join('\n'),
    );
    m.authentication('success', 0.0004, 'admin');
    m.authentication('failure', 0.003);
    m.authorization('allowed', 0.0001);
    m.watchEventCounter('apps', 'v1', 'Deployment').sent(1500);
    m.storageSeries('create', 'deployments.apps').duration.observe(0.002);
    const text = m.render();
    expect(text).toContain('authenticated_user_requests{username="admin"} 1');
    expect(text).toContain('authentication_attempts{result="failure"} 1');
    // ExponentialBuckets(0.001, 2, 15): 0.001 ... 16.384
    expect(text).toContain('authentication_duration_seconds_bucket{le="0.001",result="success"} 1');
    expect(text).toContain('authentication_duration_seconds_bucket{le="16.384",result="failure"} 1');
    expect(text).toContain('authorization_attempts_total{result="allowed"} 1');
    expect(text).toContain('apiserver_watch_events_total{group="apps",kind="Deployment",version="v1"} 1');
    expect(text).toContain('apiserver_watch_events_sizes_bucket{group="apps",kind="Deployment",le="1024",version="v1"} 0');
    expect(text).toContain('apiserver_watch_events_sizes_bucket{group="apps",kind="Deployment",le="2048",version="v1"} 1');
    expect(text).toContain('apiserver_watch_events_sizes_bucket{group="apps",kind="Deployment",le="131072",version="v1"} 1');
    expect(text).toContain('etcd_request_duration_seconds_bucket{le="0.005",operation="create",type="deployments.apps"} 1');
    expect(text).toContain('etcd_requests_total{operation="create",type="deployments.apps"} 1');
    expect(text).not.toContain('etcd_request_errors_total{');
  });

  it("the watch cache's series are the process's: the front threads' texts are not added up", () => {
    const mk = () => {
      const m = new ApiserverMetrics();
      m.setGauges({ watchCache: () => [{ resource: 'configmaps', received: 5, dispatched: 5, resourceVersion: 42, capacity: 100 }] });
      return m.render();
    };
    const merged = mergeMetricsText([mk(), mk()]);
    expect(merged).toContain('apiserver_watch_cache_events_received_total{resource="configmaps"} 5');
    expect(merged).toContain('apiserver_watch_cache_resource_version{resource="configmaps"} 42');
    expect(merged).toContain('watch_cache_capacity{resource="configmaps"} 100');
  });

  it('--disabled-metrics leaves a family out', () => {
    const m = new ApiserverMetrics();
    expect(m.render(new Set(['apiserver_tls_handshake_errors_total']))).not.toContain('apiserver_tls_handshake_errors_total');
  });
});
