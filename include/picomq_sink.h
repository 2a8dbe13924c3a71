/*
 * picomq_sink.h - the C ABI between a PicoMQ connector runtime (the host) and
 * a sink plugin shared library. ABI version 1.5.
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
 *     runs at a time, unless describe() declares "concurrent_consume": true;
 *     then consume calls of one instance (batches of different
 *     topic-partitions) run concurrently and the plugin may write batches
 *     bound for one destination together, each call still answering for its
 *     own batch. A host may call concurrently either way. close cancels every
 *     consume in flight (see close below) and waits for them to return.
 *     metrics never waits for a consume.
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
 *   A consume may also return PICOMQ_OK having REJECTED some records (ABI
 *   1.1, see picomq_batch.reject): every other record is durably written,
 *   the rejected ones never will be, and the host decides what becomes of
 *   them (a dead-letter topic) before it commits the offset.
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
#define PICOMQ_SINK_ABI_MINOR 5

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
 * a key); ptr != NULL with len == 0 is an empty, present value, and then ptr
 * may be any non-NULL value (an empty Rust slice's dangling pointer): the
 * plugin never reads through it. The same holds for an empty array. */
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

/* Why a record was rejected (ABI 1.1): a small, closed set a host can act
 * on without parsing messages. Hosts treat a value they do not know (from a
 * later minor version) like PICOMQ_REJECT_VALUE; 0 is never valid. */
typedef int32_t picomq_reject_reason;
/* A value that cannot be represented in the destination: a type the column
 * cannot take, a number out of range, a decimal that would need rounding,
 * null or absence in a non-nullable field. */
#define PICOMQ_REJECT_VALUE 1
/* A value longer than the destination holds (a byte limit). */
#define PICOMQ_REJECT_SIZE 2
/* A payload that is not what the batch schema says: not JSON (or not a JSON
 * object where one is needed), not valid UTF-8 text. */
#define PICOMQ_REJECT_ENCODING 3

/* Per-record rejection callback (ABI 1.1). index is the record's position
 * in batch->records; msg is UTF-8, not NUL-terminated, borrowed for the call
 * (the host copies it). ctx is batch->reject_ctx. */
typedef void (*picomq_reject_fn)(void *ctx, size_t index,
                                 picomq_reject_reason reason, const char *msg,
                                 size_t msg_len);

/* One batch: records of one topic partition, in offset order.
 *
 * ABI 1.1 appends reject and reject_ctx. A 1.0 host passes a struct_size
 * that ends at record_count: the plugin must not read past struct_size, and
 * treats a short struct like reject == NULL.
 *
 * REJECTIONS (ABI 1.1). When reject is not NULL the host accepts per-record
 * outcomes: a plugin that finds records which can never be written (the
 * same batch retried cannot succeed for them) may call reject once per such
 * record, write every other record, and return PICOMQ_OK. That OK means:
 * every record not rejected is durably written, and no rejected record is
 * (nor will a replay write it). Rules:
 *   - reject is called only during consume, on the thread that called
 *     consume, at most once per index, with index < record_count and
 *     reason != 0; the host may answer a breach as a broken contract.
 *   - Rejections count only when consume returns PICOMQ_OK. With any other
 *     result the host forgets them: the batch as a whole did not happen.
 *   - Rejections are a function of the batch and the destination's
 *     definition: a replay of a batch already written (attempt > 1, or a
 *     restart) reports the same records again, so a host that crashed before
 *     it dealt with them learns them again.
 *   - A failure that is not one record's (a network error, a topic name or
 *     schema the plugin cannot take) is still RETRY or FATAL for the whole
 *     batch. Rejecting every record of a batch is allowed.
 * When reject is NULL (a 1.0 host, or a host that does not want rejections)
 * a plugin fails the batch as ABI 1.0 says: PICOMQ_FATAL naming the first
 * record that cannot be written. A 1.0 plugin ignores the field, so a 1.1
 * host must be ready for FATAL either way; the plugin's abi_minor tells it
 * whether rejections can ever come.
 *
 * VALUE SCHEMA (ABI 1.3). value_schema, when ptr is not NULL, is the type of
 * every payload of the batch: UTF-8 JSON of a struct type in the Delta
 * protocol's schema serialization, {"type":"struct","fields":[{"name":..,
 * "type":..,"nullable":..,"metadata":{}}]}, where a type is "long",
 * "integer", "short", "byte", "float", "double", "boolean", "string",
 * "binary", "date", "timestamp", "timestamp_ntz", "decimal(p,s)", or a
 * struct, {"type":"array","elementType":..,"containsNull":..} or
 * {"type":"map","keyType":..,"valueType":..,"valueContainsNull":..}. A host
 * sets it when it decoded the payloads into JSON objects from a schema (Avro,
 * Protobuf) and knows their type; each key of a payload's object is a field
 * of it. It is a hint a plugin may use (the Delta sink types the columns of
 * tables it creates or evolves with it) or ignore. ptr == NULL: no schema. A
 * 1.2 host's struct_size ends at reject_ctx (PICOMQ_BATCH_SIZE_1_2): the
 * plugin then sees none.
 *
 * REDRIVE (ABI 1.4). When redrive_topic.ptr is not NULL the batch is dead
 * letters put back by a redrive: topic, partition and each record's offset
 * are the records' ORIGINAL coordinates (what the destination stores), while
 * redrive_topic, redrive_partition and redrive_offsets[i] (record_count
 * entries, strictly increasing) are where each record sits in the
 * dead-letter topic: the sequence an exactly-once plugin dedupes a redrive
 * on, since the original offsets are at or below what it already recorded
 * for the original partition. A host sends such a batch only to a plugin
 * whose describe() declares "redrive": true; a plugin that declares it and
 * cannot redrive exactly once with its configuration answers PICOMQ_FATAL.
 * A 1.3 host's struct_size ends at value_schema (PICOMQ_BATCH_SIZE_1_3): the
 * plugin then sees no redrive.
 *
 * PIPELINED BATCHES (ABI 1.5). range_last is the offset of the last record of
 * the host's batch, records the host kept back (dead letters, records a
 * transform dropped) included; 0 means unknown: the last record's offset.
 * When has_follows is 1 the batch is pipelined: the host sent it while the
 * batch of the same topic partition whose range_last is follows was not
 * answered yet. The rule a plugin declaring "pipelined" keeps for such a
 * batch B following P: B is written only in the same atomic commit
 * (transaction) as P's records, or after P was answered PICOMQ_OK; if P is
 * answered anything else, B is not written and is answered PICOMQ_RETRY.
 * (An exactly-once destination records
 * a partition's progress as one number; writing B without P would move it
 * past P's records, and a replay of P would then be skipped.) The host's
 * threads may call consume for B before, during or after P's call. A host
 * sets has_follows only for a plugin whose describe() declares "pipelined":
 * true, and keeps has_follows 0 for redrive batches. A 1.4 host's
 * struct_size ends at redrive_offsets (PICOMQ_BATCH_SIZE_1_4): the plugin then
 * takes range_last as the last record's offset and sees no batch as
 * pipelined. */
typedef struct picomq_batch {
  size_t struct_size; /* sizeof(picomq_batch) as the host knows it */
  uint32_t attempt;   /* 1 for the first delivery, up to 5 for the same batch */
  uint32_t partition;
  picomq_bytes topic;  /* UTF-8 */
  picomq_bytes schema; /* "json", "raw", "text", "proto", "flatbuffer", "avro" */
  const picomq_record *records;
  size_t record_count;
  /* ABI 1.1 */
  picomq_reject_fn reject; /* NULL: fail the batch rather than reject records */
  void *reject_ctx;
  /* ABI 1.3 */
  picomq_bytes value_schema; /* ptr == NULL: none */
  /* ABI 1.4 */
  picomq_bytes redrive_topic;       /* UTF-8; ptr == NULL: not a redrive */
  uint32_t redrive_partition;       /* of redrive_topic */
  const uint64_t *redrive_offsets;  /* record_count entries; NULL unless a redrive */
  /* ABI 1.5 */
  uint64_t range_last;  /* offset of the last record of the host's batch, records it kept back included; 0: unknown (last record's) */
  uint64_t follows;     /* range_last of the partition's batch this one follows; valid only when has_follows */
  uint32_t has_follows; /* 1: a pipelined batch (only to a library whose describe() says "pipelined": true) */
} picomq_batch;

/* struct_size of a 1.0 host's batch, the smallest a 1.1 plugin accepts. */
#define PICOMQ_BATCH_SIZE_1_0 \
  (offsetof(picomq_batch, record_count) + sizeof(size_t))

/* struct_size of a 1.1 or 1.2 host's batch: it ends at reject_ctx. */
#define PICOMQ_BATCH_SIZE_1_2 \
  (offsetof(picomq_batch, reject_ctx) + sizeof(void *))

/* struct_size of a 1.3 host's batch: it ends at value_schema. */
#define PICOMQ_BATCH_SIZE_1_3 \
  (offsetof(picomq_batch, value_schema) + sizeof(picomq_bytes))

/* struct_size of a 1.4 host's batch: it ends at redrive_offsets. */
#define PICOMQ_BATCH_SIZE_1_4 \
  (offsetof(picomq_batch, redrive_offsets) + sizeof(const uint64_t *))

/* An open instance. 0 is never a valid handle. */
typedef uint64_t picomq_instance;

/* Log callback. msg is UTF-8 and not NUL-terminated: a message followed by
 * its attributes as key=value pairs. ctx is the log_ctx given to open, opaque
 * to the plugin: any value, not necessarily an address (as reject_ctx). */
typedef void (*picomq_log_fn)(void *ctx, int32_t level, const char *msg,
                              size_t msg_len);

typedef struct picomq_sink_api {
  size_t struct_size; /* on return: sizeof(picomq_sink_api) as the plugin knows it */
  uint32_t abi_major; /* set by the plugin */
  uint32_t abi_minor; /* set by the plugin */

  /* Static JSON: plugin name and version, ABI version, Go version, and the
   * plugin_config schema (per key: type, default, required, secret).
   * ABI 1.2 adds an optional "metrics" array declaring numbers of the
   * metrics JSON: {"field": "sink.checkpoint_cpu_ms", "name":
   * "sink_checkpoint_cpu_seconds_total", "type": "counter"|"gauge",
   * "unit": "seconds"|"bytes" (absent: none), "scale": factor from the
   * JSON value to the unit's base unit (absent: 1), "help": text}. A field
   * without a declaration (every field of an older plugin) has no type.
   * ABI 1.4 adds an optional "redrive": true, the plugin takes redrive
   * batches (picomq_batch.redrive_topic) exactly once. ABI 1.5 adds an
   * optional "pipelined": true, the plugin keeps the rule of pipelined
   * batches (picomq_batch.has_follows) and a host may send a partition's
   * next batch before the one before it was answered. */
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
   * known not to have happened (any other code). With batch->reject set
   * (ABI 1.1) OK may come with records rejected; see picomq_batch. */
  picomq_status (*consume)(picomq_instance inst, const picomq_batch *batch,
                           char *err, size_t err_cap);

  /* JSON snapshot of the instance's counters. ABI 1.2: "records" counts
   * records written, "skipped" the records of a replayed batch the
   * destination already had (before 1.2 they counted in "records"). */
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
