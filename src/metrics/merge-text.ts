// The metrics of several front threads as one scrape (issue 18). Each thread counts the
// requests it serves in its own RequestMetrics; /metrics answers for the process, so the
// main thread gathers every thread's text and adds them up, series by series: counters,
// histograms and per-thread gauges (watches open, requests queued) are sums. A few series
// are the process's already, whatever thread renders them (the inflight seats are shared
// memory; every thread's caches hold the same objects; the levels' nominal seats are
// configuration), or each thread's where a sum means nothing (priority and fairness' virtual
// clocks): those are taken from the first text alone.
//
// Thread ownership: the main thread (the gathering scrape runs there).

/** Metric families every thread renders with the process's value: not summed. */
export const PROCESS_WIDE: ReadonlySet<string> = new Set([
  'apiserver_current_inflight_requests',
  'apiserver_storage_objects',
  'apiserver_flowcontrol_nominal_limit_seats',
  'apiserver_flowcontrol_lower_limit_seats',
  'apiserver_flowcontrol_upper_limit_seats',
  'apiserver_flowcontrol_current_limit_seats',
  'apiserver_flowcontrol_request_concurrency_limit',
  // the virtual clock is each thread's queues': a sum means nothing, the first thread's (the main one's) is shown
  'apiserver_flowcontrol_current_r',
  'apiserver_flowcontrol_dispatch_r',
  'apiserver_flowcontrol_latest_s',
  'apiserver_flowcontrol_next_s_bounds',
  'apiserver_flowcontrol_next_discounted_s_bounds',
  // every thread's cache is fed every event of the process: the process received each once
  'apiserver_watch_cache_events_received_total',
  'apiserver_watch_cache_events_dispatched_total',
  'apiserver_watch_cache_initializations_total',
  'apiserver_watch_cache_resource_version',
  'watch_cache_capacity',
  'apiserver_storage_size_bytes',
  // every thread reloads the encryption configuration from the one file: the process reloaded it once
  'apiserver_encryption_config_controller_automatic_reloads_total',
  'apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds',
  'apiserver_encryption_config_controller_automatic_reload_success_total',
  'apiserver_encryption_config_controller_automatic_reload_failures_total',
]);

interface Family {
  /** its # HELP and # TYPE lines */
  head: string[];
  /** series (name and labels, as written) -> value */
  series: Map<string, number>;
}

/** The family a sample belongs to: a histogram's _bucket, _sum and _count series belong to it. */
function familyOf(sample: string, families: Map<string, Family>): string {
  const name = sample.slice(0, sample.search(/[{ ]/));
  if (families.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (name.endsWith(suffix) && families.has(name.slice(0, -suffix.length))) return name.slice(0, -suffix.length);
  }
  return name;
}

/**
 * Adds up texts in Prometheus' text format 0.0.4: the first one's families and series in
 * its order, then what the others add. Values are summed except in PROCESS_WIDE families,
 * which keep the first text's value.
 */
export function mergeMetricsText(texts: string[], processWide: ReadonlySet<string> = PROCESS_WIDE): string {
  const families = new Map<string, Family>();
  for (const text of texts) {
    let current: Family | undefined;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      if (line.startsWith('# ')) {
        const name = line.split(' ')[2];
        let f = families.get(name);
        if (!f) families.set(name, (f = { head: [], series: new Map() }));
        // one # HELP and one # TYPE line a family (the first text's)
        const kind = line.slice(0, 7);
        if (!f.head.some((h) => h.startsWith(kind))) f.head.push(line);
        current = f;
        continue;
      }
      const space = line.lastIndexOf(' ');
      const key = line.slice(0, space);
      const value = Number(line.slice(space + 1));
      const name = familyOf(line, families);
      const f = families.get(name) ?? current;
      if (!f) continue;
      const had = f.series.get(key);
      if (had === undefined) f.series.set(key, value);
      else if (!processWide.has(name)) f.series.set(key, had + value);
    }
  }
  const out: string[] = [];
  for (const f of families.values()) {
    out.push(...f.head);
    for (const [key, value] of f.series) out.push(`${key} ${value}`);
  }
  return out.join('\n') + '\n';
}
