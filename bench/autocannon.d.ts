// autocannon ships no types; the bench suite uses only this much of it.
declare module 'autocannon' {
  interface Histogram {
    average: number;
    p50: number;
    p90: number;
    p99: number;
    total: number;
    max: number;
  }
  interface Result {
    requests: Histogram & { total: number };
    latency: Histogram;
    throughput: Histogram;
    non2xx: number;
    errors: number;
    timeouts: number;
    duration: number;
  }
  function autocannon(opts: Record<string, unknown>): Promise<Result>;
  export default autocannon;
}
