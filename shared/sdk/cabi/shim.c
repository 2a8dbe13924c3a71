// C half of the shim: the entry point and the function table. The table's
// functions are hidden C wrappers with the header's exact types around the
// Go exports, so no function pointer is ever cast.
#include <string.h>
#include "_cgo_export.h"

#define HIDDEN __attribute__((visibility("hidden")))

/* Go must never hold a host value that is not an address in a pointer (see
 * picomq_cabi_call_log). So the wrappers pass a buffer of capacity 0, which may
 * carry any pointer (an empty Rust slice's is dangling), as NULL, and log_ctx
 * as an integer. */
#define BUF(p, cap) ((cap) ? (p) : NULL)

static picomq_status describe_fn(char *out, size_t out_cap, size_t *out_len) {
  return picomq_sink_v1_describe(BUF(out, out_cap), out_cap, out_len);
}

static picomq_status open_fn(const char *config, size_t config_len,
                             picomq_log_fn log, void *log_ctx,
                             picomq_instance *out, char *err, size_t err_cap) {
  return picomq_sink_v1_open((char *)BUF(config, config_len), config_len, log,
                             (uintptr_t)log_ctx, out, BUF(err, err_cap), err_cap);
}

static picomq_status consume_fn(picomq_instance inst, const picomq_batch *batch,
                                char *err, size_t err_cap) {
  return picomq_sink_v1_consume(inst, (picomq_batch *)batch, BUF(err, err_cap),
                                err_cap);
}

static picomq_status metrics_fn(picomq_instance inst, char *out, size_t out_cap,
                                size_t *out_len) {
  return picomq_sink_v1_metrics(inst, BUF(out, out_cap), out_cap, out_len);
}

static picomq_status close_fn(picomq_instance inst, char *err, size_t err_cap) {
  return picomq_sink_v1_close(inst, BUF(err, err_cap), err_cap);
}

picomq_status picomq_sink_plugin_init(uint32_t host_major, uint32_t host_minor,
                                      picomq_sink_api *table,
                                      size_t table_size) {
  (void)host_minor; /* minor versions only add trailing table fields */
  if (host_major != PICOMQ_SINK_ABI_MAJOR) {
    return PICOMQ_ABI_MISMATCH;
  }
  if (table == NULL) {
    return PICOMQ_FATAL;
  }
  picomq_sink_api t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.abi_major = PICOMQ_SINK_ABI_MAJOR;
  t.abi_minor = PICOMQ_SINK_ABI_MINOR;
  t.describe = describe_fn;
  t.open = open_fn;
  t.consume = consume_fn;
  t.metrics = metrics_fn;
  t.close = close_fn;
  memcpy(table, &t, table_size < sizeof t ? table_size : sizeof t);
  return PICOMQ_OK;
}

/* The host's ctx values are opaque and need not be addresses (the C host
 * passes small integers as log_ctx): Go holds log_ctx as an integer and never
 * loads reject_ctx, which is read here from the batch. A value below 4096 in
 * a Go pointer makes the Go runtime abort the process ("invalid pointer found
 * on stack") when it copies the stack holding it. */
HIDDEN void picomq_cabi_call_log(picomq_log_fn fn, uintptr_t ctx, int32_t level,
                                 const char *msg, size_t len) {
  fn((void *)ctx, level, msg, len);
}

HIDDEN void picomq_cabi_call_reject(const picomq_batch *batch, size_t index,
                                    picomq_reject_reason reason,
                                    const char *msg, size_t len) {
  batch->reject(batch->reject_ctx, index, reason, msg, len);
}

/* The process environment as the C library holds it: setenv(3) updates
 * this, not the copy the Go runtime took when the library was loaded. */
extern char **environ;

HIDDEN char **picomq_cabi_environ(void) { return environ; }
