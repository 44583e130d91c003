/*
 * watchfleet: the watch bench's native watch fleet (bench/native-watch.ts drives it).
 *
 * The watch latency bench runs its fleet of thousands of watches on the same 2 cores as the
 * server. The JS fleet (bench/watch-load.ts) costs ~4.5 µs per event, nearly a core at
 * 134,000 events/s, so its figures mostly measured how the server and the client shared the
 * CPU. This program holds the same watches (one keep-alive TLS connection each, the same
 * request bytes) in one thread with epoll and OpenSSL: it undoes the chunked coding, counts
 * the events (a data line that ends an object) of each watch, and on every sample-every-th
 * watch notes when each sequenced create (annotation bench/seq) arrived.
 *
 *   watchfleet --host 127.0.0.1 --port 6443 --watches N --request FILE [--sample-every K]
 *              [--cert PEM --key PEM]
 *
 * Talks with its parent over pipes, one line per message. On stdout:
 *   s EVENTS OPEN FAILED MALFORMED READS   the counts, whenever they changed (at most every 5 ms)
 *   r OPEN FAILED                          once: every watch has its response head or failed
 *   a SEQ MS SEQ MS ...                    answers "t": arrivals noted since the last "t"
 *   w N N ...                              answers "w": the events counted by each watch
 * MS is CLOCK_MONOTONIC in ms (µs resolution), the clock behind node's performance.now():
 * the parent maps it onto its own nowMs() with one offset, unaffected by wall-clock steps.
 * On stdin: "t", "w"; end of input closes every watch and exits.
 *
 * Thread ownership: one thread owns everything here.
 *
 * Build: cc -O2 -o native/build/watchfleet native/loadgen/watchfleet.c -lssl -lcrypto
 * (tls-socket.h and http-framing.h beside it hold what it shares with loadgen.c).
 */
#define _GNU_SOURCE
#define TOOL_NAME "watchfleet"
#include <strings.h>
#include <sys/resource.h>
#include "http-framing.h"
#include "tls-socket.h"

/* A response head larger than this is a broken stream (the server's are a few hundred bytes). */
#define HEAD_MAX (16 * 1024)
/* Watches opening at once (connect, handshake, request, head): the JS fleet's two threads
 * open waves of 100 each; all 10,000 at once would overflow the server's accept backlog. */
#define OPENING_MAX 200
/* A sampled watch's event line is kept up to this length: the mark is in the metadata, at
 * its start. */
#define EVENT_LINE_MAX (64 * 1024)
#define STATUS_EVERY_NS 5000000ull

static const char SEQ_MARK[] = "\"bench/seq\":\"";

enum wstate {
  W_IDLE,       /* not opened yet */
  W_CONNECTING, /* TCP connect in progress */
  W_HANDSHAKE,  /* TLS handshake in progress */
  W_WRITING,    /* the request waits for the socket */
  W_HEAD,       /* the request is sent, the response head is being read */
  W_BODY,       /* 200: the watch's events */
  W_DEAD,       /* closed */
};

struct watch {
  struct tls_sock sock; /* first: the epoll data is the watch's address (tls-socket.h) */
  enum wstate state;
  int sampled;
  int opened; /* counted in g.open */
  /* the response head, while it is read (allocated only then: 10,000 watches) */
  char *head;
  size_t head_len;
  /* the body: the chunked coding, or (chunked false) data up to the close */
  int chunked;
  struct chunked chunk;
  /* the last data byte seen: an event ends where a newline follows a closing brace, and the
   * two may come in different reads or chunks */
  char last;
  uint64_t events;
  /* a sampled watch's current event line (up to EVENT_LINE_MAX bytes of it) */
  char *line;
  size_t line_used;
};

static struct {
  int n;
  int sample_every;
  char *req;
  size_t req_len;
  /* the first TLS session the server gave: every later watch resumes it (as the JS fleet
   * does), sparing the server a full handshake per watch */
  SSL_SESSION *session;
  struct watch *w;
  int next;    /* the next watch to open */
  int opening; /* watches between connect and their response head */
  int ready;   /* "r" was written */
  uint64_t events, reads;
  int open, failed, malformed;
  /* (sequence number, arrival ms) pairs noted since the last "t" */
  double *arr;
  size_t narr, caparr;
  /* the counts last written, and when */
  uint64_t s_events, s_reads;
  int s_open, s_failed, s_malformed;
  uint64_t s_at;
} g;

static void open_next(void);

/* Closes a watch for good (the JS fleet does not reopen either): an open one leaves the open
 * count, one that never got its 200 counts as failed. */
static void close_watch(struct watch *w) {
  if (w->state == W_DEAD || w->state == W_IDLE) return;
  int was_opening = w->state != W_BODY;
  tls_close(&w->sock);
  free(w->head);
  w->head = NULL;
  free(w->line);
  w->line = NULL;
  if (w->opened) g.open--;
  else g.failed++;
  w->opened = 0;
  w->state = W_DEAD;
  if (was_opening) {
    g.opening--;
    open_next();
  }
}

static int new_session(SSL *ssl, SSL_SESSION *s) {
  (void)ssl;
  if (g.session) return 0;
  g.session = s; /* 1: the reference is ours */
  return 1;
}

static void start_watch(struct watch *w) {
  g.opening++;
  w->state = W_CONNECTING;
  const char *failed = tls_open(&w->sock, g.session);
  if (failed) {
    fprintf(stderr, "watchfleet: %s: %s\n", failed, strerror(errno));
    close_watch(w);
  }
}

/* Keeps OPENING_MAX watches opening until every one has been started. A watch that fails
 * at once calls back in here: the loop already running goes on instead (no recursion as
 * deep as the fleet when every connect fails). */
static void open_next(void) {
  static int running;
  if (running) return;
  running = 1;
  while (g.opening < OPENING_MAX && g.next < g.n) start_watch(&g.w[g.next++]);
  running = 0;
}

static void note_arrival(uint64_t seq, double at) {
  if (g.narr + 2 > g.caparr) {
    g.caparr = g.caparr ? g.caparr * 2 : 1 << 16;
    g.arr = realloc(g.arr, g.caparr * sizeof *g.arr);
    if (!g.arr) die("out of memory");
  }
  g.arr[g.narr++] = (double)seq;
  g.arr[g.narr++] = at;
}

/* A sampled watch's complete event line: its sequence number, if it carries one. */
static void scan_line(const char *s, size_t n, double at) {
  const char *m = memmem(s, n, SEQ_MARK, sizeof SEQ_MARK - 1);
  if (!m) return;
  const char *p = m + sizeof SEQ_MARK - 1, *e = s + n;
  uint64_t v = 0;
  int digits = 0;
  while (p < e && *p >= '0' && *p <= '9' && digits < 18) v = v * 10 + (uint64_t)(*p++ - '0'), digits++;
  if (digits && p < e && *p == '"') note_arrival(v, at);
}

/* Watch data (the chunked coding already undone): counts the events that end in it; a
 * sampled watch also gathers each line whole, so that a mark split by a read or a chunk is
 * still found (the JS fleet misses those). at: when this read arrived, for sampled watches. */
static void on_data(struct watch *w, const char *p, size_t n, double at) {
  if (n == 0) return;
  const char *e = p + n;
  for (const char *q = p, *nl; (nl = memchr(q, '\n', (size_t)(e - q))); q = nl + 1)
    if ((nl > p ? nl[-1] : w->last) == '}') w->events++, g.events++;
  w->last = e[-1];
  if (!w->sampled) return;
  if (!w->line && !(w->line = malloc(EVENT_LINE_MAX))) die("out of memory");
  for (const char *q = p; q < e;) {
    const char *nl = memchr(q, '\n', (size_t)(e - q));
    const char *end = nl ? nl : e;
    size_t take = (size_t)(end - q);
    if (take > EVENT_LINE_MAX - w->line_used) take = EVENT_LINE_MAX - w->line_used;
    memcpy(w->line + w->line_used, q, take);
    w->line_used += take;
    if (!nl) break;
    scan_line(w->line, w->line_used, at);
    w->line_used = 0;
    q = nl + 1;
  }
}

/* The watch's body bytes p[0, n), their data handed to on_data: 1 when the last chunk and its
 * trailers are through (the server ended the watch), 0 when more is to come, -1 on a broken
 * framing (a chunk's data must end in CRLF here: the bench checks the server's framing). */
static int walk_body(struct watch *w, const char *p, size_t n, double at) {
  if (!w->chunked) {
    on_data(w, p, n, at);
    return 0;
  }
  for (;;) {
    const char *data;
    size_t dlen;
    switch (chunked_next(&w->chunk, &p, &n, &data, &dlen, 0)) {
    case CH_DATA:
      on_data(w, data, dlen, at);
      break;
    case CH_MORE:
      return 0;
    case CH_END:
      return 1;
    case CH_BROKEN:
      return -1;
    }
  }
}

static int header_has(const char *h, size_t len, const char *name, const char *word) {
  size_t nl = strlen(name), wl = strlen(word);
  for (const char *line = h, *end = h + len; line < end;) {
    const char *eol = memchr(line, '\n', (size_t)(end - line));
    if (!eol) eol = end;
    if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':')
      for (const char *s = line + nl + 1; s + wl <= eol; s++)
        if (strncasecmp(s, word, wl) == 0) return 1;
    line = eol + 1;
  }
  return 0;
}

/* Takes n bytes read from a watch: -1 when it must close (a failed request, a broken
 * framing, the end of the watch), 0 otherwise. */
static int feed(struct watch *w, const char *p, size_t n, double at) {
  if (w->state == W_HEAD) {
    /* The head is copied aside so that one split across reads is parsed in one piece. */
    if (!w->head && !(w->head = malloc(HEAD_MAX))) die("out of memory");
    ssize_t head_len = head_gather(w->head, &w->head_len, HEAD_MAX, p, n);
    if (head_len == 0) return 0;
    if (head_len < 0) {
      g.malformed++;
      return -1;
    }
    size_t used = (size_t)head_len - w->head_len;
    p += used, n -= used;
    const char *h = w->head;
    int status = head_len >= 12 && memcmp(h, "HTTP/1.", 7) == 0 ? atoi(h + 9) : -1;
    if (status != 200) return -1; /* counted as failed, as the JS fleet does */
    w->chunked = header_has(h, (size_t)head_len, "transfer-encoding", "chunked");
    if (w->chunked) chunked_start(&w->chunk);
    free(w->head);
    w->head = NULL;
    w->state = W_BODY;
    w->opened = 1;
    g.open++;
    g.opening--;
    open_next();
  }
  int r = walk_body(w, p, n, at);
  if (r < 0) g.malformed++;
  return r != 0 ? -1 : 0;
}

/* tls_read's on_bytes: nonzero once the watch is closed. */
static int on_bytes(struct tls_sock *s, const char *p, size_t n) {
  struct watch *w = (struct watch *)s;
  g.reads++;
  /* the arrival time only where it is noted: a clock read per read is cheap, but not free */
  double at = w->sampled ? (double)now_ns() / 1e6 : 0;
  if (feed(w, p, n, at) < 0) {
    close_watch(w);
    return 1;
  }
  return 0;
}

static void do_read(struct watch *w) {
  if (tls_read(&w->sock, on_bytes) < 0) close_watch(w); /* closed by the server, or broken */
}

static void do_write(struct watch *w) {
  int r = tls_write(&w->sock, g.req, g.req_len);
  if (r > 0) {
    w->state = W_HEAD;
    w->head_len = 0;
  } else if (r < 0) {
    close_watch(w);
  }
}

static void do_handshake(struct watch *w) {
  int r = tls_handshake(&w->sock);
  if (r > 0) {
    w->state = W_WRITING;
    do_write(w);
    return;
  }
  if (r == 0) return;
  warn_tls("TLS handshake failed");
  close_watch(w);
}

static void on_event(struct watch *w) {
  switch (w->state) {
  case W_CONNECTING: {
    int err = tls_connect_error(&w->sock);
    if (err) {
      fprintf(stderr, "watchfleet: connect: %s\n", strerror(err));
      close_watch(w);
      return;
    }
    w->state = W_HANDSHAKE;
    do_handshake(w);
    return;
  }
  case W_HANDSHAKE:
    do_handshake(w);
    return;
  case W_WRITING:
    do_write(w);
    return;
  case W_HEAD:
  case W_BODY:
    do_read(w);
    return;
  case W_IDLE:
  case W_DEAD:
    return;
  }
}

/* Writes one whole message and flushes it: the parent reads line by line. */
static void flush_out(void) {
  if (fflush(stdout) != 0) exit(0); /* the parent is gone */
}

static void write_status(uint64_t now) {
  if (g.events == g.s_events && g.reads == g.s_reads && g.open == g.s_open && g.failed == g.s_failed && g.malformed == g.s_malformed) return;
  printf("s %llu %d %d %d %llu\n", (unsigned long long)g.events, g.open, g.failed, g.malformed, (unsigned long long)g.reads);
  flush_out();
  g.s_events = g.events, g.s_reads = g.reads, g.s_open = g.open, g.s_failed = g.failed, g.s_malformed = g.malformed;
  g.s_at = now;
}

static void command(const char *line) {
  /* the counts first: whatever the answer covers, the parent's counts cover too */
  write_status(now_ns());
  if (line[0] == 't') {
    fputs("a", stdout);
    for (size_t i = 0; i < g.narr; i += 2) printf(" %llu %.3f", (unsigned long long)g.arr[i], g.arr[i + 1]);
    fputs("\n", stdout);
    g.narr = 0;
  } else if (line[0] == 'w') {
    fputs("w", stdout);
    for (int i = 0; i < g.n; i++) printf(" %llu", (unsigned long long)g.w[i].events);
    fputs("\n", stdout);
  }
  flush_out();
}

/* Reads the parent's commands; false at the end of input (close everything). */
static int read_commands(void) {
  static char buf[4096];
  static size_t used;
  ssize_t n = read(0, buf + used, sizeof buf - 1 - used);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
  if (n <= 0) return 0;
  used += (size_t)n;
  char *start = buf;
  for (char *nl; (nl = memchr(start, '\n', used - (size_t)(start - buf)));) {
    *nl = 0;
    command(start);
    start = nl + 1;
  }
  used -= (size_t)(start - buf);
  memmove(buf, start, used);
  if (used == sizeof buf - 1) used = 0; /* a line that long is no command */
  return 1;
}

static void usage(void) {
  fprintf(stderr, "usage: watchfleet --host H --port P --watches N --request FILE [--sample-every K] [--cert PEM --key PEM]\n");
  exit(2);
}

int main(int argc, char **argv) {
  net.host = "127.0.0.1";
  const char *request_file = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) usage();
    const char *v = argv[++i];
    if (net_option(a, v)) continue;
    if (!strcmp(a, "--watches")) g.n = atoi(v);
    else if (!strcmp(a, "--request")) request_file = v;
    else if (!strcmp(a, "--sample-every")) g.sample_every = atoi(v);
    else usage();
  }
  if (!net.port || g.n < 0 || !request_file || !net.cert != !net.key) usage();
  g.req = read_file(request_file, &g.req_len);
  if (!g.req) die("cannot read the request file");
  /* a socket per watch: as many descriptors as the hard limit allows */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  static char outbuf[1 << 20];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

  /* A quarter of loadgen's read-ahead buffer: 10,000 watches hold one each. */
  net_init(16 * 1024);
  /* every later watch resumes the first session (new_session) */
  SSL_CTX_set_session_cache_mode(net.ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(net.ctx, new_session);

  /* the parent's commands: data.ptr NULL tells them from the watches */
  struct epoll_event in = {.events = EPOLLIN, .data.ptr = NULL};
  if (epoll_ctl(net.ep, EPOLL_CTL_ADD, 0, &in) < 0) die("epoll_ctl stdin");
  g.w = calloc((size_t)(g.n ? g.n : 1), sizeof *g.w);
  if (!g.w) die("out of memory");
  for (int i = 0; i < g.n; i++) {
    g.w[i].sock.fd = -1;
    /* every sample-every-th watch in opening order: spread over the server's fan-out */
    g.w[i].sampled = g.sample_every > 0 && i % g.sample_every == 0;
  }
  open_next();

  struct epoll_event evs[256];
  for (;;) {
    if (!g.ready && g.opening == 0 && g.next == g.n) {
      write_status(now_ns());
      printf("r %d %d\n", g.open, g.failed);
      flush_out();
      g.ready = 1;
    }
    /* a changed count goes out within STATUS_EVERY_NS; none changed, sleep until input */
    uint64_t now = now_ns();
    int changed = g.events != g.s_events || g.reads != g.s_reads || g.open != g.s_open || g.failed != g.s_failed || g.malformed != g.s_malformed;
    int timeout = -1;
    if (changed) {
      uint64_t due = g.s_at + STATUS_EVERY_NS;
      timeout = now >= due ? 0 : (int)((due - now + 999999) / 1000000);
    }
    int n = epoll_wait(net.ep, evs, 256, timeout);
    if (n < 0 && errno != EINTR) die("epoll_wait");
    for (int i = 0; i < n; i++) {
      if (evs[i].data.ptr == NULL) {
        if (!read_commands()) goto done;
      } else {
        on_event(evs[i].data.ptr);
      }
    }
    now = now_ns();
    if (now >= g.s_at + STATUS_EVERY_NS) write_status(now);
  }
done:
  for (int i = 0; i < g.n; i++)
    if (g.w[i].sock.fd >= 0) tls_close(&g.w[i].sock);
  SSL_CTX_free(net.ctx);
  return 0;
}
