/*
 * http-framing.h: the HTTP/1.1 response framing both native bench tools (loadgen.c,
 * watchfleet.c) undo: a response head gathered across reads, and the chunked coding
 * (RFC 9112 section 7.1) walked a piece of chunk data at a time. Static functions, included
 * once per program (each tool is one C file, built on its own by bench/native-load.ts);
 * define _GNU_SOURCE (memmem) before it.
 *
 * Thread ownership: none of its own; the state is in the caller's connection structs.
 */
#ifndef HTTP_FRAMING_H
#define HTTP_FRAMING_H

#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/*
 * Gathers a response head, which may come split across reads (even across TLS records), in
 * head[0, max), *len bytes of it already there: the whole head's length (through its blank
 * line) once that is in, the bytes of p it took being that length less *len, which is left
 * as it was; 0 when more is needed (*len grown by all of p); -1 when max bytes hold no end.
 */
static ssize_t head_gather(char *head, size_t *len, size_t max, const char *p, size_t n) {
  size_t take = n < max - *len ? n : max - *len;
  memcpy(head + *len, p, take);
  size_t from = *len > 3 ? *len - 3 : 0;
  const char *end = memmem(head + from, *len + take - from, "\r\n\r\n", 4);
  if (!end) {
    *len += take;
    return *len == max ? -1 : 0;
  }
  return (ssize_t)(end - head) + 4;
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

enum chunk_state { K_SIZE, K_EXT, K_DATA, K_DATA_CR, K_DATA_LF, K_TRAILER };

/* Where a body in the chunked coding is: chunked_start() before its first byte. */
struct chunked {
  enum chunk_state state;
  uint64_t size;      /* the size line's value so far */
  int digits;         /* its hex digits so far */
  uint64_t remaining; /* the current chunk's data bytes still to come */
  int line_len;       /* the current trailer line's length so far */
};

static void chunked_start(struct chunked *k) {
  k->state = K_SIZE;
  k->size = 0;
  k->digits = 0;
}

/* What chunked_next found. */
enum chunked_step {
  CH_BROKEN = -1, /* not the chunked coding */
  CH_MORE = 0,    /* every byte is taken, the body goes on */
  CH_DATA = 1,    /* *data, *dlen: a piece of chunk data (the bytes after it are not looked at yet) */
  CH_END = 2,     /* the last chunk and its trailers are through; *pp, *pn are past them */
};

/*
 * Walks the chunked coding over the bytes at *pp (*pn of them), moving them on past what it
 * takes, up to the next piece of chunk data or the end of the body. Chunk extensions and
 * trailers are skipped. bare_lf: a lone LF after a chunk's data is taken for its CRLF (the
 * leniency RFC 9112 allows for line ends), rather than as a broken coding.
 */
static enum chunked_step chunked_next(struct chunked *k, const char **pp, size_t *pn, const char **data, size_t *dlen, int bare_lf) {
  const char *p = *pp;
  size_t n = *pn;
  enum chunked_step r = CH_MORE;
  while (n > 0 && r == CH_MORE) {
    switch (k->state) {
    case K_SIZE: {
      int v = hexval(*p);
      if (v >= 0) {
        if (k->size >> 56) return CH_BROKEN;
        k->size = k->size * 16 + (uint64_t)v;
        k->digits++;
        p++, n--;
      } else {
        if (!k->digits) return CH_BROKEN;
        k->state = K_EXT; /* a chunk extension or the line's CR: skipped up to the LF */
      }
      break;
    }
    case K_EXT: {
      const char *lf = memchr(p, '\n', n);
      if (!lf) {
        p += n, n = 0;
        break;
      }
      n -= (size_t)(lf + 1 - p);
      p = lf + 1;
      if (k->size == 0) {
        k->state = K_TRAILER;
        k->line_len = 0;
      } else {
        k->remaining = k->size;
        k->state = K_DATA;
      }
      break;
    }
    case K_DATA: {
      size_t take = n < k->remaining ? n : (size_t)k->remaining;
      *data = p, *dlen = take;
      p += take, n -= take;
      k->remaining -= take;
      if (k->remaining == 0) k->state = K_DATA_CR;
      r = CH_DATA;
      break;
    }
    case K_DATA_CR:
      if (*p == '\r') k->state = K_DATA_LF;
      else if (*p == '\n' && bare_lf) chunked_start(k);
      else return CH_BROKEN;
      p++, n--;
      break;
    case K_DATA_LF:
      if (*p != '\n') return CH_BROKEN;
      chunked_start(k);
      p++, n--;
      break;
    case K_TRAILER: {
      /* trailer lines up to an empty one */
      char ch = *p++;
      n--;
      if (ch == '\n') {
        if (k->line_len == 0) r = CH_END;
        k->line_len = 0;
      } else if (ch != '\r') {
        k->line_len++;
      }
      break;
    }
    }
  }
  *pp = p;
  *pn = n;
  return r;
}

#endif
