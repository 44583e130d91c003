// A real Prometheus (Debian's prometheus package) scrapes kubeshard every second with the
// admin's bearer token, and evaluates this project's copy of the kubernetes-mixin's apiserver
// recording and alerting rules (the expressions of rules/kube_apiserver-availability,
// -burnrate and -histogram and alerts/kube_apiserver, with the mixin's default selectors; only
// the evaluation intervals are shortened, to one second, for the test). The rules must pass
// `promtool check rules`, the scrape must be healthy (Prometheus parses the text strictly),
// the recording rules must give results, and every rule group must evaluate without an error.
//
// Skipped, saying so, where no prometheus binary is installed (apt-get install prometheus).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, request, startServer, type TestServer } from './helpers/server.js';

const has = (bin: string) => spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0;
const available = has('prometheus') && has('promtool');
if (!available) console.warn('SKIP test/prometheus.test.ts: no prometheus/promtool binary (Debian: apt-get install -y prometheus)');

// The mixin's default configuration (config.libsonnet): the selectors and the latency targets.
const JOB = 'job="kube-apiserver"';
const READ = 'verb=~"LIST|GET"';
const WRITE = 'verb=~"POST|PUT|PATCH|DELETE"';
const NON_STREAMING = 'subresource!~"proxy|attach|log|exec|portforward"';
const READ_RESOURCE_LE = '1(\\\\.0)?';
const READ_NAMESPACE_LE = '5(\\\\.0)?';
const READ_CLUSTER_LE = '30(\\\\.0)?';
const WRITE_LE = '1(\\\\.0)?';
/** the SLO windows: [long, short, factor, for, severity] */
const WINDOWS: Array<[string, string, number, string, string]> = [
  ['1h', '5m', 14.4, '2m', 'critical'],
  ['6h', '30m', 6, '15m', 'critical'],
  ['1d', '2h', 3, '1h', 'warning'],
  ['3d', '6h', 1, '3h', 'warning'],
];
const BURN_WINDOWS = [...new Set(WINDOWS.flatMap(([l, s]) => [l, s]))];

const indent = (text: string, n: number) => text.trim().split('\n').map((l) => ' '.repeat(n) + l).join('\n');

function readBurnrate(w: string): string {
  return `(
  (
    # too slow
    sum by (cluster) (rate(apiserver_request_sli_duration_seconds_count{${JOB},${READ},${NON_STREAMING}}[${w}]))
    -
    (
      (
        sum by (cluster) (rate(apiserver_request_sli_duration_seconds_bucket{${JOB},${READ},${NON_STREAMING},scope=~"resource|",le=~"${READ_RESOURCE_LE}"}[${w}]))
        or
        vector(0)
      )
      +
      sum by (cluster) (rate(apiserver_request_sli_duration_seconds_bucket{${JOB},${READ},${NON_STREAMING},scope="namespace",le=~"${READ_NAMESPACE_LE}"}[${w}]))
      +
      sum by (cluster) (rate(apiserver_request_sli_duration_seconds_bucket{${JOB},${READ},${NON_STREAMING},scope="cluster",le=~"${READ_CLUSTER_LE}"}[${w}]))
    )
  )
  +
  # errors
  sum by (cluster) (rate(apiserver_request_total{${JOB},${READ},code=~"5.."}[${w}]))
)
/
sum by (cluster) (rate(apiserver_request_total{${JOB},${READ}}[${w}]))`;
}

function writeBurnrate(w: string): string {
  return `(
  (
    # too slow
    sum by (cluster) (rate(apiserver_request_sli_duration_seconds_count{${JOB},${WRITE},${NON_STREAMING}}[${w}]))
    -
    sum by (cluster) (rate(apiserver_request_sli_duration_seconds_bucket{${JOB},${WRITE},${NON_STREAMING},le=~"${WRITE_LE}"}[${w}]))
  )
  +
  sum by (cluster) (rate(apiserver_request_total{${JOB},${WRITE},code=~"5.."}[${w}]))
)
/
sum by (cluster) (rate(apiserver_request_total{${JOB},${WRITE}}[${w}]))`;
}

function rule(r: { record?: string; alert?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }): string {
  const head = r.record ? `- record: ${r.record}` : `- alert: ${r.alert}`;
  const lines = [head, '  expr: |', indent(r.expr, 4)];
  if (r.for) lines.push(`  for: ${r.for}`);
  for (const [k, m] of [['labels', r.labels], ['annotations', r.annotations]] as const) {
    if (!m) continue;
    lines.push(`  ${k}:`);
    for (const [a, b] of Object.entries(m)) lines.push(`    ${a}: ${JSON.stringify(b)}`);
  }
  return lines.join('\n');
}

function group(name: string, rules: string[]): string {
  return `- name: ${name}\n  interval: 1s\n  rules:\n${rules.map((r) => indent(r, 2)).join('\n')}`;
}

/** The recording rules whose results the test expects (given traffic). */
const RECORDED = [
  ...BURN_WINDOWS.map((w) => `apiserver_request:burnrate${w}`),
  'code_resource:apiserver_request_total:rate5m',
  'code_verb:apiserver_request_total:increase1h',
  'code_verb:apiserver_request_total:increase30d',
  'code:apiserver_request_total:increase30d',
  'cluster_verb_scope_le:apiserver_request_sli_duration_seconds_bucket:increase1h',
  'cluster_verb_scope_le:apiserver_request_sli_duration_seconds_bucket:increase30d',
  'cluster_verb_scope:apiserver_request_sli_duration_seconds_count:increase1h',
  'cluster_verb_scope:apiserver_request_sli_duration_seconds_count:increase30d',
  'apiserver_request:availability30d',
  'cluster_quantile:apiserver_request_sli_duration_seconds:histogram_quantile',
];

function rulesFile(): string {
  const verbs: Array<[string, string]> = [
    ['read', READ],
    ['write', WRITE],
  ];
  const burnrate = group('kube-apiserver-burnrate.rules', [
    ...BURN_WINDOWS.map((w) => rule({ record: `apiserver_request:burnrate${w}`, expr: readBurnrate(w), labels: { verb: 'read' } })),
    ...BURN_WINDOWS.map((w) => rule({ record: `apiserver_request:burnrate${w}`, expr: writeBurnrate(w), labels: { verb: 'write' } })),
  ]);
  const histogram = group(
    'kube-apiserver-histogram.rules',
    verbs.map(([type, sel]) =>
      rule({
        record: 'cluster_quantile:apiserver_request_sli_duration_seconds:histogram_quantile',
        expr: `histogram_quantile(0.99, sum by (cluster, le, resource) (rate(apiserver_request_sli_duration_seconds_bucket{${JOB},${sel},${NON_STREAMING}}[5m]))) > 0`,
        labels: { verb: type, quantile: '0.99' },
      }),
    ),
  );
  const tooSlowAll = `
1 - (
  (
    # write too slow
    sum by (cluster) (cluster_verb_scope:apiserver_request_sli_duration_seconds_count:increase30d{${WRITE}} or vector(0))
    -
    sum by (cluster) (cluster_verb_scope_le:apiserver_request_sli_duration_seconds_bucket:increase30d{${WRITE},le=~"${WRITE_LE}"} or vector(0))
  ) +
  (
    # read too slow
    sum by (cluster) (cluster_verb_scope:apiserver_request_sli_duration_seconds_count:increase30d{${READ}} or vector(0))
    -
    (
      sum by (cluster) (cluster_verb_scope_le:apiserver_request_sli_duration_seconds_bucket:increase30d{${READ},scope=~"resource|",le=~"${READ_RESOURCE_LE}"} or vector(0))
      +
      sum by (cluster) (cluster_verb_scope_le:apiserver_request_sli_duration_seconds_bucket:increase30d{${READ},scope="namespace",le=~"${READ_NAMESPACE_LE}"} or vector(0))
      +
      sum by (cluster) (cluster_verb_scope_le:apiserver_request_sli_duration_seconds_bucket:increase30d{${READ},scope="cluster",le=~"${READ_CLUSTER_LE}"} or vector(0))
    )
  ) +
  # errors
  sum by (cluster) (code:apiserver_request_total:increase30d{code=~"5.."} or vector(0))
)
/
sum by (cluster) (code:apiserver_request_total:increase30d or vector(1))`;
  const availability = group('kube-apiserver-availability.rules', [
    rule({ record: 'code_verb:apiserver_request_total:increase30d', expr: 'avg_over_time(code_verb:apiserver_request_total:increase1h[30d]) * 24 * 30' }),
    ...verbs.map(([type, sel]) => rule({ record: 'code:apiserver_request_total:increase30d', expr: `sum by (cluster, code) (code_verb:apiserver_request_total:increase30d{${sel}})`, labels: { verb: type } })),
    rule({ record: 'cluster_verb_scope_le:apiserver_request_sli_duration_seconds_bucket:increase1h', expr: 'sum by (cluster, verb, scope, le) (increase(apiserver_request_sli_duration_seconds_bucket[1h]))' }),
    rule({
      record: 'cluster_verb_scope_le:apiserver_request_sli_duration_seconds_bucket:increase30d',
      expr: 'sum by (cluster, verb, scope, le) (avg_over_time(cluster_verb_scope_le:apiserver_request_sli_duration_seconds_bucket:increase1h[30d]) * 24 * 30)',
    }),
    rule({
      record: 'cluster_verb_scope:apiserver_request_sli_duration_seconds_count:increase1h',
      expr: 'sum by (cluster, verb, scope) (cluster_verb_scope_le:apiserver_request_sli_duration_seconds_bucket:increase1h{le="+Inf"})',
    }),
    rule({
      record: 'cluster_verb_scope:apiserver_request_sli_duration_seconds_count:increase30d',
      expr: 'sum by (cluster, verb, scope) (cluster_verb_scope_le:apiserver_request_sli_duration_seconds_bucket:increase30d{le="+Inf"})',
    }),
    rule({ record: 'apiserver_request:availability30d', expr: tooSlowAll, labels: { verb: 'all' } }),
    ...verbs.map(([type, sel]) => rule({ record: 'code_resource:apiserver_request_total:rate5m', expr: `sum by (cluster,code,resource) (rate(apiserver_request_total{${JOB},${sel}}[5m]))`, labels: { verb: type } })),
    ...['2..', '3..', '4..', '5..'].map((code) =>
      rule({ record: 'code_verb:apiserver_request_total:increase1h', expr: `sum by (cluster, code, verb) (increase(apiserver_request_total{${JOB},verb=~"LIST|GET|POST|PUT|PATCH|DELETE",code=~"${code}"}[1h]))` }),
    ),
  ]);
  const alerts = group('kube-apiserver-slos', [
    ...WINDOWS.map(([long, short, factor, forDur, severity]) =>
      rule({
        alert: 'KubeAPIErrorBudgetBurn',
        expr: `sum by(cluster) (apiserver_request:burnrate${long}) > (${factor.toFixed(2)} * 0.01000)\nand on(cluster)\nsum by(cluster) (apiserver_request:burnrate${short}) > (${factor.toFixed(2)} * 0.01000)`,
        for: forDur,
        labels: { severity, long, short },
        annotations: { summary: 'The API server is burning too much error budget.' },
      }),
    ),
  ]);
  const system = group('kubernetes-system-apiserver', [
    rule({ alert: 'KubeAPIDown', expr: `absent(up{${JOB}} == 1)`, for: '15m', labels: { severity: 'critical' }, annotations: { summary: 'Target disappeared from Prometheus target discovery.' } }),
    rule({
      alert: 'KubeAPITerminatedRequests',
      expr: `sum by(cluster) (rate(apiserver_request_terminations_total{${JOB}}[10m])) / ( sum by(cluster) (rate(apiserver_request_total{${JOB}}[10m])) + sum by(cluster) (rate(apiserver_request_terminations_total{${JOB}}[10m])) ) > 0.20`,
      for: '5m',
      labels: { severity: 'warning' },
    }),
    rule({
      alert: 'KubeAggregatedAPIErrors',
      expr: `sum by(cluster, instance, name, reason)(increase(aggregator_unavailable_apiservice_total{${JOB}}[1m])) > 0`,
      for: '10m',
      labels: { severity: 'warning' },
    }),
  ]);
  return `groups:\n${[burnrate, histogram, availability, alerts, system].join('\n')}\n`;
}

describe.skipIf(!available)('Prometheus scraping kubeshard, with the kubernetes-mixin apiserver rules', () => {
  let s: TestServer;
  let prom: ChildProcess | undefined;
  let promPort = 0;
  let dir = '';
  let promOut = '';
  let traffic: NodeJS.Timeout | undefined;

  const api = async (path: string): Promise<any> => {
    const r = await fetch(`http://127.0.0.1:${promPort}${path}`);
    expect(r.status).toBe(200);
    return ((await r.json()) as { data: unknown }).data;
  };
  // (Prometheus answers 503 until its storage is ready: a failed look is looked at again)
  const until = async <T>(what: string, f: () => Promise<T | undefined>, ms = 60_000): Promise<T> => {
    const deadline = Date.now() + ms;
    for (;;) {
      let v: T | undefined;
      let failure: unknown;
      try {
        v = await f();
      } catch (err) {
        failure = err;
      }
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${failure ? ` (last: ${(failure as Error).message})` : ''}\nprometheus said:\n${promOut.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  };

  beforeAll(async () => {
    s = await startServer();
    dir = mkdtempSync(join(tmpdir(), 'kubeshard-prometheus-'));
    writeFileSync(join(dir, 'rules.yml'), rulesFile());
    writeFileSync(join(dir, 'token'), s.token);
    promPort = await freePort();
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - ${join(dir, 'rules.yml')}
scrape_configs:
  - job_name: kube-apiserver
    scheme: https
    tls_config:
      insecure_skip_verify: true
    authorization:
      type: Bearer
      credentials_file: ${join(dir, 'token')}
    static_configs:
      - targets: ['127.0.0.1:${s.port}']
`,
    );
    // Server errors too: the burn rates add the 5xx rate to the slow requests' rate, and a sum
    // with no 5xx series at all is empty. An aggregated API whose service does not exist
    // answers 503 to reads and writes alike.
    const apiService = await request(s, 'POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
      metadata: { name: 'v1.unreachable.example.com' },
      spec: { group: 'unreachable.example.com', version: 'v1', service: { namespace: 'default', name: 'nowhere', port: 443 }, insecureSkipTLSVerify: true, groupPriorityMinimum: 100, versionPriority: 10 },
    });
    expect(apiService.status).toBe(201);
    // client traffic of every kind the rules read: reads of each scope, writes, a 404, 503s
    let i = 0;
    traffic = setInterval(() => {
      const n = i++;
      void request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: `p${n}` } }).catch(() => {});
      void request(s, 'GET', `/api/v1/namespaces/default/configmaps/p${n}`).catch(() => {});
      void request(s, 'GET', '/api/v1/namespaces/default/configmaps').catch(() => {});
      void request(s, 'GET', '/api/v1/configmaps').catch(() => {});
      void request(s, 'GET', '/api/v1/namespaces/default/configmaps/missing').catch(() => {});
      void request(s, 'GET', '/apis/unreachable.example.com/v1/namespaces/default/things').catch(() => {});
      void request(s, 'POST', '/apis/unreachable.example.com/v1/namespaces/default/things', { metadata: { name: 'x' } }).catch(() => {});
    }, 200);
    prom = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    prom.stdout!.on('data', (d) => (promOut += d));
    prom.stderr!.on('data', (d) => (promOut += d));
  }, 90_000);

  afterAll(async () => {
    if (traffic) clearInterval(traffic);
    if (prom && prom.exitCode === null) {
      const exited = new Promise((r) => prom!.once('exit', r));
      prom.kill('SIGTERM');
      await exited;
    }
    await s?.stop();
    s?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the rules pass promtool check rules', () => {
    // (--lint=none: the mixin records code_verb:apiserver_request_total:increase1h with four
    // rules, one per code class, which the duplicate-rule lint reports; they never overlap)
    const r = spawnSync('promtool', ['check', 'rules', '--lint=none', join(dir, 'rules.yml')], { encoding: 'utf8' });
    expect(r.stdout + r.stderr).toMatch(/SUCCESS: \d+ rules found/);
    expect(r.status).toBe(0);
  });

  it('the scrape is healthy: Prometheus reads the text, with the admin token, every second', async () => {
    const target = await until('the kubeshard target to be up', async () => {
      const t = (await api('/api/v1/targets')).activeTargets.find((x: any) => x.labels.job === 'kube-apiserver');
      return t && t.health === 'up' ? t : undefined;
    });
    expect(target.lastError).toBe('');
    // kube's families, as scraped
    for (const name of ['apiserver_request_total', 'apiserver_request_sli_duration_seconds_bucket', 'authentication_attempts', 'authorization_attempts_total', 'etcd_request_duration_seconds_bucket', 'apiserver_watch_cache_events_received_total', 'apiserver_storage_objects']) {
      const r = await until(`${name} in Prometheus`, async () => {
        const v = await api(`/api/v1/query?query=${encodeURIComponent(name)}`);
        return v.result.length > 0 ? v.result : undefined;
      });
      expect(r[0].metric.job).toBe('kube-apiserver');
    }
  }, 90_000);

  it('the recording rules give results and every group evaluates without an error; KubeAPIDown stays silent', async () => {
    const missing = async () => {
      const out: string[] = [];
      for (const name of RECORDED) if ((await api(`/api/v1/query?query=${encodeURIComponent(name)}`)).result.length === 0) out.push(name);
      return out;
    };
    await until('every recording rule to give a result', async () => ((await missing()).length === 0 ? true : undefined)).catch(async (err) => {
      throw new Error(`${(err as Error).message.split('\n')[0]}: still empty: ${(await missing()).join(', ')}`);
    });
    // the burn rates are ratios of traffic the server really answered
    const burn = (await api(`/api/v1/query?query=${encodeURIComponent('apiserver_request:burnrate5m')}`)).result;
    expect(burn.map((r: any) => r.metric.verb).sort()).toEqual(['read', 'write']);
    for (const r of burn) expect(Number(r.value[1])).toBeGreaterThanOrEqual(0);
    const availability = (await api(`/api/v1/query?query=${encodeURIComponent('apiserver_request:availability30d{verb="all"}')}`)).result;
    expect(Number(availability[0].value[1])).toBeGreaterThan(0.5);
    const groups = await until('every rule group to have been evaluated', async () => {
      const g = (await api('/api/v1/rules')).groups as any[];
      return g.length === 5 && g.every((x) => x.rules.every((r: any) => r.health !== 'unknown')) ? g : undefined;
    });
    for (const g of groups) {
      for (const r of g.rules) expect({ group: g.name, rule: r.name, health: r.health, error: r.lastError ?? '' }).toEqual({ group: g.name, rule: r.name, health: 'ok', error: '' });
    }
    const down = groups.find((g) => g.name === 'kubernetes-system-apiserver').rules.find((r: any) => r.name === 'KubeAPIDown');
    expect(down.state).toBe('inactive');
  }, 120_000);
});
