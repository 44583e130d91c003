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
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* as loadgen.c: Go's TLS 1.3 suite order (client-go's), AES-128-GCM first */
#define GO_TLS13_CIPHERS "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

#define READ_BUF (256 * 1024)
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

enum chunk_state { K_SIZE, K_EXT, K_DATA, K_DATA_CR, K_DATA_LF, K_TRAILER, K_IDENTITY };

struct watch {
  int fd;
  SSL *ssl;
  enum wstate state;
  uint32_t interest;
  int sampled;
  int opened; /* counted in g.open */
  /* the response head, while it is read (allocated only then: 10,000 watches) */
  char *head;
  size_t head_len;
  /* the chunked coding */
  enum chunk_state cstate;
  uint64_t csize, remaining;
  int cdigits;
  int line_len;
  /* the last data byte seen: an event ends where a newline follows a closing brace, and the
   * two may come in different reads or chunks */
  char last;
  uint64_t events;
  /* a sampled watch's current event line (up to EVENT_LINE_MAX bytes of it) */
  char *line;
  size_t line_used;
};

static struct {
  const char *host;
  int port;
  int n;
  int sample_every;
  const char *cert, *key;
  char *req;
  size_t req_len;
  struct sockaddr_storage addr;
  socklen_t addr_len;
  int sni;
  SSL_CTX *ctx;
  /* the first TLS session the server gave: every later watch resumes it (as the JS fleet
   * does), sparing the server a full handshake per watch */
  SSL_SESSION *session;
  int ep;
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

static char rbuf[READ_BUF];

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "watchfleet: %s\n", what);
  ERR_print_errors_fp(stderr);
  exit(1);
}

static void set_interest(struct watch *w, uint32_t ev) {
  if (w->interest == ev) return;
  struct epoll_event e = {.events = ev, .data.ptr = w};
  if (epoll_ctl(g.ep, EPOLL_CTL_MOD, w->fd, &e) < 0) die("epoll_ctl");
  w->interest = ev;
}

/* After an SSL call that did not finish: waits for what OpenSSL asks for. False when the
 * connection is broken. */
static int await_tls(struct watch *w, int ret) {
  switch (SSL_get_error(w->ssl, ret)) {
  case SSL_ERROR_WANT_READ:
    set_interest(w, EPOLLIN);
    return 1;
  case SSL_ERROR_WANT_WRITE:
    set_interest(w, EPOLLOUT);
    return 1;
  default:
    return 0;
  }
}

static void open_next(void);

/* Closes a watch for good (the JS fleet does not reopen either): an open one leaves the open
 * count, one that never got its 200 counts as failed. */
static void close_watch(struct watch *w) {
  if (w->state == W_DEAD || w->state == W_IDLE) return;
  int was_opening = w->state != W_BODY;
  if (w->ssl) SSL_free(w->ssl); /* no close_notify: the FIN tells the server */
  w->ssl = NULL;
  if (w->fd >= 0) close(w->fd); /* also leaves the epoll set */
  w->fd = -1;
  free(w->head);
  w->head = NULL;
  free(w->line);
  w->line = NULL;
  if (w->opened) g.open--;
  else g.failed++;
  w->opened = 0;
  w->state = W_DEAD;
  /* SSL_get_error reads the thread's error queue: what one watch left there must not be
   * taken for another's */
  ERR_clear_error();
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
  w->fd = socket(g.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  w->state = W_CONNECTING;
  if (w->fd < 0) {
    fprintf(stderr, "watchfleet: socket: %s\n", strerror(errno));
    close_watch(w);
    return;
  }
  /* an event should leave the server at once; this side sends only the request, but Go's
   * net package sets it on every connection */
  int one = 1;
  setsockopt(w->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(w->fd, (struct sockaddr *)&g.addr, g.addr_len) < 0 && errno != EINPROGRESS) {
    fprintf(stderr, "watchfleet: connect: %s\n", strerror(errno));
    close_watch(w);
    return;
  }
  w->ssl = SSL_new(g.ctx);
  if (!w->ssl || !SSL_set_fd(w->ssl, w->fd)) die("SSL_new");
  SSL_set_connect_state(w->ssl);
  if (g.sni) SSL_set_tlsext_host_name(w->ssl, g.host);
  if (g.session) SSL_set_session(w->ssl, g.session);
  w->interest = EPOLLOUT; /* writable: the TCP connect finished (or failed: SO_ERROR) */
  struct epoll_event e = {.events = EPOLLOUT, .data.ptr = w};
  if (epoll_ctl(g.ep, EPOLL_CTL_ADD, w->fd, &e) < 0) die("epoll_ctl");
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

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
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

/* Walks the chunked coding over p[0, n), handing chunk data to on_data: 1 when the last
 * chunk and its trailers are through (the server ended the watch), 0 when more is to come,
 * -1 on a broken framing. */
static int walk_chunks(struct watch *w, const char *p, size_t n, double at) {
  while (n > 0) {
    switch (w->cstate) {
    case K_IDENTITY: /* no chunked coding: data up to the close */
      on_data(w, p, n, at);
      return 0;
    case K_SIZE: {
      int v = hexval(*p);
      if (v >= 0) {
        if (w->csize >> 56) return -1;
        w->csize = w->csize * 16 + (uint64_t)v;
        w->cdigits++;
        p++, n--;
      } else {
        if (!w->cdigits) return -1;
        w->cstate = K_EXT; /* an extension or the line's CR: skipped up to the LF */
      }
      break;
    }
    case K_EXT: {
      const char *lf = memchr(p, '\n', n);
      if (!lf) return 0;
      n -= (size_t)(lf + 1 - p);
      p = lf + 1;
      if (w->csize == 0) {
        w->cstate = K_TRAILER;
        w->line_len = 0;
      } else {
        w->remaining = w->csize;
        w->cstate = K_DATA;
      }
      break;
    }
    case K_DATA: {
      size_t take = n < w->remaining ? n : (size_t)w->remaining;
      on_data(w, p, take, at);
      p += take, n -= take;
      w->remaining -= take;
      if (w->remaining == 0) w->cstate = K_DATA_CR;
      break;
    }
    case K_DATA_CR:
      if (*p != '\r') return -1;
      w->cstate = K_DATA_LF;
      p++, n--;
      break;
    case K_DATA_LF:
      if (*p != '\n') return -1;
      w->cstate = K_SIZE, w->csize = 0, w->cdigits = 0;
      p++, n--;
      break;
    case K_TRAILER: {
      char ch = *p++;
      n--;
      if (ch == '\n') {
        if (w->line_len == 0) return 1;
        w->line_len = 0;
      } else if (ch != '\r') {
        w->line_len++;
      }
      break;
    }
    }
  }
  return 0;
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
    size_t take = n < HEAD_MAX - w->head_len ? n : HEAD_MAX - w->head_len;
    memcpy(w->head + w->head_len, p, take);
    size_t from = w->head_len > 3 ? w->head_len - 3 : 0;
    const char *end = memmem(w->head + from, w->head_len + take - from, "\r\n\r\n", 4);
    if (!end) {
      w->head_len += take;
      if (w->head_len < HEAD_MAX) return 0;
      g.malformed++;
      return -1;
    }
    size_t head_len = (size_t)(end - w->head) + 4;
    size_t used = head_len - w->head_len;
    p += used, n -= used;
    const char *h = w->head;
    int status = head_len >= 12 && memcmp(h, "HTTP/1.", 7) == 0 ? atoi(h + 9) : -1;
    if (status != 200) return -1; /* counted as failed, as the JS fleet does */
    w->cstate = header_has(h, head_len, "transfer-encoding", "chunked") ? K_SIZE : K_IDENTITY;
    free(w->head);
    w->head = NULL;
    w->state = W_BODY;
    w->opened = 1;
    g.open++;
    g.opening--;
    open_next();
  }
  int r = walk_chunks(w, p, n, at);
  if (r < 0) g.malformed++;
  return r != 0 ? -1 : 0;
}

/* Reads what the socket has. Level-triggered epoll: read until OpenSSL holds nothing more
 * (it reads ahead, and what it holds is invisible to epoll), not until EAGAIN, which would
 * cost one more read() per wake-up. */
static void do_read(struct watch *w) {
  for (;;) {
    int n = SSL_read(w->ssl, rbuf, READ_BUF);
    if (n > 0) {
      g.reads++;
      /* the arrival time only where it is noted: a clock read per read is cheap, but not free */
      double at = w->sampled ? (double)now_ns() / 1e6 : 0;
      if (feed(w, rbuf, (size_t)n, at) < 0) {
        close_watch(w);
        return;
      }
      if (!SSL_has_pending(w->ssl)) return;
      continue;
    }
    if (await_tls(w, n)) return;
    close_watch(w); /* closed by the server, or broken */
    return;
  }
}

static void do_write(struct watch *w) {
  /* SSL_write sends the whole request or reports WANT_*; the retry passes the same buffer */
  int n = SSL_write(w->ssl, g.req, (int)g.req_len);
  if (n > 0) {
    w->state = W_HEAD;
    w->head_len = 0;
    set_interest(w, EPOLLIN);
    return;
  }
  if (!await_tls(w, n)) close_watch(w);
}

static void do_handshake(struct watch *w) {
  int r = SSL_connect(w->ssl);
  if (r == 1) {
    w->state = W_WRITING;
    do_write(w);
    return;
  }
  if (await_tls(w, r)) return;
  fprintf(stderr, "watchfleet: TLS handshake failed\n");
  ERR_print_errors_fp(stderr);
  close_watch(w);
}

static void on_event(struct watch *w) {
  switch (w->state) {
  case W_CONNECTING: {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
      fprintf(stderr, "watchfleet: connect: %s\n", strerror(err ? err : errno));
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

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct stat st;
  if (fstat(fileno(f), &st) < 0 || st.st_size <= 0) {
    fclose(f);
    return NULL;
  }
  char *b = malloc((size_t)st.st_size);
  if (!b || fread(b, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
    fclose(f);
    free(b);
    return NULL;
  }
  fclose(f);
  *len = (size_t)st.st_size;
  return b;
}

static void usage(void) {
  fprintf(stderr, "usage: watchfleet --host H --port P --watches N --request FILE [--sample-every K] [--cert PEM --key PEM]\n");
  exit(2);
}

int main(int argc, char **argv) {
  g.host = "127.0.0.1";
  const char *request_file = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) usage();
    const char *v = argv[++i];
    if (!strcmp(a, "--host")) g.host = v;
    else if (!strcmp(a, "--port")) g.port = atoi(v);
    else if (!strcmp(a, "--watches")) g.n = atoi(v);
    else if (!strcmp(a, "--request")) request_file = v;
    else if (!strcmp(a, "--sample-every")) g.sample_every = atoi(v);
    else if (!strcmp(a, "--cert")) g.cert = v;
    else if (!strcmp(a, "--key")) g.key = v;
    else usage();
  }
  if (!g.port || g.n < 0 || !request_file || !g.cert != !g.key) usage();
  g.req = read_file(request_file, &g.req_len);
  if (!g.req) die("cannot read the request file");
  signal(SIGPIPE, SIG_IGN);
  /* a socket per watch: as many descriptors as the hard limit allows */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  static char outbuf[1 << 20];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
  char port[16];
  snprintf(port, sizeof port, "%d", g.port);
  if (getaddrinfo(g.host, port, &hints, &ai) != 0) die("cannot resolve the host");
  memcpy(&g.addr, ai->ai_addr, ai->ai_addrlen);
  g.addr_len = ai->ai_addrlen;
  freeaddrinfo(ai);
  unsigned char tmp[sizeof(struct in6_addr)];
  g.sni = inet_pton(AF_INET, g.host, tmp) != 1 && inet_pton(AF_INET6, g.host, tmp) != 1;

  g.ctx = SSL_CTX_new(TLS_client_method());
  if (!g.ctx) die("SSL_CTX_new");
  SSL_CTX_set_min_proto_version(g.ctx, TLS1_2_VERSION);
  if (!SSL_CTX_set_ciphersuites(g.ctx, GO_TLS13_CIPHERS)) die("SSL_CTX_set_ciphersuites");
  SSL_CTX_set_verify(g.ctx, SSL_VERIFY_NONE, NULL); /* the bench measures, it does not trust */
  /* Buffers kept for each connection's life (no free and malloc around every read), and
   * read ahead (one read() per wake-up rather than one per record header and body). A
   * quarter of loadgen's read buffer: 10,000 watches hold one each. */
  SSL_CTX_clear_mode(g.ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_read_ahead(g.ctx, 1);
  SSL_CTX_set_default_read_buffer_len(g.ctx, 16 * 1024);
  SSL_CTX_set_session_cache_mode(g.ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(g.ctx, new_session);
  if (g.cert) {
    if (SSL_CTX_use_certificate_chain_file(g.ctx, g.cert) != 1) die("cannot load the client certificate");
    if (SSL_CTX_use_PrivateKey_file(g.ctx, g.key, SSL_FILETYPE_PEM) != 1) die("cannot load the client key");
    if (SSL_CTX_check_private_key(g.ctx) != 1) die("the client key does not match the certificate");
  }

  g.ep = epoll_create1(EPOLL_CLOEXEC);
  if (g.ep < 0) die("epoll_create1");
  /* the parent's commands: data.ptr NULL tells them from the watches */
  struct epoll_event in = {.events = EPOLLIN, .data.ptr = NULL};
  if (epoll_ctl(g.ep, EPOLL_CTL_ADD, 0, &in) < 0) die("epoll_ctl stdin");
  g.w = calloc((size_t)(g.n ? g.n : 1), sizeof *g.w);
  if (!g.w) die("out of memory");
  for (int i = 0; i < g.n; i++) {
    g.w[i].fd = -1;
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
    int n = epoll_wait(g.ep, evs, 256, timeout);
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
    if (g.w[i].fd >= 0) {
      SSL_free(g.w[i].ssl);
      close(g.w[i].fd);
    }
  SSL_CTX_free(g.ctx);
  return 0;
}
