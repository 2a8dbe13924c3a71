/*
 * picomq_host.c - a small PicoMQ connector host for end-to-end tests,
 * benchmarks and the demo; buildscripts/build.sh ships it as dist/picomq-host.
 *
 * It loads sink plugin libraries through the C ABI in include/picomq_sink.h,
 * the way the real (non-Go) connector runtime does, and drives them from
 * framed requests on stdin. Responses and the plugins' log lines go out as
 * frames on stdout. shared/hostclient is its Go client; PROTOCOL.md beside
 * this file says the same as this comment at more length.
 *
 *   usage: picomq_host [-w workers] [-q quarantine_bytes]
 *     -w  worker threads that call into plugins (default 4, at most 256)
 *     -q  bytes of lent, poisoned memory kept allocated before it is freed
 *         (default 32 MiB; 0 frees at once)
 *
 * FRAMING
 *   Every message in either direction is a frame: a u32 body length, then the
 *   body. Integers are little-endian. "bytes" is a u32 length and that many
 *   bytes. "?bytes" is a u8 (0 absent, 1 present) then, if present, bytes.
 *
 * REQUESTS (stdin): u64 id, u32 worker, u8 op, then the op's fields
 *   1 LOAD     bytes path, u32 abi_major, u32 abi_minor, u32 table_size
 *              (0: sizeof(picomq_sink_api))
 *   2 DESCRIBE u32 lib, u32 out_cap
 *   3 OPEN     u32 lib, u64 log_ctx, u8 flags (1: pass log = NULL),
 *              u32 err_cap, bytes config
 *   4 CONSUME  u32 lib, u64 instance, u32 err_cap, u8 flags (1: pass a
 *              reject callback, ABI 1.1; 2: pass a 1.0 host's batch,
 *              struct_size PICOMQ_BATCH_SIZE_1_0; 4: pass a 1.2 host's
 *              batch, PICOMQ_BATCH_SIZE_1_2; 8: pass a 1.3 host's batch,
 *              PICOMQ_BATCH_SIZE_1_3; 16: pass a 1.4 host's batch,
 *              PICOMQ_BATCH_SIZE_1_4; 32: pass every empty byte string
 *              and array as a non-NULL pointer that is no address, as a
 *              Rust host passes an empty slice), u32 attempt, u32 partition,
 *              bytes topic, bytes schema, ?bytes value_schema (ABI 1.3;
 *              not passed with flag 2 or 4), ?redrive (ABI 1.4: bytes
 *              topic, u32 partition, u32 n, n * u64 offset, n == count;
 *              not passed with flag 2, 4 or 8), u64 range_last, u8
 *              has_follows, u64 follows (ABI 1.5; passed only in a
 *              full-size batch), u32 count, then
 *              count records: u64 offset, i64 timestamp_ms, ?bytes key,
 *              u32 header_count, header_count * (bytes key, bytes value),
 *              bytes payload
 *   5 METRICS  u32 lib, u64 instance, u32 out_cap
 *   6 CLOSE    u32 lib, u64 instance, u32 err_cap
 *   7 SETENV   bytes name, ?bytes value: setenv(name, value, 1), or
 *              unsetenv(name) when value is absent. The way a real host
 *              injects secrets after it started; the caller keeps it from
 *              running while another worker is inside open.
 *   The request runs on worker thread `worker`. Each worker runs its requests
 *   in arrival order; different workers run at the same time, so responses
 *   can come back in any order and are matched by id.
 *
 * OUTPUT (stdout): u8 kind, then
 *   1 HELLO    u32 protocol version (5), u32 workers, u32 abi_major,
 *              u32 abi_minor. Always the first frame.
 *   2 RESPONSE u64 id, i32 status, u64 value, bytes text, u32 nrej, then
 *              nrej * (u64 index, i32 reason, bytes message): the records
 *              a consume that returned OK rejected (0 for other ops)
 *   3 LOG      u64 log_ctx, u32 lib, i32 level, u8 flags, bytes message
 *              flags: 1 late (log_ctx is not an open in progress or an open
 *              instance: the plugin logged after close returned), 2 the
 *              plugin passed msg == NULL.
 *
 *   status is a picomq_status, or -1 HOST_ERROR (the host refused or could
 *   not do the request: dlopen failed, unknown library or worker, malformed
 *   request), or -2 CONTRACT (the plugin broke the header's contract; text
 *   says how). value: LOAD the library id (1, 2, ...; loading a library
 *   already loaded returns its id), OPEN the instance handle, DESCRIBE and
 *   METRICS the number of calls made (more than 1 after BUFFER_TOO_SMALL),
 *   otherwise 0. text: the error text, or the JSON of DESCRIBE and METRICS,
 *   or for LOAD {"abi_major":N,"abi_minor":N,"reused":B}.
 *
 * MEMORY
 *   Everything lent to a plugin (config, batch, records, headers, byte
 *   strings, error and output buffers, the init table) is heap memory of its
 *   own. Byte strings are not NUL-terminated and are never NULL except an
 *   absent key; empty record and header arrays are NULL (CONSUME flag 32
 *   aside). When the call
 *   returns, the host overwrites that memory with 0xA5 and keeps it in a
 *   quarantine (-q) before freeing it, so a plugin that kept a pointer reads
 *   0xA5 bytes rather than plausible data.
 *
 * EXIT
 *   On end of stdin the host finishes queued requests, closes every instance
 *   still open (one stderr line each), and exits 0. A malformed frame exits 3.
 */
#define _XOPEN_SOURCE 700

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "picomq_sink.h"

#define PROTOCOL_VERSION 5u
#define DEFAULT_WORKERS 4
#define MAX_WORKERS 256
#define MAX_LIBS 64
#define MAX_FRAME (1u << 30)
#define MAX_OUT_CAP ((size_t)64 << 20)
#define MAX_OUT_CALLS 16
#define MAX_TABLE_SIZE 4096u
#define REQ_HEADER 13 /* u64 id, u32 worker, u8 op */
#define POISON 0xA5
#define CANARY 0xCD
#define CANARY_LEN 16
#define QUARANTINE_SLOTS 256

#define STATUS_HOST_ERROR (-1)
#define STATUS_CONTRACT (-2)

enum {
  OP_LOAD = 1,
  OP_DESCRIBE,
  OP_OPEN,
  OP_CONSUME,
  OP_METRICS,
  OP_CLOSE,
  OP_SETENV
};
enum { KIND_HELLO = 1, KIND_RESPONSE = 2, KIND_LOG = 3 };
enum { LOG_LATE = 1, LOG_NULL_MSG = 2 };
enum { OPEN_NO_LOG = 1 };
enum {
  CONSUME_REJECT = 1,
  CONSUME_BATCH_1_0 = 2,
  CONSUME_BATCH_1_2 = 4,
  CONSUME_BATCH_1_3 = 8,
  CONSUME_BATCH_1_4 = 16,
  CONSUME_DANGLING = 32
};

/* ---- small utilities ---------------------------------------------------- */

static void die(const char *what) {
  fprintf(stderr, "picomq_host: %s\n", what);
  exit(1);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory");
  return p;
}

static const char *status_name(int32_t s) {
  switch (s) {
  case PICOMQ_OK: return "OK";
  case PICOMQ_RETRY: return "RETRY";
  case PICOMQ_FATAL: return "FATAL";
  case PICOMQ_BAD_CONFIG: return "BAD_CONFIG";
  case PICOMQ_ABI_MISMATCH: return "ABI_MISMATCH";
  case PICOMQ_BUFFER_TOO_SMALL: return "BUFFER_TOO_SMALL";
  default: return "an unknown status";
  }
}

static int utf8_valid(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    size_t k;
    uint32_t cp;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      k = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      k = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      k = 3, cp = c & 0x07;
    } else {
      return 0;
    }
    if (n - i <= k) return 0;
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (s[i + j] & 0x3F);
    }
    if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) ||
        (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return 0;
    i += k + 1;
  }
  return 1;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p) {
  return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* ---- reading request fields ---------------------------------------------- */

typedef struct {
  const uint8_t *p;
  size_t n;
  int bad; /* set once a read ran past the end; later reads return zeros */
} cursor;

static const uint8_t *take(cursor *c, size_t n) {
  if (c->bad || c->n < n) {
    c->bad = 1;
    return NULL;
  }
  const uint8_t *p = c->p;
  c->p += n;
  c->n -= n;
  return p;
}

static uint8_t get_u8(cursor *c) {
  const uint8_t *p = take(c, 1);
  return p ? p[0] : 0;
}

static uint32_t get_u32(cursor *c) {
  const uint8_t *p = take(c, 4);
  return p ? le32(p) : 0;
}

static uint64_t get_u64(cursor *c) {
  const uint8_t *p = take(c, 8);
  return p ? le64(p) : 0;
}

/* A byte string pointing into the request body: never NULL unless malformed. */
static picomq_bytes get_bytes(cursor *c) {
  picomq_bytes b = {NULL, 0};
  uint32_t n = get_u32(c);
  const uint8_t *p = take(c, n);
  if (p) {
    b.ptr = p;
    b.len = n;
  }
  return b;
}

/* ---- building output frames ---------------------------------------------- */

typedef struct {
  uint8_t *p;
  size_t len, cap;
} obuf;

static void ob_put(obuf *b, const void *src, size_t n) {
  if (b->len + n > b->cap) {
    size_t c = b->cap ? b->cap : 128;
    while (c < b->len + n) c *= 2;
    uint8_t *p = realloc(b->p, c);
    if (!p) die("out of memory");
    b->p = p;
    b->cap = c;
  }
  if (n) memcpy(b->p + b->len, src, n);
  b->len += n;
}

static void ob_u8(obuf *b, uint8_t v) { ob_put(b, &v, 1); }

static void ob_u32(obuf *b, uint32_t v) {
  uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                  (uint8_t)(v >> 24)};
  ob_put(b, x, 4);
}

static void ob_u64(obuf *b, uint64_t v) {
  ob_u32(b, (uint32_t)v);
  ob_u32(b, (uint32_t)(v >> 32));
}

static void ob_bytes(obuf *b, const void *p, size_t n) {
  ob_u32(b, (uint32_t)n);
  ob_put(b, p, n);
}

/* The protocol's stdout: a private dup of fd 1, so that a plugin printing to
 * stdout (fd 1 now points at stderr) cannot corrupt the frames. */
static int out_fd = -1;
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static int out_broken;
static int in_fd = -1;

static void frame_begin(obuf *b, uint8_t kind) {
  b->len = 0;
  ob_u32(b, 0); /* length, patched by frame_send */
  ob_u8(b, kind);
}

/* Writes one frame whole, under out_mu, then frees the buffer. */
static void frame_send(obuf *b) {
  uint32_t n = (uint32_t)(b->len - 4);
  b->p[0] = (uint8_t)n, b->p[1] = (uint8_t)(n >> 8);
  b->p[2] = (uint8_t)(n >> 16), b->p[3] = (uint8_t)(n >> 24);
  pthread_mutex_lock(&out_mu);
  size_t off = 0;
  while (!out_broken && off < b->len) {
    ssize_t w = write(out_fd, b->p + off, b->len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      /* The driver went away (EPIPE: SIGPIPE is ignored). Stop writing;
       * stdin reaches its end soon and the host exits. */
      out_broken = 1;
      break;
    }
    off += (size_t)w;
  }
  pthread_mutex_unlock(&out_mu);
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

/* ---- poisoning and quarantine of lent memory ----------------------------- */

static size_t quarantine_limit = (size_t)32 << 20;
static struct {
  void *p;
  size_t n;
} quarantine[QUARANTINE_SLOTS];
static size_t quarantine_next, quarantine_bytes;
static pthread_mutex_t quarantine_mu = PTHREAD_MUTEX_INITIALIZER;

static void evict(size_t i) {
  if (!quarantine[i].p) return;
  quarantine_bytes -= quarantine[i].n;
  free(quarantine[i].p);
  quarantine[i].p = NULL;
  quarantine[i].n = 0;
}

/* Called once a plugin call that borrowed p has returned: the plugin must not
 * hold p any more, so make any read through a kept pointer visibly wrong. */
static void lend_done(void *p, size_t n) {
  if (!p) return;
  memset(p, POISON, n);
  if (n > quarantine_limit) {
    free(p);
    return;
  }
  pthread_mutex_lock(&quarantine_mu);
  evict(quarantine_next);
  for (size_t k = 1; k < QUARANTINE_SLOTS && quarantine_bytes + n > quarantine_limit; k++)
    evict((quarantine_next + k) % QUARANTINE_SLOTS);
  quarantine[quarantine_next].p = p;
  quarantine[quarantine_next].n = n;
  quarantine_bytes += n;
  quarantine_next = (quarantine_next + 1) % QUARANTINE_SLOTS;
  pthread_mutex_unlock(&quarantine_mu);
}

/* ---- results -------------------------------------------------------------- */

typedef struct {
  int32_t status;
  uint64_t value;
  char *text;
  size_t text_len;
  uint32_t nrej; /* CONSUME: rejections reported with OK, encoded in rej */
  obuf rej;
} result;

static void set_text(result *r, const void *p, size_t n) {
  free(r->text);
  r->text = xmalloc(n + 1);
  if (n) memcpy(r->text, p, n);
  r->text[n] = 0;
  r->text_len = n;
}

__attribute__((format(printf, 3, 4))) static void
set_fmt(result *r, int32_t status, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0, small[0] = 0;
  char *s = xmalloc((size_t)n + 1);
  if ((size_t)n < sizeof small) {
    memcpy(s, small, (size_t)n + 1);
  } else {
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  free(r->text);
  r->text = s;
  r->text_len = (size_t)n;
  r->status = status;
}

static void respond(uint64_t id, result *r) {
  obuf b = {0};
  frame_begin(&b, KIND_RESPONSE);
  ob_u64(&b, id);
  ob_u32(&b, (uint32_t)r->status);
  ob_u64(&b, r->value);
  ob_bytes(&b, r->text, r->text_len);
  ob_u32(&b, r->nrej);
  ob_put(&b, r->rej.p, r->rej.len);
  frame_send(&b);
  free(r->text);
  r->text = NULL;
  free(r->rej.p);
  r->rej = (obuf){0};
  r->nrej = 0;
}

/* Refuses buffer sizes the host will not allocate. */
static int cap_ok(const char *what, uint32_t cap, result *r) {
  if (cap <= MAX_OUT_CAP) return 1;
  set_fmt(r, STATUS_HOST_ERROR, "%s %u exceeds %zu", what, cap, MAX_OUT_CAP);
  return 0;
}

/* An output buffer of cap bytes followed by CANARY_LEN canary bytes; the
 * whole thing starts out as canary so a missing NUL is visible. */
static char *alloc_out(size_t cap) {
  char *p = xmalloc(cap + CANARY_LEN);
  memset(p, CANARY, cap + CANARY_LEN);
  return p;
}

static int canary_ok(const char *p, size_t cap) {
  for (size_t i = 0; i < CANARY_LEN; i++)
    if ((uint8_t)p[cap + i] != CANARY) return 0;
  return 1;
}

/* Sets r from a call that took an error buffer: the status, the error text,
 * or CONTRACT when the plugin wrote past err_cap, left the text without a
 * NUL, or wrote text that is not UTF-8. Frees (poisons) err. */
static void finish_err(const char *fn, int32_t st, char *err, size_t cap,
                       result *r) {
  r->status = st;
  if (!err) return;
  if (!canary_ok(err, cap)) {
    set_fmt(r, STATUS_CONTRACT, "%s returned %s and wrote past err_cap %zu", fn,
            status_name(st), cap);
  } else if (st != PICOMQ_OK) {
    char *nul = memchr(err, 0, cap);
    if (!nul)
      set_fmt(r, STATUS_CONTRACT,
              "%s returned %s with error text not NUL-terminated within "
              "err_cap %zu",
              fn, status_name(st), cap);
    else if (!utf8_valid((const uint8_t *)err, (size_t)(nul - err)))
      set_fmt(r, STATUS_CONTRACT,
              "%s returned %s with error text that is not UTF-8", fn,
              status_name(st));
    else
      set_text(r, err, (size_t)(nul - err));
  }
  lend_done(err, cap + CANARY_LEN);
}

/* ---- libraries ------------------------------------------------------------- */

typedef struct {
  void *dl;
  picomq_sink_api api; /* fields beyond the table size the host passed are NULL */
} lib;

static lib libs[MAX_LIBS + 1]; /* index = library id; 0 unused */
static uint32_t nlibs;
static pthread_mutex_t libs_mu = PTHREAD_MUTEX_INITIALIZER;

static int get_lib(uint32_t id, picomq_sink_api *api, result *r) {
  int ok = 0;
  pthread_mutex_lock(&libs_mu);
  if (id >= 1 && id <= nlibs) {
    *api = libs[id].api;
    ok = 1;
  }
  pthread_mutex_unlock(&libs_mu);
  if (!ok) set_fmt(r, STATUS_HOST_ERROR, "unknown library %u", id);
  return ok;
}

/* ---- open instances and log contexts --------------------------------------- */

/* One entry per open in progress (OPENING) or open instance (OPEN), keyed by
 * the log context the driver chose. It tells log lines apart from late ones
 * and lets the host close what is left open when it exits. */
enum { T_OPENING = 1, T_OPEN = 2 };
typedef struct {
  uint64_t ctx;
  uint32_t lib;
  uint64_t inst;
  int state;
} track;

static track *tracks;
static size_t ntracks, ctracks;
static pthread_mutex_t tracks_mu = PTHREAD_MUTEX_INITIALIZER;

static void track_add(uint64_t ctx, uint32_t lib_id) {
  pthread_mutex_lock(&tracks_mu);
  if (ntracks == ctracks) {
    ctracks = ctracks ? 2 * ctracks : 16;
    track *t = realloc(tracks, ctracks * sizeof *t);
    if (!t) die("out of memory");
    tracks = t;
  }
  tracks[ntracks++] = (track){ctx, lib_id, 0, T_OPENING};
  pthread_mutex_unlock(&tracks_mu);
}

static void track_remove_at(size_t i) { tracks[i] = tracks[--ntracks]; }

/* Marks ctx open with handle inst; returns 0 when another open instance of
 * the same library already has that handle. */
static int track_opened(uint64_t ctx, uint64_t inst) {
  int unique = 1;
  pthread_mutex_lock(&tracks_mu);
  track *t = NULL;
  for (size_t i = 0; i < ntracks; i++)
    if (tracks[i].ctx == ctx && tracks[i].state == T_OPENING) t = &tracks[i];
  for (size_t i = 0; t && i < ntracks; i++)
    if (tracks[i].state == T_OPEN && tracks[i].lib == t->lib &&
        tracks[i].inst == inst)
      unique = 0;
  if (t) {
    t->state = T_OPEN;
    t->inst = inst;
  }
  pthread_mutex_unlock(&tracks_mu);
  return unique;
}

static void track_drop_opening(uint64_t ctx) {
  pthread_mutex_lock(&tracks_mu);
  for (size_t i = 0; i < ntracks; i++)
    if (tracks[i].ctx == ctx && tracks[i].state == T_OPENING) {
      track_remove_at(i);
      break;
    }
  pthread_mutex_unlock(&tracks_mu);
}

static void track_drop_inst(uint32_t lib_id, uint64_t inst) {
  pthread_mutex_lock(&tracks_mu);
  for (size_t i = 0; i < ntracks; i++)
    if (tracks[i].state == T_OPEN && tracks[i].lib == lib_id &&
        tracks[i].inst == inst) {
      track_remove_at(i);
      break;
    }
  pthread_mutex_unlock(&tracks_mu);
}

/* The picomq_log_fn given to every open. It may run on any thread, including
 * the plugin's own; it only touches tracks_mu and out_mu, neither of which is
 * held across a call into a plugin. */
static void host_log(void *ctx, int32_t level, const char *msg, size_t len) {
  uint64_t id = (uint64_t)(uintptr_t)ctx;
  uint32_t lib_id = 0;
  uint8_t flags = LOG_LATE;
  pthread_mutex_lock(&tracks_mu);
  for (size_t i = 0; i < ntracks; i++)
    if (tracks[i].ctx == id) {
      lib_id = tracks[i].lib;
      flags = 0;
      break;
    }
  pthread_mutex_unlock(&tracks_mu);
  if (!msg) {
    flags |= LOG_NULL_MSG;
    len = 0;
  }
  obuf b = {0};
  frame_begin(&b, KIND_LOG);
  ob_u64(&b, id);
  ob_u32(&b, lib_id);
  ob_u32(&b, (uint32_t)level);
  ob_u8(&b, flags);
  ob_bytes(&b, msg, len);
  frame_send(&b);
}

/* ---- operations ------------------------------------------------------------ */

static void op_load(cursor *c, result *r) {
  picomq_bytes path = get_bytes(c);
  uint32_t major = get_u32(c), minor = get_u32(c), tsize = get_u32(c);
  if (c->bad) {
    set_fmt(r, STATUS_HOST_ERROR, "malformed LOAD request");
    return;
  }
  size_t full = sizeof(picomq_sink_api);
  size_t ts = tsize ? tsize : full;
  if (ts < sizeof(size_t) || ts > MAX_TABLE_SIZE) {
    set_fmt(r, STATUS_HOST_ERROR, "table_size %zu out of range [%zu, %u]", ts,
            sizeof(size_t), MAX_TABLE_SIZE);
    return;
  }
  char *p = xmalloc(path.len + 1);
  memcpy(p, path.ptr, path.len);
  p[path.len] = 0;
  /* RTLD_LOCAL: every Go plugin carries its own runtime and cgo symbols,
   * which must not resolve against another plugin's. */
  void *dl = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *e = dlerror();
    set_fmt(r, STATUS_HOST_ERROR, "dlopen %s: %s", p, e ? e : "failed");
    free(p);
    return;
  }
  void *sym = dlsym(dl, "picomq_sink_plugin_init");
  if (!sym) {
    set_fmt(r, STATUS_HOST_ERROR, "%s has no picomq_sink_plugin_init", p);
    dlclose(dl);
    free(p);
    return;
  }
  picomq_sink_plugin_init_fn init;
  memcpy(&init, &sym, sizeof init);

  /* The table the plugin fills: table_size zero bytes with struct_size set,
   * then canary up to sizeof(picomq_sink_api) + CANARY_LEN, which a plugin
   * that fills more than table_size bytes overwrites. */
  size_t alloc = (ts > full ? ts : full) + CANARY_LEN;
  uint8_t *table = xmalloc(alloc);
  memset(table, 0, ts);
  memset(table + ts, CANARY, alloc - ts);
  memcpy(table, &ts, sizeof ts);
  picomq_status st = init(major, minor, (picomq_sink_api *)(void *)table, ts);

  picomq_sink_api api;
  memset(&api, 0, sizeof api);
  memcpy(&api, table, ts < full ? ts : full);
  int overrun = 0;
  for (size_t i = ts; i < alloc; i++)
    if (table[i] != CANARY) overrun = 1;
  lend_done(table, alloc);

  size_t covers_major = offsetof(picomq_sink_api, abi_major) + sizeof api.abi_major;
  if (overrun) {
    set_fmt(r, STATUS_CONTRACT,
            "picomq_sink_plugin_init returned %s and wrote past table_size %zu",
            status_name(st), ts);
  } else if (st != PICOMQ_OK) {
    set_fmt(r, st, "picomq_sink_plugin_init(%u, %u) returned %s", major, minor,
            status_name(st));
  } else if (ts >= covers_major && api.abi_major != major) {
    set_fmt(r, STATUS_CONTRACT,
            "picomq_sink_plugin_init accepted host ABI %u.%u but reports ABI %u.%u",
            major, minor, api.abi_major, api.abi_minor);
  } else {
    /* Each function the table covers must be there. */
    static const struct {
      const char *name;
      size_t off;
    } fns[] = {
        {"describe", offsetof(picomq_sink_api, describe)},
        {"open", offsetof(picomq_sink_api, open)},
        {"consume", offsetof(picomq_sink_api, consume)},
        {"metrics", offsetof(picomq_sink_api, metrics)},
        {"close", offsetof(picomq_sink_api, close)},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
      void *fp;
      if (fns[i].off + sizeof fp > ts) continue;
      memcpy(&fp, (const uint8_t *)&api + fns[i].off, sizeof fp);
      if (!fp) {
        set_fmt(r, STATUS_CONTRACT,
                "picomq_sink_plugin_init returned OK but left %s NULL",
                fns[i].name);
        break;
      }
    }
  }
  if (r->status != PICOMQ_OK) {
    dlclose(dl);
    free(p);
    return;
  }

  /* dlopen of a loaded library returns the same handle: report its id. */
  uint32_t id = 0;
  int reused = 0;
  pthread_mutex_lock(&libs_mu);
  for (uint32_t i = 1; i <= nlibs; i++)
    if (libs[i].dl == dl) id = i, reused = 1;
  if (!id && nlibs < MAX_LIBS) {
    id = ++nlibs;
    libs[id].dl = dl;
    libs[id].api = api;
  }
  pthread_mutex_unlock(&libs_mu);
  if (reused) dlclose(dl); /* drop the extra reference */
  if (!id) {
    set_fmt(r, STATUS_HOST_ERROR, "too many libraries (at most %d)", MAX_LIBS);
    dlclose(dl);
  } else {
    r->value = id;
    set_fmt(r, PICOMQ_OK, "{\"abi_major\":%u,\"abi_minor\":%u,\"reused\":%s}",
            api.abi_major, api.abi_minor, reused ? "true" : "false");
  }
  free(p);
}

/* describe and metrics behind one signature, for call_out. */
typedef struct {
  picomq_sink_api *api;
  picomq_instance inst;
} out_arg;

static picomq_status do_describe(out_arg *a, char *out, size_t cap, size_t *len) {
  return a->api->describe(out, cap, len);
}

static picomq_status do_metrics(out_arg *a, char *out, size_t cap, size_t *len) {
  return a->api->metrics(a->inst, out, cap, len);
}

/* Calls fn with a buffer of cap bytes, growing it to *out_len + 1 on
 * BUFFER_TOO_SMALL, and checks the output. r->value counts the calls. */
static void call_out(const char *name,
                     picomq_status (*fn)(out_arg *, char *, size_t, size_t *),
                     out_arg *a, size_t cap, result *r) {
  for (unsigned calls = 1;; calls++) {
    char *buf = alloc_out(cap);
    size_t len = SIZE_MAX; /* tells "left unset" apart */
    picomq_status st = fn(a, buf, cap, &len);
    r->value = calls;
    if (!canary_ok(buf, cap)) {
      set_fmt(r, STATUS_CONTRACT, "%s returned %s and wrote past out_cap %zu",
              name, status_name(st), cap);
    } else if (st == PICOMQ_BUFFER_TOO_SMALL) {
      if (len == SIZE_MAX || len < cap)
        set_fmt(r, STATUS_CONTRACT,
                "%s returned BUFFER_TOO_SMALL for out_cap %zu but *out_len is "
                "%zu",
                name, cap, len);
      else if (len >= MAX_OUT_CAP)
        set_fmt(r, STATUS_CONTRACT, "%s wants %zu bytes", name, len);
      else if (calls == MAX_OUT_CALLS)
        set_fmt(r, STATUS_CONTRACT,
                "%s still returned BUFFER_TOO_SMALL after %u calls", name, calls);
      else {
        lend_done(buf, cap + CANARY_LEN);
        cap = len + 1;
        continue;
      }
    } else if (st != PICOMQ_OK) {
      /* No error buffer here: pass on whatever text the plugin wrote. */
      char *nul = memchr(buf, 0, cap);
      if (len < cap && nul == buf + len && utf8_valid((uint8_t *)buf, len))
        set_text(r, buf, len);
      else
        set_fmt(r, st, "%s returned %s", name, status_name(st));
      r->status = st;
    } else if (len == SIZE_MAX || len >= cap) {
      set_fmt(r, STATUS_CONTRACT,
              "%s returned OK with *out_len %zu for out_cap %zu", name, len, cap);
    } else if (buf[len] != 0) {
      set_fmt(r, STATUS_CONTRACT, "%s returned OK without a NUL at out[%zu]",
              name, len);
    } else if (!utf8_valid((uint8_t *)buf, len)) {
      set_fmt(r, STATUS_CONTRACT, "%s returned OK with text that is not UTF-8",
              name);
    } else {
      r->status = PICOMQ_OK;
      set_text(r, buf, len);
    }
    lend_done(buf, cap + CANARY_LEN);
    return;
  }
}

static void op_describe(cursor *c, result *r) {
  uint32_t lib_id = get_u32(c), cap = get_u32(c);
  picomq_sink_api api;
  if (c->bad) {
    set_fmt(r, STATUS_HOST_ERROR, "malformed DESCRIBE request");
  } else if (cap_ok("out_cap", cap, r) && get_lib(lib_id, &api, r)) {
    if (!api.describe) {
      set_fmt(r, STATUS_HOST_ERROR, "library %u has no describe", lib_id);
      return;
    }
    out_arg a = {&api, 0};
    call_out("describe", do_describe, &a, cap, r);
  }
}

static void op_metrics(cursor *c, result *r) {
  uint32_t lib_id = get_u32(c);
  uint64_t inst = get_u64(c);
  uint32_t cap = get_u32(c);
  picomq_sink_api api;
  if (c->bad) {
    set_fmt(r, STATUS_HOST_ERROR, "malformed METRICS request");
  } else if (cap_ok("out_cap", cap, r) && get_lib(lib_id, &api, r)) {
    if (!api.metrics) {
      set_fmt(r, STATUS_HOST_ERROR, "library %u has no metrics", lib_id);
      return;
    }
    out_arg a = {&api, inst};
    call_out("metrics", do_metrics, &a, cap, r);
  }
}

static void op_open(cursor *c, result *r) {
  uint32_t lib_id = get_u32(c);
  uint64_t ctx = get_u64(c);
  uint8_t flags = get_u8(c);
  uint32_t err_cap = get_u32(c);
  picomq_bytes cfg = get_bytes(c);
  picomq_sink_api api;
  if (c->bad) {
    set_fmt(r, STATUS_HOST_ERROR, "malformed OPEN request");
    return;
  }
  if (!cap_ok("err_cap", err_cap, r) || !get_lib(lib_id, &api, r)) return;
  if (!api.open) {
    set_fmt(r, STATUS_HOST_ERROR, "library %u has no open", lib_id);
    return;
  }
  /* The config gets memory of its own, exactly config_len bytes, no NUL. */
  char *config = xmalloc(cfg.len);
  memcpy(config, cfg.ptr, cfg.len);
  char *err = err_cap ? alloc_out(err_cap) : NULL;
  picomq_instance out = 0;
  int nolog = flags & OPEN_NO_LOG;
  track_add(ctx, lib_id);
  picomq_status st =
      api.open(config, cfg.len, nolog ? NULL : host_log,
               nolog ? NULL : (void *)(uintptr_t)ctx, &out, err, err_cap);
  lend_done(config, cfg.len);
  int unique = 1;
  if (st == PICOMQ_OK && out != 0)
    unique = track_opened(ctx, out);
  else
    track_drop_opening(ctx);
  finish_err("open", st, err, err_cap, r);
  if (r->status != PICOMQ_OK) return;
  if (out == 0)
    set_fmt(r, STATUS_CONTRACT, "open returned OK with handle 0");
  else if (!unique)
    set_fmt(r, STATUS_CONTRACT,
            "open returned handle %llu, which is another open instance's",
            (unsigned long long)out);
  r->value = out;
}

/* Parses count records; with recs == NULL it only validates and counts the
 * headers into *nheaders. */
static int parse_records(cursor *c, uint32_t count, picomq_record *recs,
                         picomq_header *hdrs, size_t *nheaders) {
  size_t h = 0;
  for (uint32_t i = 0; i < count; i++) {
    picomq_record rec;
    memset(&rec, 0, sizeof rec);
    rec.offset = get_u64(c);
    rec.timestamp_ms = (int64_t)get_u64(c);
    if (get_u8(c)) rec.key = get_bytes(c);
    uint32_t nh = get_u32(c);
    if (c->bad || nh > c->n / 8) return 0; /* a header is at least 8 bytes */
    rec.headers = (hdrs && nh) ? hdrs + h : NULL;
    rec.header_count = nh;
    for (uint32_t j = 0; j < nh; j++, h++) {
      picomq_bytes k = get_bytes(c), v = get_bytes(c);
      if (hdrs) hdrs[h] = (picomq_header){k, v};
    }
    rec.payload = get_bytes(c);
    if (c->bad) return 0;
    if (recs) recs[i] = rec;
  }
  *nheaders = h;
  return 1;
}

/* A pointer to nothing, as Rust's empty slices carry (NonNull::dangling: the
 * alignment, never an address). The header allows any non-NULL pointer with
 * len 0 for an empty, present string; a plugin must not read it or keep it
 * where its runtime checks pointers (Go aborts on one below 4096). */
#define DANGLING ((void *)(uintptr_t)8)

static void dangle_bytes(picomq_bytes *b) {
  if (b->ptr && b->len == 0) b->ptr = DANGLING;
}

/* CONSUME flag 32: every empty, present byte string and every empty array of
 * the batch becomes DANGLING. An absent one (ptr NULL) stays NULL. */
static void dangle_batch(picomq_batch *batch, size_t bsize, picomq_header *hdrs,
                         size_t nheaders) {
  dangle_bytes(&batch->topic);
  dangle_bytes(&batch->schema);
  if (bsize >= PICOMQ_BATCH_SIZE_1_3) dangle_bytes(&batch->value_schema);
  if (bsize >= PICOMQ_BATCH_SIZE_1_4 && batch->redrive_topic.ptr) {
    dangle_bytes(&batch->redrive_topic);
    if (batch->record_count == 0)
      batch->redrive_offsets = DANGLING;
  }
  for (size_t i = 0; i < nheaders; i++) {
    dangle_bytes(&hdrs[i].key);
    dangle_bytes(&hdrs[i].value);
  }
  picomq_record *recs = (picomq_record *)batch->records;
  for (size_t i = 0; i < batch->record_count; i++) {
    dangle_bytes(&recs[i].key);
    dangle_bytes(&recs[i].payload);
    if (recs[i].header_count == 0) recs[i].headers = DANGLING;
  }
  if (batch->record_count == 0) batch->records = DANGLING;
}

/* What the reject callback of one consume collected (ABI 1.1). */
typedef struct {
  pthread_t thread; /* the thread calling consume */
  size_t record_count;
  uint8_t *seen; /* one byte per record */
  uint32_t n;
  obuf out;      /* n * (u64 index, i32 reason, bytes message) */
  char *breach;  /* the first contract breach, or NULL */
} rejects;

static void rejects_breach(rejects *rj, const char *fmt, size_t a,
                           int32_t b) {
  if (rj->breach) return;
  char tmp[256];
  snprintf(tmp, sizeof tmp, fmt, a, b);
  rj->breach = strdup(tmp);
  if (!rj->breach) die("out of memory");
}

/* The picomq_reject_fn the host passes: copies the rejection, checks the
 * rules picomq_sink.h gives for it. */
static void host_reject(void *ctx, size_t index, picomq_reject_reason reason,
                        const char *msg, size_t msg_len) {
  rejects *rj = ctx;
  if (!pthread_equal(pthread_self(), rj->thread))
    rejects_breach(rj, "reject(%zu, %d) called from a thread other than consume's", index, reason);
  else if (index >= rj->record_count)
    rejects_breach(rj, "reject(%zu, %d): index out of range", index, reason);
  else if (reason == 0)
    rejects_breach(rj, "reject(%zu, %d): reason 0", index, reason);
  else if (rj->seen[index])
    rejects_breach(rj, "reject(%zu, %d): record rejected twice", index, reason);
  else if (msg == NULL && msg_len > 0)
    rejects_breach(rj, "reject(%zu, %d): NULL message with a length", index, reason);
  else if (!utf8_valid((const uint8_t *)msg, msg_len))
    rejects_breach(rj, "reject(%zu, %d): message is not UTF-8", index, reason);
  else {
    rj->seen[index] = 1;
    rj->n++;
    ob_u64(&rj->out, index);
    ob_u32(&rj->out, (uint32_t)reason);
    ob_bytes(&rj->out, msg, msg_len);
  }
}

static void op_consume(cursor *c, result *r) {
  uint32_t lib_id = get_u32(c);
  uint64_t inst = get_u64(c);
  uint32_t err_cap = get_u32(c);
  uint8_t flags = get_u8(c);
  size_t full = sizeof(picomq_batch);
  size_t bsize = (flags & CONSUME_BATCH_1_0)   ? PICOMQ_BATCH_SIZE_1_0
                 : (flags & CONSUME_BATCH_1_2) ? PICOMQ_BATCH_SIZE_1_2
                 : (flags & CONSUME_BATCH_1_3) ? PICOMQ_BATCH_SIZE_1_3
                 : (flags & CONSUME_BATCH_1_4) ? PICOMQ_BATCH_SIZE_1_4
                                               : full;
  /* A batch as a host knowing bsize bytes of it lays it out: the bytes past
   * struct_size are poison, so a plugin reading the 1.1 fields of a 1.0
   * batch (or the 1.3 value_schema of a 1.2 one) finds a wild pointer rather
   * than a plausible NULL. */
  picomq_batch *batch = xmalloc(full);
  memset(batch, POISON, full);
  memset(batch, 0, bsize);
  batch->struct_size = bsize;
  batch->attempt = get_u32(c);
  batch->partition = get_u32(c);
  batch->topic = get_bytes(c);
  batch->schema = get_bytes(c);
  /* ?bytes value_schema (ABI 1.3), passed only when bsize covers it. */
  picomq_bytes value_schema = {0};
  if (get_u8(c)) value_schema = get_bytes(c);
  if (bsize >= PICOMQ_BATCH_SIZE_1_3) batch->value_schema = value_schema;
  /* ?redrive (ABI 1.4): bytes topic, u32 partition, u32 n, n * u64 offset;
   * n must equal the record count. Passed when bsize covers the fields. */
  picomq_bytes redrive_topic = {0};
  uint32_t redrive_partition = 0, nredrive = 0;
  uint64_t *redrive_offsets = NULL;
  int redrive = get_u8(c);
  if (redrive) {
    redrive_topic = get_bytes(c);
    redrive_partition = get_u32(c);
    nredrive = get_u32(c);
    if (!c->bad && nredrive <= c->n / 8) {
      redrive_offsets = xmalloc(nredrive ? nredrive * sizeof *redrive_offsets : 1);
      for (uint32_t i = 0; i < nredrive; i++) redrive_offsets[i] = get_u64(c);
    } else {
      c->bad = 1;
    }
  }
  /* u64 range_last, u8 has_follows, u64 follows (ABI 1.5), passed only in
   * a full-size batch. */
  uint64_t range_last = get_u64(c);
  uint8_t has_follows = get_u8(c);
  uint64_t follows = get_u64(c);
  if (has_follows > 1) c->bad = 1;
  uint32_t count = get_u32(c);
  if (redrive && nredrive != count) c->bad = 1;
  if (redrive && bsize >= PICOMQ_BATCH_SIZE_1_4) {
    batch->redrive_topic = redrive_topic;
    batch->redrive_partition = redrive_partition;
    batch->redrive_offsets = redrive_offsets;
  }
  if (bsize == full) {
    batch->range_last = range_last;
    batch->follows = follows;
    batch->has_follows = has_follows;
  }
  size_t nheaders = 0;
  picomq_record *recs = NULL;
  picomq_header *hdrs = NULL;
  /* A record is at least 25 bytes: refuse counts the frame cannot hold. */
  cursor first = *c;
  if (c->bad || count > c->n / 25 ||
      !parse_records(&first, count, NULL, NULL, &nheaders)) {
    set_fmt(r, STATUS_HOST_ERROR, "malformed CONSUME request");
    free(batch);
    free(redrive_offsets);
    return;
  }
  if (!cap_ok("err_cap", err_cap, r)) {
    free(batch);
    free(redrive_offsets);
    return;
  }
  if (count) recs = xmalloc(count * sizeof *recs);
  if (nheaders) hdrs = xmalloc(nheaders * sizeof *hdrs);
  parse_records(c, count, recs, hdrs, &nheaders);
  batch->records = recs;
  batch->record_count = count;
  if (flags & CONSUME_DANGLING) dangle_batch(batch, bsize, hdrs, nheaders);
  rejects rj = {.thread = pthread_self(), .record_count = count};
  if ((flags & CONSUME_REJECT) && bsize > PICOMQ_BATCH_SIZE_1_0) {
    rj.seen = xmalloc(count);
    memset(rj.seen, 0, count);
    batch->reject = host_reject;
    batch->reject_ctx = &rj;
  }

  /* The byte strings point into the request body, which handle() poisons
   * after this returns; the arrays and the batch are poisoned here. */
  picomq_sink_api api;
  if (get_lib(lib_id, &api, r)) {
    if (!api.consume) {
      set_fmt(r, STATUS_HOST_ERROR, "library %u has no consume", lib_id);
    } else {
      char *err = err_cap ? alloc_out(err_cap) : NULL;
      picomq_status st = api.consume(inst, batch, err, err_cap);
      finish_err("consume", st, err, err_cap, r);
      if (rj.breach)
        set_fmt(r, STATUS_CONTRACT, "consume returned %s; %s", status_name(st), rj.breach);
      else if (r->status == PICOMQ_OK) {
        /* Rejections count only with OK; otherwise they are forgotten. */
        r->nrej = rj.n;
        r->rej = rj.out;
        rj.out = (obuf){0};
      }
    }
  }
  free(rj.breach);
  free(rj.out.p);
  free(rj.seen);
  lend_done(recs, count * sizeof *recs);
  lend_done(hdrs, nheaders * sizeof *hdrs);
  if (redrive_offsets) lend_done(redrive_offsets, nredrive * sizeof *redrive_offsets);
  lend_done(batch, full);
}

static void op_close(cursor *c, result *r) {
  uint32_t lib_id = get_u32(c);
  uint64_t inst = get_u64(c);
  uint32_t err_cap = get_u32(c);
  picomq_sink_api api;
  if (c->bad) {
    set_fmt(r, STATUS_HOST_ERROR, "malformed CLOSE request");
    return;
  }
  if (!cap_ok("err_cap", err_cap, r) || !get_lib(lib_id, &api, r)) return;
  if (!api.close) {
    set_fmt(r, STATUS_HOST_ERROR, "library %u has no close", lib_id);
    return;
  }
  char *err = err_cap ? alloc_out(err_cap) : NULL;
  picomq_status st = api.close(inst, err, err_cap);
  /* The handle is invalid once close returns, whatever it returned; log lines
   * for its context from now on are late. */
  track_drop_inst(lib_id, inst);
  finish_err("close", st, err, err_cap, r);
}

/* setenv and unsetenv want NUL-terminated strings; the name must not be
 * empty or hold '=' or NUL, the value must not hold NUL. */
static void op_setenv(cursor *c, result *r) {
  picomq_bytes name = get_bytes(c);
  int present = get_u8(c);
  picomq_bytes value = {NULL, 0};
  if (present) value = get_bytes(c);
  if (c->bad || c->n != 0) {
    set_fmt(r, STATUS_HOST_ERROR, "malformed SETENV request");
    return;
  }
  if (name.len == 0 || memchr(name.ptr, '=', name.len) ||
      memchr(name.ptr, 0, name.len) || (value.len && memchr(value.ptr, 0, value.len))) {
    set_fmt(r, STATUS_HOST_ERROR, "SETENV: bad name or value");
    return;
  }
  char *n = xmalloc(name.len + 1), *v = xmalloc(value.len + 1);
  memcpy(n, name.ptr, name.len);
  n[name.len] = 0;
  if (value.len) memcpy(v, value.ptr, value.len);
  v[value.len] = 0;
  int rc = present ? setenv(n, v, 1) : unsetenv(n);
  if (rc != 0)
    set_fmt(r, STATUS_HOST_ERROR, "%s: %s", present ? "setenv" : "unsetenv",
            strerror(errno));
  else
    r->status = PICOMQ_OK;
  free(n);
  free(v);
}

/* ---- workers ---------------------------------------------------------------- */

typedef struct req {
  struct req *next;
  uint8_t *body;
  size_t len;
  uint64_t id;
  uint32_t worker;
  uint8_t op;
} req;

typedef struct {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  req *head, *tail;
  int stop;
} worker;

static worker *workers;
static uint32_t nworkers = DEFAULT_WORKERS;

static void handle(req *q) {
  cursor c = {q->body + REQ_HEADER, q->len - REQ_HEADER, 0};
  result r = {0};
  switch (q->op) {
  case OP_LOAD: op_load(&c, &r); break;
  case OP_DESCRIBE: op_describe(&c, &r); break;
  case OP_OPEN: op_open(&c, &r); break;
  case OP_CONSUME: op_consume(&c, &r); break;
  case OP_METRICS: op_metrics(&c, &r); break;
  case OP_CLOSE: op_close(&c, &r); break;
  case OP_SETENV: op_setenv(&c, &r); break;
  default: set_fmt(&r, STATUS_HOST_ERROR, "unknown op %u", q->op); break;
  }
  /* Poison before answering: once the answer is out, the next request may
   * run on another worker, and a plugin that kept a pointer must already
   * read poison there. The result owns its text, nothing points into body. */
  lend_done(q->body, q->len);
  respond(q->id, &r);
  free(q);
}

static void *worker_main(void *arg) {
  worker *w = arg;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    while (!w->head && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
    req *q = w->head;
    if (q) {
      w->head = q->next;
      if (!w->head) w->tail = NULL;
    }
    pthread_mutex_unlock(&w->mu);
    if (!q) return NULL; /* stopped and drained */
    handle(q);
  }
}

/* ---- main ------------------------------------------------------------------- */

/* Reads exactly n bytes; returns n, 0 at end of input before the first byte,
 * or -1 (error or end of input part way). */
static ssize_t read_full(int fd, uint8_t *p, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t got = read(fd, p + off, n - off);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return off == 0 && got == 0 ? 0 : -1;
    off += (size_t)got;
  }
  return (ssize_t)n;
}

/* The header's SIGNALS rule: every Go plugin brings a Go runtime that installs
 * its signal handlers when the library is loaded and forwards to the handlers
 * it finds then, so a host's own handlers must be installed BEFORE the first
 * dlopen, with SA_ONSTACK (Go code may be running on a small signal stack).
 * This host installs one: SIGPIPE ignored, so a vanished driver turns into
 * EPIPE from write rather than killing the host. It runs first in main. */
static void install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_IGN;
  sa.sa_flags = SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGPIPE, &sa, NULL) != 0) die("sigaction(SIGPIPE) failed");
}

/* Moves the protocol to private descriptors: plugin output on fd 1 goes to
 * stderr, and a plugin reading fd 0 reads nothing. */
static void take_stdio(void) {
  in_fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
  out_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in_fd < 0 || out_fd < 0 || devnull < 0 || dup2(2, 1) < 0 ||
      dup2(devnull, 0) < 0)
    die("cannot set up stdio");
  close(devnull);
}

static void close_leftovers(void) {
  for (;;) {
    uint32_t lib_id = 0;
    uint64_t inst = 0;
    pthread_mutex_lock(&tracks_mu);
    for (size_t i = 0; i < ntracks; i++)
      if (tracks[i].state == T_OPEN) {
        lib_id = tracks[i].lib;
        inst = tracks[i].inst;
        break;
      }
    pthread_mutex_unlock(&tracks_mu);
    if (!lib_id) return;
    picomq_sink_api api;
    result r = {0};
    if (get_lib(lib_id, &api, &r) && api.close) {
      char err[1024] = "";
      picomq_status st = api.close(inst, err, sizeof err);
      err[sizeof err - 1] = 0;
      fprintf(stderr,
              "picomq_host: closed leftover instance %llu of library %u: %s%s%s\n",
              (unsigned long long)inst, lib_id, status_name(st),
              st != PICOMQ_OK ? ": " : "", st != PICOMQ_OK ? err : "");
    }
    free(r.text);
    track_drop_inst(lib_id, inst);
  }
}

static void usage(void) {
  fprintf(stderr, "usage: picomq_host [-w workers (1..%d)] [-q quarantine_bytes]\n",
          MAX_WORKERS);
  exit(2);
}

int main(int argc, char **argv) {
  install_signals(); /* before anything can load a plugin */
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    if (!strcmp(argv[i], "-w") && i + 1 < argc) {
      long n = strtol(argv[++i], &end, 10);
      if (*end || n < 1 || n > MAX_WORKERS) usage();
      nworkers = (uint32_t)n;
    } else if (!strcmp(argv[i], "-q") && i + 1 < argc) {
      unsigned long long n = strtoull(argv[++i], &end, 10);
      if (*end) usage();
      quarantine_limit = (size_t)n;
    } else {
      usage();
    }
  }
  take_stdio();

  workers = xmalloc(nworkers * sizeof *workers);
  memset(workers, 0, nworkers * sizeof *workers);
  for (uint32_t i = 0; i < nworkers; i++) {
    pthread_mutex_init(&workers[i].mu, NULL);
    pthread_cond_init(&workers[i].cv, NULL);
    if (pthread_create(&workers[i].th, NULL, worker_main, &workers[i]) != 0)
      die("pthread_create failed");
  }

  obuf hello = {0};
  frame_begin(&hello, KIND_HELLO);
  ob_u32(&hello, PROTOCOL_VERSION);
  ob_u32(&hello, nworkers);
  ob_u32(&hello, PICOMQ_SINK_ABI_MAJOR);
  ob_u32(&hello, PICOMQ_SINK_ABI_MINOR);
  frame_send(&hello);

  int status = 0;
  for (;;) {
    uint8_t lenb[4];
    ssize_t got = read_full(in_fd, lenb, 4);
    if (got == 0) break; /* end of input: shut down */
    uint32_t len = got == 4 ? le32(lenb) : 0;
    uint8_t *body = NULL;
    if (got != 4 || len < REQ_HEADER || len > MAX_FRAME ||
        read_full(in_fd, body = xmalloc(len), len) != (ssize_t)len) {
      fprintf(stderr, "picomq_host: protocol error: bad or truncated frame\n");
      free(body);
      status = 3;
      break;
    }
    req *q = xmalloc(sizeof *q);
    *q = (req){NULL, body, len, le64(body), le32(body + 8), body[12]};
    if (q->worker >= nworkers) {
      result r = {0};
      set_fmt(&r, STATUS_HOST_ERROR, "no worker %u: the host runs %u", q->worker,
              nworkers);
      respond(q->id, &r);
      lend_done(q->body, q->len);
      free(q);
      continue;
    }
    worker *w = &workers[q->worker];
    pthread_mutex_lock(&w->mu);
    if (w->tail)
      w->tail->next = q;
    else
      w->head = q;
    w->tail = q;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
  }

  for (uint32_t i = 0; i < nworkers; i++) {
    pthread_mutex_lock(&workers[i].mu);
    workers[i].stop = 1;
    pthread_cond_signal(&workers[i].cv);
    pthread_mutex_unlock(&workers[i].mu);
  }
  for (uint32_t i = 0; i < nworkers; i++) {
    pthread_join(workers[i].th, NULL);
    pthread_mutex_destroy(&workers[i].mu);
    pthread_cond_destroy(&workers[i].cv);
  }
  free(workers);
  close_leftovers();

  /* dlclose is a no-op for Go libraries (they are linked -z nodelete); it
   * unloads C plugins, whose instances are all closed by now. */
  for (uint32_t i = 1; i <= nlibs; i++) dlclose(libs[i].dl);
  pthread_mutex_lock(&tracks_mu);
  free(tracks);
  tracks = NULL;
  ntracks = ctracks = 0;
  pthread_mutex_unlock(&tracks_mu);
  pthread_mutex_lock(&quarantine_mu);
  for (size_t i = 0; i < QUARANTINE_SLOTS; i++) evict(i);
  pthread_mutex_unlock(&quarantine_mu);
  close(in_fd);
  close(out_fd);
  return status;
}
