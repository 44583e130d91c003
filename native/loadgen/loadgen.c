/*
 * loadgen: the bench suite's native HTTP/1.1 load client (wrk-like).
 *
 * The bench runs its load generator on the same 2 cores as the server, so whatever CPU the
 * generator burns is taken from the server it measures. The JS lean client (bench/raw-load.ts)
 * costs ~50 µs per create and ~22 µs per GET; this one does the same work (one keep-alive TLS
 * connection per client, one request in flight on each, responses delimited but not parsed)
 * in a single thread with epoll and OpenSSL, for a fraction of that.
 *
 *   loadgen --host 127.0.0.1 --port 6443 --connections 50 --seconds 10 --request FILE
 *           [--cert PEM --key PEM]
 *
 * FILE holds the exact request bytes (head and body), sent again as soon as each response is
 * complete. All connections finish their TLS handshake before the clock starts. The result is
 * one line of JSON on stdout:
 *   {"requests":N,"rps":X,"p50":ms,"p90":ms,"p99":ms,"p999":ms,"non2xx":N,"errors":N,"cpuUser":s,
 *    "cpuSys":s,"connections":N,"dropped":N,"seconds":s,"polls":N,"perSecond":[N,...]}
 * cpuUser/cpuSys cover the timed window only (not the handshakes), so that dividing by
 * requests gives the client's own cost per request. connections: those open when the clock
 * started; dropped: those lost and not reopened; seconds: from the first request to the last
 * response; polls: epoll_wait calls (requests / polls is how many responses a wake-up carried);
 * perSecond: responses completed in each whole second of the timed window (1 s buckets).
 *
 * Thread ownership: one thread owns everything here.
 *
 * Build: cc -O2 -o native/build/loadgen native/loadgen/loadgen.c -lssl -lcrypto
 * (tls-socket.h and http-framing.h beside it hold what it shares with watchfleet.c).
 */
#define _GNU_SOURCE
#define TOOL_NAME "loadgen"
#include <strings.h>
#include <sys/resource.h>
#include "http-framing.h"
#include "tls-socket.h"

/* A response head larger than this is treated as a protocol error (kube-apiserver's are
 * a few hundred bytes). */
#define HEAD_MAX (16 * 1024)
/* How long the handshakes may take, and how long responses still in flight at the end of
 * the run are waited for before they count as errors. */
#define HANDSHAKE_NS (10ull * 1000000000ull)
#define DRAIN_NS (5ull * 1000000000ull)
#define PER_SECOND_MAX 3600 /* 1 s buckets kept for the per-second counts */

enum conn_state {
  C_DEAD,       /* closed and not reopened */
  C_CONNECTING, /* TCP connect in progress */
  C_HANDSHAKE,  /* TLS handshake in progress */
  C_IDLE,       /* connected, nothing in flight */
  C_WRITING,    /* SSL_write of the request waits for the socket */
  C_READING,    /* the request is sent, its response is being read */
};

enum body_mode { B_NONE, B_LENGTH, B_CHUNKED, B_UNTIL_CLOSE };

struct conn {
  struct tls_sock sock; /* first: the epoll data is the conn's address (tls-socket.h) */
  enum conn_state state;
  int inflight;
  /* set while a connection that failed during the run is being opened again: if that fails
   * too the slot is dropped, rather than spinning on a server that is gone */
  int retrying;
  uint64_t sent_ns;
  /* response framing */
  int in_head;
  size_t head_len;
  int status;
  int close_after; /* the server said Connection: close (or spoke HTTP/1.0) */
  enum body_mode mode;
  uint64_t remaining; /* body bytes still to come (B_LENGTH) */
  struct chunked chunk; /* B_CHUNKED */
  char head[HEAD_MAX];
};

static struct {
  int nconn;
  double seconds;
  const char *request_file;
  char *req;
  size_t req_len;
  int head_request; /* a HEAD request: its responses have no body whatever they announce */
  struct conn *conns;
  int started;
  uint64_t start_ns, deadline_ns, last_done_ns;
  uint64_t requests, non2xx, errors;
  uint64_t polls; /* epoll_wait calls in the timed window: requests / polls is the batching reached */
  int inflight;
  int opened;  /* connections ready when the clock started */
  int dropped; /* connections lost and not reopened */
  uint64_t *lat;
  size_t nlat, caplat;
  /* responses per second of the timed window (1 s buckets; the drain after it is not kept) */
  uint64_t per_second[PER_SECOND_MAX];
} g;

static void close_conn(struct conn *c) {
  tls_close(&c->sock);
  if (c->inflight) {
    c->inflight = 0;
    g.inflight--;
  }
  c->state = C_DEAD;
}

/* -1 with errno set when the socket cannot even be started */
static int open_conn(struct conn *c) {
  if (tls_open(&c->sock, NULL)) return -1;
  c->state = C_CONNECTING;
  c->inflight = 0;
  return 0;
}

static void send_request(struct conn *c, uint64_t now);
static void do_handshake(struct conn *c);

/* A connection failed (closed by the server, reset, or a framing error). */
static void conn_failed(struct conn *c) {
  int was_retry = c->retrying;
  /* An idle connection closed after the run is no failure: nothing was lost. */
  if (c->inflight || !g.started || now_ns() < g.deadline_ns) g.errors++;
  close_conn(c);
  if (!g.started || was_retry || now_ns() >= g.deadline_ns) {
    if (g.started && now_ns() < g.deadline_ns) g.dropped++;
    return;
  }
  c->retrying = 1;
  if (open_conn(c) < 0) {
    g.errors++;
    g.dropped++;
  }
}

/* The server closes after this response (Connection: close): open a new connection
 * without counting an error. */
static void reopen(struct conn *c) {
  close_conn(c);
  if (now_ns() >= g.deadline_ns) return;
  c->retrying = 1;
  if (open_conn(c) < 0) {
    g.errors++;
    g.dropped++;
  }
}

static int contains_ci(const char *s, size_t n, const char *word) {
  size_t w = strlen(word);
  for (size_t i = 0; i + w <= n; i++)
    if (strncasecmp(s + i, word, w) == 0) return 1;
  return 0;
}

/* Reads the status code and the framing headers of a complete response head. */
static int parse_head(struct conn *c, const char *h, size_t len) {
  if (len < 12 || memcmp(h, "HTTP/1.", 7) != 0 || h[8] != ' ') return -1;
  if (h[9] < '0' || h[9] > '9' || h[10] < '0' || h[10] > '9' || h[11] < '0' || h[11] > '9') return -1;
  c->status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
  c->close_after = h[7] == '0';
  int have_length = 0, chunked = 0;
  uint64_t length = 0;
  const char *end = h + len;
  const char *line = memchr(h, '\n', len);
  if (!line) return -1;
  for (line++; line < end;) {
    const char *eol = memchr(line, '\n', end - line);
    if (!eol) break;
    const char *colon = memchr(line, ':', eol - line);
    if (colon) {
      size_t nlen = colon - line;
      const char *v = colon + 1;
      while (v < eol && (*v == ' ' || *v == '\t')) v++;
      size_t vlen = eol - v;
      if (nlen == 14 && strncasecmp(line, "content-length", 14) == 0) {
        int digits = 0;
        length = 0;
        for (const char *p = v; p < eol && *p >= '0' && *p <= '9'; p++, digits++) {
          if (length > UINT64_MAX / 10 - 10) return -1;
          length = length * 10 + (uint64_t)(*p - '0');
        }
        if (!digits) return -1;
        have_length = 1;
      } else if (nlen == 17 && strncasecmp(line, "transfer-encoding", 17) == 0) {
        chunked = contains_ci(v, vlen, "chunked");
      } else if (nlen == 10 && strncasecmp(line, "connection", 10) == 0) {
        if (contains_ci(v, vlen, "close")) c->close_after = 1;
        else if (contains_ci(v, vlen, "keep-alive")) c->close_after = 0;
      }
    }
    line = eol + 1;
  }
  if (c->status < 200 || c->status == 204 || c->status == 304 || g.head_request) {
    c->mode = B_NONE;
  } else if (chunked) {
    /* chunked wins over a Content-Length, as RFC 9112 says */
    c->mode = B_CHUNKED;
    chunked_start(&c->chunk);
  } else if (have_length) {
    c->mode = B_LENGTH;
    c->remaining = length;
  } else {
    c->mode = B_UNTIL_CLOSE;
    c->close_after = 1;
  }
  return 0;
}

/* Takes n bytes read from the connection: 1 when they complete the response, 0 when more
 * are needed, -1 on a framing error (bytes beyond the response included: with one request
 * in flight there is nothing they could belong to). */
static int feed(struct conn *c, const char *p, size_t n) {
  for (;;) {
    if (c->in_head) {
      if (n == 0) return 0;
      /* The head is copied aside (a few hundred bytes) so that one split across reads,
       * even across TLS records, is parsed in one piece. */
      ssize_t head_len = head_gather(c->head, &c->head_len, HEAD_MAX, p, n);
      if (head_len <= 0) return (int)head_len;
      size_t used = (size_t)head_len - c->head_len;
      p += used, n -= used;
      if (parse_head(c, c->head, (size_t)head_len) < 0) return -1;
      c->head_len = 0;
      /* an interim response (100 Continue): the real one follows */
      if (c->status >= 100 && c->status < 200 && c->status != 101) continue;
      c->in_head = 0;
    }
    int done = 0;
    switch (c->mode) {
    case B_NONE:
      done = 1;
      break;
    case B_LENGTH: {
      size_t take = n < c->remaining ? n : (size_t)c->remaining;
      p += take, n -= take;
      c->remaining -= take;
      done = c->remaining == 0;
      break;
    }
    case B_CHUNKED: {
      const char *data;
      size_t dlen;
      enum chunked_step r;
      /* chunk data is skipped, never looked at; a lone LF after it is let pass */
      while ((r = chunked_next(&c->chunk, &p, &n, &data, &dlen, 1)) == CH_DATA) {}
      if (r == CH_BROKEN) return -1;
      done = r == CH_END;
      break;
    }
    case B_UNTIL_CLOSE:
      n = 0; /* ends when the server closes */
      break;
    }
    if (!done) return 0;
    return n > 0 ? -1 : 1;
  }
}

static void record_latency(uint64_t ns) {
  if (g.nlat == g.caplat) {
    g.caplat = g.caplat ? g.caplat * 2 : 1 << 16;
    g.lat = realloc(g.lat, g.caplat * sizeof *g.lat);
    if (!g.lat) die("out of memory");
  }
  g.lat[g.nlat++] = ns;
}

static void response_done(struct conn *c) {
  uint64_t now = now_ns();
  record_latency(now - c->sent_ns);
  if (now >= g.start_ns) {
    uint64_t sec = (now - g.start_ns) / 1000000000ull;
    if (sec < PER_SECOND_MAX) g.per_second[sec]++;
  }
  g.requests++;
  if (c->status < 200 || c->status >= 300) g.non2xx++;
  g.last_done_ns = now;
  c->inflight = 0;
  g.inflight--;
  if (c->close_after) {
    reopen(c);
  } else if (now >= g.deadline_ns) {
    c->state = C_IDLE;
  } else {
    send_request(c, now);
  }
}

/* tls_read's on_bytes: nonzero once the response is complete or the connection failed, so
 * that nothing more is read for this response. */
static int on_bytes(struct tls_sock *s, const char *p, size_t n) {
  struct conn *c = (struct conn *)s;
  if (!c->inflight) { /* data nobody asked for */
    conn_failed(c);
    return 1;
  }
  int r = feed(c, p, n);
  if (r < 0) {
    conn_failed(c);
    return 1;
  }
  if (r > 0) {
    response_done(c);
    return 1;
  }
  return 0;
}

static void do_read(struct conn *c) {
  if (tls_read(&c->sock, on_bytes) >= 0) return;
  /* closed (close_notify or EOF) or broken */
  if (c->inflight && c->mode == B_UNTIL_CLOSE && !c->in_head) {
    response_done(c); /* the close was the end of that body; reopens */
    return;
  }
  conn_failed(c);
}

static void do_write(struct conn *c) {
  int r = tls_write(&c->sock, g.req, g.req_len);
  if (r > 0) c->state = C_READING;
  else if (r < 0) conn_failed(c);
}

static void send_request(struct conn *c, uint64_t now) {
  c->sent_ns = now;
  c->inflight = 1;
  g.inflight++;
  c->in_head = 1;
  c->head_len = 0;
  c->state = C_WRITING;
  do_write(c);
}

static void do_handshake(struct conn *c) {
  int r = tls_handshake(&c->sock);
  if (r > 0) {
    c->state = C_IDLE;
    c->retrying = 0;
    /* EPOLLIN while idle: session tickets are read, and a close is noticed */
    set_interest(&c->sock, EPOLLIN);
    if (g.started && now_ns() < g.deadline_ns) send_request(c, now_ns());
    return;
  }
  if (r == 0) return;
  if (!g.started) warn_tls("TLS handshake failed");
  conn_failed(c);
}

static void on_event(struct conn *c, uint32_t ev) {
  switch (c->state) {
  case C_CONNECTING: {
    int err = tls_connect_error(&c->sock);
    if (err) {
      if (!g.started) fprintf(stderr, "loadgen: connect: %s\n", strerror(err));
      conn_failed(c);
      return;
    }
    c->state = C_HANDSHAKE;
    do_handshake(c);
    return;
  }
  case C_HANDSHAKE:
    do_handshake(c);
    return;
  case C_WRITING:
    do_write(c);
    return;
  case C_IDLE:
  case C_READING:
    do_read(c);
    return;
  case C_DEAD:
    return;
  }
  (void)ev;
}

static void poll_once(int timeout_ms) {
  struct epoll_event evs[256];
  int n = epoll_wait(net.ep, evs, 256, timeout_ms);
  if (n < 0 && errno != EINTR) die("epoll_wait");
  if (g.started) g.polls++;
  for (int i = 0; i < n; i++) on_event(evs[i].data.ptr, evs[i].events);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* the same rank as bench/watch-load.ts percentile() */
static double percentile_ms(double p) {
  size_t i = (size_t)(p / 100.0 * (double)g.nlat);
  if (i >= g.nlat) i = g.nlat - 1;
  return (double)g.lat[i] / 1e6;
}

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

static void usage(void) {
  fprintf(stderr, "usage: loadgen --host H --port P --connections N --seconds S --request FILE [--cert PEM --key PEM]\n");
  exit(2);
}

int main(int argc, char **argv) {
  net.host = "127.0.0.1";
  g.nconn = 50;
  g.seconds = 10;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) usage();
    const char *v = argv[++i];
    if (net_option(a, v)) continue;
    if (!strcmp(a, "--connections")) g.nconn = atoi(v);
    else if (!strcmp(a, "--seconds")) g.seconds = strtod(v, NULL);
    else if (!strcmp(a, "--request")) g.request_file = v;
    else usage();
  }
  if (!net.port || g.nconn <= 0 || g.seconds <= 0 || !g.request_file || !net.cert != !net.key) usage();
  g.req = read_file(g.request_file, &g.req_len);
  if (!g.req) die("cannot read the request file");
  g.head_request = g.req_len >= 5 && memcmp(g.req, "HEAD ", 5) == 0;
  /* 64 KiB of read-ahead lets a large list come in a few reads */
  net_init(64 * 1024);
  g.conns = calloc((size_t)g.nconn, sizeof *g.conns);
  if (!g.conns) die("out of memory");

  /* Handshakes first, outside the measured window: the bench measures requests on open
   * connections, as a client with a connection pool sends them. */
  int failed = 0;
  for (int i = 0; i < g.nconn; i++) {
    g.conns[i].sock.fd = -1;
    if (open_conn(&g.conns[i]) < 0) {
      fprintf(stderr, "loadgen: connect: %s\n", strerror(errno));
      g.conns[i].state = C_DEAD;
      g.errors++;
    }
  }
  uint64_t hs_deadline = now_ns() + HANDSHAKE_NS;
  for (;;) {
    int pending = 0;
    for (int i = 0; i < g.nconn; i++) pending += g.conns[i].state == C_CONNECTING || g.conns[i].state == C_HANDSHAKE;
    if (!pending || now_ns() >= hs_deadline) break;
    poll_once(100);
  }
  for (int i = 0; i < g.nconn; i++) {
    struct conn *c = &g.conns[i];
    if (c->state == C_CONNECTING || c->state == C_HANDSHAKE) {
      g.errors++;
      close_conn(c);
    }
    if (c->state == C_DEAD) failed++;
  }
  g.opened = g.nconn - failed;
  if (g.opened == 0) die("no connection could be established");
  g.dropped = failed;

  struct rusage ru0, ru1;
  getrusage(RUSAGE_SELF, &ru0);
  g.start_ns = now_ns();
  g.deadline_ns = g.start_ns + (uint64_t)(g.seconds * 1e9);
  g.started = 1;
  for (int i = 0; i < g.nconn; i++)
    if (g.conns[i].state == C_IDLE) send_request(&g.conns[i], now_ns());

  for (;;) {
    uint64_t now = now_ns();
    if (now >= g.deadline_ns && g.inflight == 0) break;
    if (now >= g.deadline_ns + DRAIN_NS) break;
    uint64_t until = now < g.deadline_ns ? g.deadline_ns : g.deadline_ns + DRAIN_NS;
    uint64_t ms = (until - now) / 1000000 + 1;
    poll_once(ms > 1000 ? 1000 : (int)ms);
  }
  getrusage(RUSAGE_SELF, &ru1);
  /* responses that did not come back within the drain time */
  g.errors += (uint64_t)g.inflight;
  for (int i = 0; i < g.nconn; i++)
    if (g.conns[i].state != C_DEAD) close_conn(&g.conns[i]);

  /* The rate over the window from the first request to the last response (at least the
   * requested duration): responses that complete after the deadline are counted, so their
   * time is too. */
  uint64_t end = g.last_done_ns > g.deadline_ns ? g.last_done_ns : g.deadline_ns;
  double elapsed = (double)(end - g.start_ns) / 1e9;
  char p50[32] = "null", p90[32] = "null", p99[32] = "null", p999[32] = "null";
  if (g.nlat) {
    qsort(g.lat, g.nlat, sizeof *g.lat, cmp_u64);
    snprintf(p50, sizeof p50, "%.3f", percentile_ms(50));
    snprintf(p90, sizeof p90, "%.3f", percentile_ms(90));
    snprintf(p99, sizeof p99, "%.3f", percentile_ms(99));
    snprintf(p999, sizeof p999, "%.3f", percentile_ms(99.9));
  }
  printf("{\"requests\":%llu,\"rps\":%.1f,\"p50\":%s,\"p90\":%s,\"p99\":%s,\"p999\":%s,\"non2xx\":%llu,\"errors\":%llu,"
         "\"cpuUser\":%.4f,\"cpuSys\":%.4f,\"connections\":%d,\"dropped\":%d,\"seconds\":%.3f,\"polls\":%llu,\"perSecond\":[",
         (unsigned long long)g.requests, (double)g.requests / elapsed, p50, p90, p99, p999, (unsigned long long)g.non2xx,
         (unsigned long long)g.errors, tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime), tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime),
         g.opened, g.dropped, elapsed, (unsigned long long)g.polls);
  /* whole seconds of the timed window only */
  size_t whole = (size_t)g.seconds;
  if (whole > PER_SECOND_MAX) whole = PER_SECOND_MAX;
  for (size_t i = 0; i < whole; i++) printf(i ? ",%llu" : "%llu", (unsigned long long)g.per_second[i]);
  printf("]}\n");
  SSL_CTX_free(net.ctx);
  return 0;
}
