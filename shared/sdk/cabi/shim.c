// C half of the shim: the entry point and the function table. The table's
// functions are hidden C wrappers with the header's exact types around the
// Go exports, so no function pointer is ever cast.
#include <string.h>
#include "_cgo_export.h"

#define HIDDEN __attribute__((visibility("hidden")))

static picomq_status describe_fn(char *out, size_t out_cap, size_t *out_len) {
  return picomq_sink_v1_describe(out, out_cap, out_len);
}

static picomq_status open_fn(const char *config, size_t config_len,
                             picomq_log_fn log, void *log_ctx,
                             picomq_instance *out, char *err, size_t err_cap) {
  return picomq_sink_v1_open((char *)config, config_len, log, log_ctx, out, err,
                             err_cap);
}

static picomq_status consume_fn(picomq_instance inst, const picomq_batch *batch,
                                char *err, size_t err_cap) {
  return picomq_sink_v1_consume(inst, (picomq_batch *)batch, err, err_cap);
}

static picomq_status metrics_fn(picomq_instance inst, char *out, size_t out_cap,
                                size_t *out_len) {
  return picomq_sink_v1_metrics(inst, out, out_cap, out_len);
}

static picomq_status close_fn(picomq_instance inst, char *err, size_t err_cap) {
  return picomq_sink_v1_close(inst, err, err_cap);
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

HIDDEN void picomq_cabi_call_log(picomq_log_fn fn, void *ctx, int32_t level,
                                 const char *msg, size_t len) {
  fn(ctx, level, msg, len);
}

HIDDEN void picomq_cabi_call_reject(picomq_reject_fn fn, void *ctx,
                                    size_t index, picomq_reject_reason reason,
                                    const char *msg, size_t len) {
  fn(ctx, index, reason, msg, len);
}

/* The process environment as the C library holds it: setenv(3) updates
 * this, not the copy the Go runtime took when the library was loaded. */
extern char **environ;

HIDDEN char **picomq_cabi_environ(void) { return environ; }
