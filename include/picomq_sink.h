/*
 * picomq_sink.h - the C ABI between a PicoMQ connector runtime (the host) and
 * a sink plugin shared library. ABI version 1.0.
 *
 * This header is the contract. It is hand-written and committed; the Go SDK
 * (shared/sdk) implements it and the C test host (cmd/picomq-host) consumes it.
 * docs/abi.md explains the same rules at more length.
 *
 * ENTRY POINT
 *   A plugin library exports exactly one entry point, picomq_sink_plugin_init.
 *   The host calls it once per loaded library with the ABI version it was
 *   built against and a function table for the plugin to fill. A plugin
 *   refuses a host whose major version differs (PICOMQ_ABI_MISMATCH) and
 *   fills at most table_size bytes of the table, so an older host with a
 *   shorter table keeps working when minor versions add trailing fields.
 *
 * MEMORY
 *   - Every pointer the host passes (config, batch, records, headers, error
 *     and output buffers) is borrowed for the duration of that one call.
 *     The plugin copies whatever it keeps; after a call returns, nothing the
 *     plugin holds points into host memory, so the host may free or reuse it.
 *   - The plugin never returns memory the host must free. Text results
 *     (describe, metrics, error messages) are written into host buffers.
 *   - Error text is UTF-8, NUL-terminated, truncated on a UTF-8 boundary to
 *     fit err_cap (err_cap == 0 or err == NULL means "no error text wanted").
 *
 * THREADING
 *   - picomq_sink_plugin_init may be called from any thread, once or more.
 *   - describe may be called at any time from any thread.
 *   - Many instances of one library may be open in one process. Calls for
 *     different instances may run concurrently on different host threads.
 *   - Calls for the same instance are serialised by the plugin: one consume
 *     runs at a time. close cancels a consume in flight (see close below)
 *     and waits for it to return. metrics never waits for a consume.
 *   - After close returns, the instance handle is invalid; any further call
 *     with it returns PICOMQ_FATAL ("unknown instance"), never a crash.
 *   - The log callback may be invoked from any thread, including threads the
 *     host did not create, until close returns; never after.
 *
 * RESULTS
 *   PICOMQ_OK          the call did what it was asked; for consume, every
 *                      record of the batch is durably written (or was
 *                      already written by an earlier attempt) and the host
 *                      may commit the offset.
 *   PICOMQ_RETRY       consume: the write did not happen; trying the same
 *                      batch again may succeed (network, throttling, commit
 *                      conflict, a consume cancelled by close).
 *                      open: the configuration was accepted but the
 *                      environment failed in a way that may pass (an
 *                      endpoint unreachable or timing out, an object store
 *                      answering 403 or 5xx); opening again with the same
 *                      configuration may succeed.
 *   PICOMQ_FATAL       the write did not happen and retrying this batch cannot
 *                      succeed (a record that cannot fit the table, a panic).
 *   PICOMQ_BAD_CONFIG  open refused the configuration itself: a key missing,
 *                      unknown or of the wrong type, a value the plugin cannot
 *                      use, a table that does not exist, credentials the
 *                      database rejects (authentication failure). Opening
 *                      again cannot succeed until the configuration or its
 *                      environment overrides change. The message names the
 *                      key.
 *   PICOMQ_ABI_MISMATCH the host's major ABI version is not supported.
 *   PICOMQ_BUFFER_TOO_SMALL the output did not fit; *out_len holds the size
 *                      needed (without the NUL); call again with a larger buffer.
 *   Panics inside the plugin (in an exported call or in a goroutine the SDK
 *   started) are recovered and reported as PICOMQ_FATAL with the panic text.
 *
 * SIGNALS
 *   Every Go plugin carries a Go runtime that installs signal handlers when
 *   the library is loaded. A host that installs its own handlers must do so
 *   BEFORE loading any plugin and must use SA_ONSTACK, or Go code running on
 *   a small signal stack will crash. Several Go plugins (several Go runtimes)
 *   in one process work on linux/amd64 with glibc; the e2e soak keeps it so.
 *
 * UNLOADING
 *   dlclose does not unload a Go library: the Go runtime cannot be stopped.
 *   Close every instance instead; the library's memory stays mapped until the
 *   process exits. Loading the same path again returns the same library.
 */
#ifndef PICOMQ_SINK_H
#define PICOMQ_SINK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PICOMQ_SINK_ABI_MAJOR 1
#define PICOMQ_SINK_ABI_MINOR 0

/* Result codes. */
typedef int32_t picomq_status;
#define PICOMQ_OK 0
#define PICOMQ_RETRY 1
#define PICOMQ_FATAL 2
#define PICOMQ_BAD_CONFIG 3
#define PICOMQ_ABI_MISMATCH 4
#define PICOMQ_BUFFER_TOO_SMALL 5

/* Log levels, the values of Go's log/slog levels. */
#define PICOMQ_LOG_DEBUG (-4)
#define PICOMQ_LOG_INFO 0
#define PICOMQ_LOG_WARN 4
#define PICOMQ_LOG_ERROR 8

/* A borrowed byte string. ptr == NULL means "absent" (e.g. a record without
 * a key); ptr != NULL with len == 0 is an empty, present value. */
typedef struct picomq_bytes {
  const uint8_t *ptr;
  size_t len;
} picomq_bytes;

/* One record header. Keys and values are arbitrary bytes. */
typedef struct picomq_header {
  picomq_bytes key;
  picomq_bytes value;
} picomq_header;

/* One record of a batch. */
typedef struct picomq_record {
  uint64_t offset;
  int64_t timestamp_ms; /* epoch milliseconds */
  picomq_bytes key;     /* ptr == NULL: the record has no key */
  const picomq_header *headers;
  size_t header_count;
  picomq_bytes payload; /* decoded according to the batch schema */
} picomq_record;

/* One batch: records of one topic partition, in offset order. */
typedef struct picomq_batch {
  size_t struct_size; /* sizeof(picomq_batch) as the host knows it */
  uint32_t attempt;   /* 1 for the first delivery, up to 5 for the same batch */
  uint32_t partition;
  picomq_bytes topic;  /* UTF-8 */
  picomq_bytes schema; /* "json", "raw", "text", "proto", "flatbuffer", "avro" */
  const picomq_record *records;
  size_t record_count;
} picomq_batch;

/* An open instance. 0 is never a valid handle. */
typedef uint64_t picomq_instance;

/* Log callback. msg is UTF-8 and not NUL-terminated: a message followed by
 * its attributes as key=value pairs. ctx is the pointer given to open. */
typedef void (*picomq_log_fn)(void *ctx, int32_t level, const char *msg,
                              size_t msg_len);

typedef struct picomq_sink_api {
  size_t struct_size; /* on return: sizeof(picomq_sink_api) as the plugin knows it */
  uint32_t abi_major; /* set by the plugin */
  uint32_t abi_minor; /* set by the plugin */

  /* Static JSON: plugin name and version, ABI version, Go version, and the
   * plugin_config schema (per key: type, default, required, secret). */
  picomq_status (*describe)(char *out, size_t out_cap, size_t *out_len);

  /* Opens an instance. config is the UTF-8 JSON sink definition:
   * {"key": "...", "name": "...", "version": N, "plugin_config": {...}}.
   * Environment variables PICOMQ_CONNECTORS_SINK_<KEY>_PLUGIN_CONFIG_<FIELD>
   * override plugin_config fields, and PICOMQ_SINK_LOG_LEVEL sets the lowest
   * level logged. Each open reads them from the process environment as the
   * C library holds it (environ) at that moment: a variable set with setenv
   * or removed with unsetenv before open counts, whether that happened
   * before or after the library was loaded. The host must not change the
   * environment from another thread while an open runs (setenv is not
   * thread-safe against readers). A plugin_config key the plugin does not
   * declare, and an override for this KEY naming no declared FIELD, are
   * refused with PICOMQ_BAD_CONFIG naming the nearest declared key.
   * Returns PICOMQ_BAD_CONFIG or PICOMQ_RETRY as RESULTS says, PICOMQ_FATAL
   * for a panic. log may be NULL (the plugin then logs to stderr). On
   * success *out is a non-zero handle. */
  picomq_status (*open)(const char *config, size_t config_len,
                        picomq_log_fn log, void *log_ctx,
                        picomq_instance *out, char *err, size_t err_cap);

  /* Writes one batch. Returns only after the write is durable (PICOMQ_OK) or
   * known not to have happened (any other code). */
  picomq_status (*consume)(picomq_instance inst, const picomq_batch *batch,
                           char *err, size_t err_cap);

  /* JSON snapshot of the instance's counters. */
  picomq_status (*metrics)(picomq_instance inst, char *out, size_t out_cap,
                           size_t *out_len);

  /* Flushes, stops every goroutine of the instance, releases resources and
   * invalidates the handle, even when it returns an error. A consume in
   * flight for the instance on another thread is cancelled: it returns
   * PICOMQ_RETRY (its write did not happen, or happened and is skipped when
   * the batch is replayed), or PICOMQ_OK if the write completed before the
   * cancellation was noticed. close waits for that consume to return before
   * it flushes and releases anything. */
  picomq_status (*close)(picomq_instance inst, char *err, size_t err_cap);
} picomq_sink_api;

/* The one exported entry point. Checks host_major against the plugin's ABI
 * major version and fills min(table_size, sizeof(picomq_sink_api)) bytes
 * of table. */
picomq_status picomq_sink_plugin_init(uint32_t host_major, uint32_t host_minor,
                                      picomq_sink_api *table,
                                      size_t table_size);

typedef picomq_status (*picomq_sink_plugin_init_fn)(uint32_t, uint32_t,
                                                    picomq_sink_api *, size_t);

#ifdef __cplusplus
}
#endif

#endif /* PICOMQ_SINK_H */
