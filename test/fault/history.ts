// The history the fault test records: every key-value operation a client invoked on one
// ConfigMap, when (a logical clock: invoke and completion are ticks of one counter, so the
// real-time order of operations is exact), and how it ended: with an answer, with a
// definite failure (a precondition, or a request that was never sent), or with no answer
// (the connection broke, the request timed out, a 5xx that may have been committed):
// "unknown", which the checker treats as maybe applied.
//
// Thread ownership: the test's main thread (the clients are promises on it).

export type OpKind = 'create' | 'update' | 'delete' | 'get';

/**
 * How an operation ended.
 *  - ok: 2xx; for a write, the version it was committed at (rv) and its value;
 *    for a read, what it saw (value null: absent, a 404 of a GET or a key missing from a list)
 *  - exists / conflict / notfound: refused (409 AlreadyExists, 409 Conflict, 404): nothing written
 *  - unknown: no answer that says (maybe applied)
 */
export type Outcome = 'ok' | 'exists' | 'conflict' | 'notfound' | 'unknown';

export interface Op {
  id: number;
  client: number;
  key: string;
  kind: OpKind;
  /** for create and update: the unique value written (data.v); for get: the value seen (null: absent) */
  value: string | null;
  /** the resourceVersion precondition (update, delete); undefined: none */
  precondition?: number;
  /** for ok: the version the write was committed at, or of the object read */
  rv?: number;
  outcome: Outcome;
  call: number;
  /** Infinity for unknown */
  ret: number;
  /**
   * For unknown: the latest tick its effect, if any, can have (the server that held it was
   * killed, and the next one was ready by then: its log replayed, its state settled);
   * undefined: none known (it may take effect at any time, or never).
   */
  deadline?: number;
}

/** The recorder: a logical clock and the operations, appended at completion. */
export class History {
  private clock = 0;
  private nextId = 0;
  readonly ops: Op[] = [];

  /** A tick of the clock, for an invocation. */
  invoke(): number {
    return ++this.clock;
  }

  /** Records a completed (or abandoned: ret = Infinity) operation. */
  complete(op: Omit<Op, 'id' | 'ret'>, unknown = op.outcome === 'unknown'): Op {
    const full: Op = { ...op, id: this.nextId++, ret: unknown ? Infinity : ++this.clock };
    this.ops.push(full);
    return full;
  }

  /**
   * Gives each unknown operation its deadline: the first time a server was ready again after
   * a kill that came after the operation's call (ticks of this history's clock).
   */
  setDeadlines(kills: number[], readies: number[]): void {
    for (const op of this.ops) {
      if (op.ret !== Infinity) continue;
      const kill = kills.find((k) => k > op.call);
      const ready = kill === undefined ? undefined : readies.find((r) => r > kill);
      if (ready !== undefined) op.deadline = ready;
    }
  }

  /**
   * A list read seen as one read of every key of the workload (absent ones read null), each
   * with the list's own interval: per-key linearizability of a list's items.
   */
  completeList(client: number, call: number, keys: string[], items: Map<string, { value: string | null; rv: number }>): void {
    const ret = ++this.clock;
    for (const key of keys) {
      const it = items.get(key);
      this.ops.push({ id: this.nextId++, client, key, kind: 'get', value: it ? it.value : null, rv: it?.rv, outcome: 'ok', call, ret });
    }
  }
}
