// --request-timeout: every request that is not long-running has a deadline, and is answered
// 504 when it passes (kube's WithRequestDeadline, endpoints/filters/request_deadline.go, and
// WithTimeoutForNonLongRunningRequests, server/filters/timeout.go).
//
// The deadline is --request-timeout (1m) from the request's arrival, or the request's own
// ?timeout= (a Go duration) when that is shorter and above 0. A ?timeout= Go cannot parse
// is refused with kube's 400, before authentication, as kube's filter sits outside it.
//
// At the deadline, as kube's timeout writer:
// - no status sent yet: 504 with the Status kube's timeout filter writes, encoded as that
//   filter encodes it (no kind or apiVersion, and Go's sniffed text/plain Content-Type: so
//   client-go shows its own "the server was unable to return a response in the time
//   allotted, but may still be processing the request");
// - the response already under way (a large body to a slow reader): the connection is
//   closed (kube panics with http.ErrAbortHandler, which does that).
// Writes (create, update, patch, delete, deletecollection) have a deadline of their own too,
// 34 s at most (kube's requestTimeoutUpperBound in endpoints/handlers/rest.go): past it, when
// that comes before the request's deadline (the default 1m), the write is answered as kube's
// finisher answers it, with a negotiated 504 "Timeout: request did not complete within
// requested timeout - context deadline exceeded".
// The handler is not stopped: a write it was doing may still be committed after the 504 (so
// may kube's), and whatever it answers later is dropped by the sink, which has ended.
//
// Thread ownership: stateless; each request's timer lives on the thread that serves it.
import type { Filter } from '../filter-chain.js';
import type { ApiRequest, ResponseSink } from '../types.js';
import { errors } from '../../errors.js';
import { sendError } from '../respond.js';
import { isLongRunning } from '../lifecycle.js';
import { DurationError, parseGoDuration } from '../../request/go-duration.js';

/** kube's NewTimeoutError("request did not complete within the allotted timeout", 0), as json.Encoder writes its ErrStatus. */
const TIMEOUT_BODY =
  JSON.stringify({
    metadata: {},
    status: 'Failure',
    message: 'Timeout: request did not complete within the allotted timeout',
    reason: 'Timeout',
    details: {},
    code: 504,
  }) + '\n';

/** kube's requestTimeoutUpperBound, the deadline of a write's storage work */
const WRITE_TIMEOUT_MS = 34_000;
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** kube's invalidTimeoutInURL */
const INVALID_TIMEOUT = 'invalid timeout specified in the request URL';

/** The request's deadline in ms from now: --request-timeout, or a shorter positive ?timeout=. */
export function requestTimeoutMs(req: ApiRequest, defaultSeconds: number): number {
  let seconds = defaultSeconds;
  // (the query is parsed only when it may hold the parameter)
  if (req.rawQuery.includes('timeout')) {
    const v = req.query.get('timeout');
    if (v) {
      let asked: number;
      try {
        asked = parseGoDuration(v);
      } catch (e) {
        if (e instanceof DurationError) throw errors.badRequest(`${INVALID_TIMEOUT} - ${e.message}`);
        throw e;
      }
      if (asked > 0 && asked < defaultSeconds) seconds = asked;
    }
  }
  return seconds * 1000;
}

/**
 * The requests waiting for one deadline length, in arrival order, which is deadline order:
 * a doubly linked list (a request leaves it in O(1) when its response ends) swept by one
 * timer. Cheaper than a timer per request (a cached GET costs about a microsecond, which a
 * setTimeout and clearTimeout each would add a fifth to).
 */
class DeadlineList {
  private head: Pending | null = null;
  private tail: Pending | null = null;
  private sweeper: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly ms: number,
    private readonly fire: (req: ApiRequest, res: ResponseSink) => void,
  ) {}

  add(req: ApiRequest, res: ResponseSink): void {
    const p = new Pending(req, res, performance.now() + this.ms, this);
    p.prev = this.tail;
    if (this.tail) this.tail.next = p;
    else this.head = p;
    this.tail = p;
    res.onDone(p.done);
    if (this.sweeper === null) {
      this.sweeper = setInterval(() => this.sweep(), Math.min(SWEEP_MS, Math.max(1, this.ms)));
      this.sweeper.unref();
    }
  }

  remove(p: Pending): void {
    if (p.list === null) return;
    p.list = null;
    if (p.prev) p.prev.next = p.next;
    else this.head = p.next;
    if (p.next) p.next.prev = p.prev;
    else this.tail = p.prev;
    p.prev = p.next = null;
  }

  private sweep(): void {
    const now = performance.now();
    while (this.head !== null && this.head.deadline <= now) {
      const p = this.head;
      this.remove(p);
      this.fire(p.req, p.res);
    }
    if (this.head === null && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }
}

/** how often the deadlines are looked at: a 504 leaves at most this late */
const SWEEP_MS = 100;

class Pending {
  prev: Pending | null = null;
  next: Pending | null = null;
  constructor(
    readonly req: ApiRequest,
    readonly res: ResponseSink,
    readonly deadline: number,
    public list: DeadlineList | null,
  ) {}
  readonly done = (): void => this.list?.remove(this);
}

/**
 * @param terminated counts a request the filter ended with its 504 (kube's
 *   RecordRequestTermination: apiserver_request_terminations_total)
 */
export function requestTimeoutFilter(defaultSeconds: number, terminated?: (req: ApiRequest, code: number) => void): Filter {
  const defaultMs = defaultSeconds * 1000;
  const counted =
    (end: (req: ApiRequest, res: ResponseSink) => void) =>
    (req: ApiRequest, res: ResponseSink): void => {
      const before = res.statusSent?.() ?? false;
      end(req, res);
      if (!before && terminated && !res.aborted) terminated(req, 504);
    };
  const onTimeout = counted(timedOut);
  const byDefault = new DeadlineList(defaultMs, onTimeout);
  const writes = new DeadlineList(WRITE_TIMEOUT_MS, counted(writeTimedOut));
  return {
    name: 'request-timeout',
    run: (req, res) => {
      const info = req.requestInfo!;
      if (isLongRunning(info)) return;
      const ms = requestTimeoutMs(req, defaultSeconds);
      // (a timeout of 0 from the flag: kube then has a deadline of now, every request times out;
      // no operator means that, and it is kept as kube)
      if (info.isResourceRequest && WRITE_VERBS.has(info.verb) && WRITE_TIMEOUT_MS < ms) writes.add(req, res);
      else if (ms === defaultMs) byDefault.add(req, res);
      else {
        // a ?timeout= of its own: a timer of its own (rare)
        const timer = setTimeout(() => onTimeout(req, res), ms);
        res.onDone(() => clearTimeout(timer));
      }
    },
  };
}

function timedOut(req: ApiRequest, res: ResponseSink): void {
  if (res.aborted) return;
  if (res.statusSent?.()) {
    res.close();
    return;
  }
  // (the headers the handler's filters set, the priority-and-fairness ones, were for the
  // handler's answer: kube's timeout writer drops them with it)
  req.responseHeaders = undefined;
  res.send(504, [['Cache-Control', 'no-cache, private'], ['Content-Type', 'text/plain; charset=utf-8']], TIMEOUT_BODY);
}

/** kube's finisher (finishRequest) past the write's own deadline: a Status in the negotiated type. */
function writeTimedOut(req: ApiRequest, res: ResponseSink): void {
  if (res.aborted) return;
  if (res.statusSent?.()) {
    res.close();
    return;
  }
  sendError(req, res, errors.patchTimeout());
}
