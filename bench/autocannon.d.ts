// autocannon ships no types; the bench suite uses only this much of it.
declare module 'autocannon' {
  interface Histogram {
    average: number;
    p50: number;
    p90: number;
    p99: number;
    p99_9: number;
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
  /** the run: a promise of its result, and an emitter of 'response' (client, status, bytes, ms) */
  interface Run extends PromiseLike<Result> {
    on(event: 'response', listener: (client: unknown, status: number, bytes: number, ms: number) => void): Run;
  }
  function autocannon(opts: Record<string, unknown>): Run;
  export default autocannon;
}
