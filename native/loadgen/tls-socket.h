/*
 * tls-socket.h: what the native bench tools (loadgen.c, watchfleet.c) share: a non-blocking
 * TLS client connection driven by level-triggered epoll, and the one client context every
 * connection of a tool uses (the server's address, the SSL_CTX, the epoll set).
 *
 * Each tool is one C file built on its own (bench/native-load.ts: cc -O2 -o BIN TOOL.c -lssl
 * -lcrypto), so this header holds static functions and the tool's one `net`; it is included
 * once per program. Define TOOL_NAME (the prefix of diagnostics) and _GNU_SOURCE before it.
 *
 * A tool's connection struct embeds a struct tls_sock as its FIRST member: the epoll data of
 * a socket is the tls_sock's address, which is then the connection's too, so the tool's event
 * loop takes evs[i].data.ptr as its own struct.
 *
 * Thread ownership: one thread owns everything here (each tool runs in a single thread).
 */
#ifndef TLS_SOCKET_H
#define TLS_SOCKET_H

#ifndef TOOL_NAME
#error "define TOOL_NAME before including tls-socket.h"
#endif

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
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* TLS 1.3 suites in the order Go's crypto/tls offers them on AES hardware (kubectl,
 * client-go), as bench/lib.ts GO_TLS13_CIPHERS: AES-128-GCM costs both sides less per byte. */
#define GO_TLS13_CIPHERS "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

/* One SSL_read's buffer, shared by every connection (one thread, one read at a time). */
#define READ_BUF (256 * 1024)

/* One connection's socket, its TLS state and the epoll events registered for it. */
struct tls_sock {
  int fd; /* -1 while closed */
  SSL *ssl;
  uint32_t interest;
};

/* The tool's client side, the same for all its connections. */
static struct {
  const char *host;
  int port;
  const char *cert, *key; /* a client certificate, or both NULL */
  struct sockaddr_storage addr;
  socklen_t addr_len;
  int sni; /* the host is a name, not an address literal: send it as SNI, as node and Go do */
  SSL_CTX *ctx;
  int ep;
} net;

static char rbuf[READ_BUF];

/* Takes a command-line option every tool has (--host, --port, --cert, --key) with its value:
 * false when a is none of them. */
static int net_option(const char *a, const char *v) {
  if (!strcmp(a, "--host")) net.host = v;
  else if (!strcmp(a, "--port")) net.port = atoi(v);
  else if (!strcmp(a, "--cert")) net.cert = v;
  else if (!strcmp(a, "--key")) net.key = v;
  else return 0;
  return 1;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A diagnostic on stderr, with what OpenSSL's error queue says about it. */
static void warn_tls(const char *what) {
  fprintf(stderr, TOOL_NAME ": %s\n", what);
  ERR_print_errors_fp(stderr);
}

static void die(const char *what) {
  warn_tls(what);
  exit(1);
}

/* A whole file in a malloc'd buffer (the request bytes); NULL when unreadable or empty. */
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

/*
 * Sets up `net` from net.host, net.port, net.cert and net.key: resolves the host, builds the
 * client SSL_CTX and the epoll set. read_buffer_len: OpenSSL's read-ahead buffer per
 * connection. Dies on any failure.
 */
static void net_init(int read_buffer_len) {
  /* a write to a connection the server closed must be an error, not the end of us */
  signal(SIGPIPE, SIG_IGN);

  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
  char port[16];
  snprintf(port, sizeof port, "%d", net.port);
  if (getaddrinfo(net.host, port, &hints, &ai) != 0) die("cannot resolve the host");
  memcpy(&net.addr, ai->ai_addr, ai->ai_addrlen);
  net.addr_len = ai->ai_addrlen;
  freeaddrinfo(ai);
  unsigned char tmp[sizeof(struct in6_addr)];
  net.sni = inet_pton(AF_INET, net.host, tmp) != 1 && inet_pton(AF_INET6, net.host, tmp) != 1;

  net.ctx = SSL_CTX_new(TLS_client_method());
  if (!net.ctx) die("SSL_CTX_new");
  SSL_CTX_set_min_proto_version(net.ctx, TLS1_2_VERSION);
  if (!SSL_CTX_set_ciphersuites(net.ctx, GO_TLS13_CIPHERS)) die("SSL_CTX_set_ciphersuites");
  /* the bench measures, it does not trust: no certificate verification */
  SSL_CTX_set_verify(net.ctx, SSL_VERIFY_NONE, NULL);
  /* Keep each connection's record buffers for its whole life: freeing and allocating them
   * around every read is CPU the server would be short of. */
  SSL_CTX_clear_mode(net.ctx, SSL_MODE_RELEASE_BUFFERS);
  /* Read ahead: OpenSSL fills its buffer with one read() instead of one for the record
   * header and one for its body. */
  SSL_CTX_set_read_ahead(net.ctx, 1);
  SSL_CTX_set_default_read_buffer_len(net.ctx, (size_t)read_buffer_len);
  if (net.cert) {
    if (SSL_CTX_use_certificate_chain_file(net.ctx, net.cert) != 1) die("cannot load the client certificate");
    if (SSL_CTX_use_PrivateKey_file(net.ctx, net.key, SSL_FILETYPE_PEM) != 1) die("cannot load the client key");
    if (SSL_CTX_check_private_key(net.ctx) != 1) die("the client key does not match the certificate");
  }

  net.ep = epoll_create1(EPOLL_CLOEXEC);
  if (net.ep < 0) die("epoll_create1");
}

static void set_interest(struct tls_sock *s, uint32_t ev) {
  if (s->interest == ev) return;
  struct epoll_event e = {.events = ev, .data.ptr = s};
  if (epoll_ctl(net.ep, EPOLL_CTL_MOD, s->fd, &e) < 0) die("epoll_ctl");
  s->interest = ev;
}

/* After an SSL call that did not finish: waits for what OpenSSL asks for. False when the
 * error is not a WANT_* (the connection is broken or closed). */
static int await_tls(struct tls_sock *s, int ret) {
  switch (SSL_get_error(s->ssl, ret)) {
  case SSL_ERROR_WANT_READ:
    set_interest(s, EPOLLIN);
    return 1;
  case SSL_ERROR_WANT_WRITE:
    set_interest(s, EPOLLOUT);
    return 1;
  default:
    return 0;
  }
}

/*
 * Starts a connection to net.addr: a non-blocking connect, its SSL ready for the client
 * handshake (SNI, the session to resume when not NULL), and the socket in the epoll set
 * waiting to be writable (the connect finished, or failed: tls_connect_error tells).
 * NULL when started; else the step that failed ("socket", "connect") with errno set and
 * nothing left open.
 */
static const char *tls_open(struct tls_sock *s, SSL_SESSION *resume) {
  s->fd = socket(net.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd < 0) return "socket";
  /* Requests go out in one write and events should leave at once: Nagle would only hold
   * back a rare second segment. Go's net package sets it on every connection too. */
  int one = 1;
  setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(s->fd, (struct sockaddr *)&net.addr, net.addr_len) < 0 && errno != EINPROGRESS) {
    int err = errno;
    close(s->fd);
    s->fd = -1;
    errno = err;
    return "connect";
  }
  s->ssl = SSL_new(net.ctx);
  if (!s->ssl || !SSL_set_fd(s->ssl, s->fd)) die("SSL_new");
  SSL_set_connect_state(s->ssl);
  if (net.sni) SSL_set_tlsext_host_name(s->ssl, net.host);
  if (resume) SSL_set_session(s->ssl, resume);
  s->interest = EPOLLOUT;
  struct epoll_event e = {.events = EPOLLOUT, .data.ptr = s};
  if (epoll_ctl(net.ep, EPOLL_CTL_ADD, s->fd, &e) < 0) die("epoll_ctl");
  return NULL;
}

/* Once the socket of a connect in progress is writable: 0 when the connect succeeded, else
 * its error number. */
static int tls_connect_error(struct tls_sock *s) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return errno;
  return err;
}

/* One step of the client handshake: 1 when done, 0 when it waits for the socket (the epoll
 * interest is set), -1 when it failed. */
static int tls_handshake(struct tls_sock *s) {
  int r = SSL_connect(s->ssl);
  if (r == 1) return 1;
  return await_tls(s, r) ? 0 : -1;
}

/* Writes the whole of buf: 1 when sent (the socket then waits for input), 0 when it waits for
 * the socket, -1 when the connection is broken. Without SSL_MODE_ENABLE_PARTIAL_WRITE,
 * SSL_write sends all or reports WANT_*; the retry must pass the same buffer and length, as
 * OpenSSL requires. */
static int tls_write(struct tls_sock *s, const char *buf, size_t len) {
  int n = SSL_write(s->ssl, buf, (int)len);
  if (n > 0) {
    set_interest(s, EPOLLIN);
    return 1;
  }
  return await_tls(s, n) ? 0 : -1;
}

/*
 * Reads what the socket has into rbuf, handing each piece to on_bytes, which returns nonzero
 * when it has taken the connection over (closed it, or finished with it for now): the reads
 * stop there and tls_read returns 1. Else 0 when OpenSSL waits for the socket, -1 when the
 * peer closed (close_notify or EOF) or the connection broke. Level-triggered epoll: reads
 * until OpenSSL holds nothing more (SSL_has_pending: it reads ahead, and what it holds is
 * invisible to epoll), not until EAGAIN, which would cost one more read() per wake-up.
 */
static int tls_read(struct tls_sock *s, int (*on_bytes)(struct tls_sock *s, const char *p, size_t n)) {
  for (;;) {
    int n = SSL_read(s->ssl, rbuf, READ_BUF);
    if (n > 0) {
      if (on_bytes(s, rbuf, (size_t)n)) return 1;
      if (!SSL_has_pending(s->ssl)) return 0;
      continue;
    }
    /* WANT_WRITE: e.g. a key update to answer, with the socket full */
    return await_tls(s, n) ? 0 : -1;
  }
}

/* Frees the SSL (no close_notify: the peer learns of the close from the FIN) and closes the
 * socket, which also leaves the epoll set. */
static void tls_close(struct tls_sock *s) {
  if (s->ssl) {
    SSL_free(s->ssl);
    s->ssl = NULL;
  }
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  /* SSL_get_error reads the thread's error queue: what one connection left there must not
   * be taken for another's. */
  ERR_clear_error();
}

#endif
