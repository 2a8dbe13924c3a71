/*
 * stubplugin.c - a tiny C sink plugin implementing include/picomq_sink.h, for
 * testing the C host (picomq_host.c) and its Go driver without the Go SDK.
 *
 *   gcc -std=c11 -shared -fPIC -pthread -I include -DSTUB_NAME='"stub-a"' \
 *       -o stub_a.so cmd/picomq-host/testdata/stubplugin.c
 *
 * open accepts any config, except that it returns BAD_CONFIG when the config
 * contains "bad"; a config containing "latelog" makes close start a thread
 * that logs 50 ms after close returned (a deliberate contract violation).
 * open and close log one INFO line each through the log callback.
 *
 * consume counts batches and records, and acts on the topic:
 *   retry       RETRY, error text "retry: N records"
 *   fatal       FATAL, error text "fatal requested"
 *   abort       says so on stderr, then abort() - crashes the host
 *   echo        RETRY, error text describing the batch exactly (see dump)
 *   keep        remembers a pointer to the first record's payload (a
 *               deliberate contract violation), OK
 *   peek        RETRY, error text the hex of the bytes the kept pointer
 *               points at now
 *   barrier:N   waits until N consume calls are inside barrier:N at once,
 *               then OK; FATAL "barrier timeout" after 10 s
 *   sleep:MS    sleeps MS milliseconds, OK
 *   log         one WARN log line per record, its payload as the message, OK
 *   nonul       RETRY with err filled completely, no NUL (contract violation)
 *   badutf8     RETRY with error text that is not UTF-8 (contract violation)
 *   getenv      RETRY, error text "NAME=value" or "NAME unset" for the
 *               getenv of the first record's payload
 *   reject      ABI 1.1: rejects (PICOMQ_REJECT_VALUE, "bad record at
 *               offset O") every record whose payload starts with "bad" and
 *               returns OK; when the batch has no reject callback (a 1.0
 *               host) or the stub is built as a 1.0 plugin, FATAL "record
 *               at offset O is bad" instead
 *   rejectretry rejects record 0, then returns RETRY (the host forgets it)
 *   rejectbad   rejects index record_count (a contract violation), OK
 *   anything else: OK
 * Built with -DSTUB_ABI_MINOR=0 it is a 1.0-style plugin: it reports ABI 1.0
 * and never looks at the batch's 1.1 fields; with -DSTUB_ABI_MINOR=4 a 1.4
 * plugin, which neither reads the 1.5 fields nor declares "pipelined".
 * describe returns fixed JSON longer than 64 bytes, with "pipelined": true
 * when the stub is built for ABI 1.5 or later; metrics returns
 * {"name":...,"instance":H,"batches":B,"records":R}.
 */
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "picomq_sink.h"

#ifndef STUB_NAME
#define STUB_NAME "stub"
#endif
#ifndef STUB_ABI_MINOR
#define STUB_ABI_MINOR PICOMQ_SINK_ABI_MINOR
#endif

#if STUB_ABI_MINOR >= 5
#define STUB_PIPELINED ",\"pipelined\":true"
#else
#define STUB_PIPELINED ""
#endif

#define MAX_INSTANCES 1024

typedef struct {
  pthread_mutex_t mu; /* serialises consume and close of this instance */
  uint64_t handle;    /* 0: free slot */
  picomq_log_fn log;
  void *log_ctx;
  int late_log;
  uint64_t batches, records; /* under table_mu, so metrics never waits */
  const uint8_t *kept;
  size_t kept_len;
} instance;

static instance instances[MAX_INSTANCES];
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_handle = 1000;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static pthread_mutex_t barrier_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t barrier_cv = PTHREAD_COND_INITIALIZER;
static unsigned barrier_count, barrier_gen;

static void init_instances(void) {
  for (size_t i = 0; i < MAX_INSTANCES; i++)
    pthread_mutex_init(&instances[i].mu, NULL);
}

static void set_err(char *err, size_t cap, const char *fmt, ...) {
  if (!err || !cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
}

static void say(picomq_log_fn log, void *ctx, int32_t level, const char *fmt,
                ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
  if (log)
    log(ctx, level, buf, (size_t)n);
  else
    fprintf(stderr, "%s: level=%d %s\n", STUB_NAME, level, buf);
}

static int contains(const char *s, size_t n, const char *needle) {
  size_t m = strlen(needle);
  for (size_t i = 0; i + m <= n; i++)
    if (!memcmp(s + i, needle, m)) return 1;
  return 0;
}

static int topic_is(const picomq_batch *b, const char *t) {
  size_t n = strlen(t);
  return b->topic.len == n && !memcmp(b->topic.ptr, t, n);
}

static int topic_arg(const picomq_batch *b, const char *prefix, long *arg) {
  size_t n = strlen(prefix);
  char num[32];
  if (b->topic.len <= n || b->topic.len - n >= sizeof num ||
      memcmp(b->topic.ptr, prefix, n))
    return 0;
  memcpy(num, b->topic.ptr + n, b->topic.len - n);
  num[b->topic.len - n] = 0;
  *arg = strtol(num, NULL, 10);
  return 1;
}

static instance *lookup(picomq_instance h) {
  instance *in = NULL;
  pthread_mutex_lock(&table_mu);
  for (size_t i = 0; h && i < MAX_INSTANCES; i++)
    if (instances[i].handle == h) in = &instances[i];
  pthread_mutex_unlock(&table_mu);
  return in;
}

/* ---- a growable text buffer for echo and peek ---- */

typedef struct {
  char *p;
  size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (t->len + (size_t)n + 1 > t->cap) {
    t->cap = (t->len + (size_t)n + 1) * 2;
    t->p = realloc(t->p, t->cap);
    if (!t->p) abort();
  }
  va_start(ap, fmt);
  vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

static void put_hex(text *t, picomq_bytes b) {
  if (!b.ptr) {
    put(t, "-");
    return;
  }
  put(t, "x");
  for (size_t i = 0; i < b.len; i++) put(t, "%02x", b.ptr[i]);
}

/* attempt=A partition=P topic=T schema=S records=N [value_schema=V]
 *   [redrive=TOPIC/PARTITION@O1,O2,...] [range_last=R] [follows=F]
 *   then per record: |off=O ts=T key=K headers=[K:V,...] payload=P
 * where byte strings are "-" when absent, else "x" and their hex. */
static void dump(text *t, const picomq_batch *b) {
  put(t, "attempt=%u partition=%u topic=%.*s schema=%.*s records=%zu",
      b->attempt, b->partition, (int)b->topic.len, (const char *)b->topic.ptr,
      (int)b->schema.len, (const char *)b->schema.ptr, b->record_count);
  /* ABI 1.3: only a batch that carries one shows it (older dumps unchanged). */
  if (STUB_ABI_MINOR >= 3 &&
      b->struct_size >= offsetof(picomq_batch, value_schema) + sizeof(picomq_bytes) &&
      b->value_schema.ptr) {
    put(t, " value_schema=");
    put_hex(t, b->value_schema);
  }
  /* ABI 1.4: a redrive batch shows its dead-letter side. */
  if (STUB_ABI_MINOR >= 4 &&
      b->struct_size >= offsetof(picomq_batch, redrive_offsets) + sizeof(b->redrive_offsets) &&
      b->redrive_topic.ptr) {
    put(t, " redrive=%.*s/%u@", (int)b->redrive_topic.len, (const char *)b->redrive_topic.ptr,
        b->redrive_partition);
    for (size_t i = 0; i < b->record_count; i++)
      put(t, "%s%llu", i ? "," : "", (unsigned long long)b->redrive_offsets[i]);
  }
  /* ABI 1.5: shown only when set, so older dumps read as before. */
  if (STUB_ABI_MINOR >= 5 &&
      b->struct_size >= offsetof(picomq_batch, has_follows) + sizeof(b->has_follows)) {
    if (b->range_last) put(t, " range_last=%llu", (unsigned long long)b->range_last);
    if (b->has_follows) put(t, " follows=%llu", (unsigned long long)b->follows);
  }
  for (size_t i = 0; i < b->record_count; i++) {
    const picomq_record *r = &b->records[i];
    put(t, "|off=%llu ts=%lld key=", (unsigned long long)r->offset,
        (long long)r->timestamp_ms);
    put_hex(t, r->key);
    put(t, " headers=[");
    for (size_t j = 0; j < r->header_count; j++) {
      if (j) put(t, ",");
      put_hex(t, r->headers[j].key);
      put(t, ":");
      put_hex(t, r->headers[j].value);
    }
    put(t, "] payload=");
    put_hex(t, r->payload);
  }
}

/* ---- the ABI ---- */

static picomq_status stub_describe(char *out, size_t cap, size_t *out_len) {
  static const char json[] =
      "{\"name\":\"" STUB_NAME "\",\"version\":\"0.0.1\",\"abi\":{\"major\":1,"
      "\"minor\":0},\"plugin_config\":{\"table\":{\"type\":\"string\","
      "\"required\":true,\"secret\":false}}" STUB_PIPELINED "}";
  size_t n = sizeof json - 1;
  *out_len = n;
  if (cap < n + 1) return PICOMQ_BUFFER_TOO_SMALL;
  memcpy(out, json, n + 1);
  return PICOMQ_OK;
}

static picomq_status stub_open(const char *config, size_t config_len,
                               picomq_log_fn log, void *log_ctx,
                               picomq_instance *out, char *err, size_t cap) {
  if (contains(config, config_len, "bad")) {
    set_err(err, cap, "plugin_config.bad: the stub refuses configs with \"bad\"");
    return PICOMQ_BAD_CONFIG;
  }
  instance *in = NULL;
  pthread_mutex_lock(&table_mu);
  for (size_t i = 0; i < MAX_INSTANCES && !in; i++)
    if (!instances[i].handle) in = &instances[i];
  if (in) {
    in->handle = next_handle++;
    in->log = log;
    in->log_ctx = log_ctx;
    in->late_log = contains(config, config_len, "latelog");
    in->batches = in->records = 0;
    in->kept = NULL;
    in->kept_len = 0;
    *out = in->handle;
  }
  pthread_mutex_unlock(&table_mu);
  if (!in) {
    set_err(err, cap, "too many instances");
    return PICOMQ_FATAL;
  }
  say(log, log_ctx, PICOMQ_LOG_INFO, "%s: opened instance %llu config_len=%zu",
      STUB_NAME, (unsigned long long)*out, config_len);
  return PICOMQ_OK;
}

static picomq_status barrier(long n) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 10;
  pthread_mutex_lock(&barrier_mu);
  unsigned gen = barrier_gen;
  if (++barrier_count >= (unsigned long)n) {
    barrier_count = 0;
    barrier_gen++;
    pthread_cond_broadcast(&barrier_cv);
    pthread_mutex_unlock(&barrier_mu);
    return PICOMQ_OK;
  }
  int rc = 0;
  while (gen == barrier_gen && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&barrier_cv, &barrier_mu, &deadline);
  picomq_status st = PICOMQ_OK;
  if (gen == barrier_gen) {
    barrier_count--;
    st = PICOMQ_FATAL;
  }
  pthread_mutex_unlock(&barrier_mu);
  return st;
}

static picomq_status stub_consume(picomq_instance h, const picomq_batch *b,
                                  char *err, size_t cap) {
  instance *in = lookup(h);
  if (!in) {
    set_err(err, cap, "unknown instance %llu", (unsigned long long)h);
    return PICOMQ_FATAL;
  }
  pthread_mutex_lock(&in->mu);
  if (in->handle != h) {
    pthread_mutex_unlock(&in->mu);
    set_err(err, cap, "unknown instance %llu", (unsigned long long)h);
    return PICOMQ_FATAL;
  }
  picomq_status st = PICOMQ_OK;
  long arg = 0;
  text t = {0};
  if (topic_is(b, "abort")) {
    fprintf(stderr, "%s: abort requested\n", STUB_NAME);
    abort();
  } else if (topic_is(b, "retry")) {
    set_err(err, cap, "retry: %zu records", b->record_count);
    st = PICOMQ_RETRY;
  } else if (topic_is(b, "fatal")) {
    set_err(err, cap, "fatal requested");
    st = PICOMQ_FATAL;
  } else if (topic_is(b, "echo")) {
    dump(&t, b);
    set_err(err, cap, "%s", t.p);
    st = PICOMQ_RETRY;
  } else if (topic_is(b, "keep")) {
    if (b->record_count) {
      in->kept = b->records[0].payload.ptr;
      in->kept_len = b->records[0].payload.len;
    }
  } else if (topic_is(b, "peek")) {
    put_hex(&t, (picomq_bytes){in->kept, in->kept_len});
    set_err(err, cap, "%s", t.p);
    st = PICOMQ_RETRY;
  } else if (topic_arg(b, "barrier:", &arg)) {
    st = barrier(arg);
    if (st != PICOMQ_OK) set_err(err, cap, "barrier timeout");
  } else if (topic_arg(b, "sleep:", &arg)) {
    struct timespec ts = {arg / 1000, (arg % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  } else if (topic_is(b, "log")) {
    for (size_t i = 0; i < b->record_count; i++)
      say(in->log, in->log_ctx, PICOMQ_LOG_WARN, "%.*s",
          (int)b->records[i].payload.len,
          (const char *)b->records[i].payload.ptr);
  } else if (topic_is(b, "nonul")) {
    if (err && cap) memset(err, 'x', cap);
    st = PICOMQ_RETRY;
  } else if (topic_is(b, "getenv") && b->record_count) {
    char name[256];
    size_t n = b->records[0].payload.len < sizeof name - 1
                   ? b->records[0].payload.len
                   : sizeof name - 1;
    memcpy(name, b->records[0].payload.ptr, n);
    name[n] = 0;
    const char *v = getenv(name);
    if (v)
      set_err(err, cap, "%s=%s", name, v);
    else
      set_err(err, cap, "%s unset", name);
    st = PICOMQ_RETRY;
  } else if (topic_is(b, "reject") || topic_is(b, "rejectretry") ||
             topic_is(b, "rejectbad")) {
    picomq_reject_fn reject = NULL;
    if (STUB_ABI_MINOR >= 1 &&
        b->struct_size >= offsetof(picomq_batch, reject_ctx) + sizeof(void *))
      reject = b->reject;
    if (topic_is(b, "rejectbad") && reject) {
      reject(b->reject_ctx, b->record_count, PICOMQ_REJECT_VALUE, "x", 1);
    } else if (topic_is(b, "rejectretry") && reject && b->record_count) {
      reject(b->reject_ctx, 0, PICOMQ_REJECT_SIZE, "too big", 7);
      set_err(err, cap, "retry after a rejection");
      st = PICOMQ_RETRY;
    }
    for (size_t i = 0; st == PICOMQ_OK && topic_is(b, "reject") && i < b->record_count; i++) {
      const picomq_record *r = &b->records[i];
      if (r->payload.len < 3 || memcmp(r->payload.ptr, "bad", 3) != 0) continue;
      if (!reject) {
        set_err(err, cap, "record at offset %llu is bad", (unsigned long long)r->offset);
        st = PICOMQ_FATAL;
        break;
      }
      char msg[64];
      int n = snprintf(msg, sizeof msg, "bad record at offset %llu", (unsigned long long)r->offset);
      reject(b->reject_ctx, i, PICOMQ_REJECT_VALUE, msg, (size_t)n);
    }
  } else if (topic_is(b, "badutf8")) {
    set_err(err, cap, "bad \xff\xfe text");
    st = PICOMQ_RETRY;
  }
  free(t.p);
  if (st == PICOMQ_OK) {
    pthread_mutex_lock(&table_mu);
    in->batches++;
    in->records += b->record_count;
    pthread_mutex_unlock(&table_mu);
  }
  pthread_mutex_unlock(&in->mu);
  return st;
}

static picomq_status stub_metrics(picomq_instance h, char *out, size_t cap,
                                  size_t *out_len) {
  uint64_t batches = 0, records = 0;
  int found = 0;
  pthread_mutex_lock(&table_mu);
  for (size_t i = 0; h && i < MAX_INSTANCES; i++)
    if (instances[i].handle == h) {
      batches = instances[i].batches;
      records = instances[i].records;
      found = 1;
    }
  pthread_mutex_unlock(&table_mu);
  if (!found) return PICOMQ_FATAL;
  char json[256];
  int n = snprintf(json, sizeof json,
                   "{\"name\":\"%s\",\"instance\":%llu,\"batches\":%llu,"
                   "\"records\":%llu}",
                   STUB_NAME, (unsigned long long)h,
                   (unsigned long long)batches, (unsigned long long)records);
  *out_len = (size_t)n;
  if (cap < (size_t)n + 1) return PICOMQ_BUFFER_TOO_SMALL;
  memcpy(out, json, (size_t)n + 1);
  return PICOMQ_OK;
}

typedef struct {
  picomq_log_fn log;
  void *ctx;
} late;

static void *late_log(void *arg) {
  late l = *(late *)arg;
  free(arg);
  struct timespec ts = {0, 50 * 1000000L};
  nanosleep(&ts, NULL);
  say(l.log, l.ctx, PICOMQ_LOG_ERROR, "%s: logging after close", STUB_NAME);
  return NULL;
}

static picomq_status stub_close(picomq_instance h, char *err, size_t cap) {
  instance *in = lookup(h);
  if (!in) {
    set_err(err, cap, "unknown instance %llu", (unsigned long long)h);
    return PICOMQ_FATAL;
  }
  pthread_mutex_lock(&in->mu);
  if (in->handle != h) {
    pthread_mutex_unlock(&in->mu);
    set_err(err, cap, "unknown instance %llu", (unsigned long long)h);
    return PICOMQ_FATAL;
  }
  say(in->log, in->log_ctx, PICOMQ_LOG_INFO, "%s: closing instance %llu",
      STUB_NAME, (unsigned long long)h);
  if (in->late_log && in->log) {
    late *l = malloc(sizeof *l);
    pthread_t th;
    if (l) {
      *l = (late){in->log, in->log_ctx};
      if (pthread_create(&th, NULL, late_log, l) == 0)
        pthread_detach(th);
      else
        free(l);
    }
  }
  pthread_mutex_lock(&table_mu);
  in->handle = 0;
  pthread_mutex_unlock(&table_mu);
  pthread_mutex_unlock(&in->mu);
  return PICOMQ_OK;
}

picomq_status picomq_sink_plugin_init(uint32_t host_major, uint32_t host_minor,
                                      picomq_sink_api *table,
                                      size_t table_size) {
  (void)host_minor;
  if (host_major != PICOMQ_SINK_ABI_MAJOR) return PICOMQ_ABI_MISMATCH;
  if (!table) return PICOMQ_FATAL;
  pthread_once(&once, init_instances);
  picomq_sink_api api = {
      .struct_size = table_size >= sizeof(size_t) ? table->struct_size : 0,
      .abi_major = PICOMQ_SINK_ABI_MAJOR,
      .abi_minor = STUB_ABI_MINOR,
      .describe = stub_describe,
      .open = stub_open,
      .consume = stub_consume,
      .metrics = stub_metrics,
      .close = stub_close,
  };
  memcpy(table, &api, table_size < sizeof api ? table_size : sizeof api);
  return PICOMQ_OK;
}
