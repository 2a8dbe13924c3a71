package cabi

/*
#cgo CFLAGS: -I${SRCDIR}/../../../include -Wall -Werror
#include <stdlib.h>
#include "picomq_sink.h"

void picomq_cabi_call_log(picomq_log_fn fn, uintptr_t ctx, int32_t level, const char *msg, size_t len);
void picomq_cabi_call_reject(const picomq_batch *batch, size_t index, picomq_reject_reason reason, const char *msg, size_t len);
char **picomq_cabi_environ(void);
*/
import "C"

import (
	"log/slog"
	"os"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/picomq/heavy-sinks/shared/abi"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

//export picomq_sink_v1_describe
func picomq_sink_v1_describe(out *C.char, outCap C.size_t, outLen *C.size_t) (st C.picomq_status) {
	defer guard(&st, nil, 0)
	doc, err := sdk.Describe()
	if err != nil {
		return status(err)
	}
	return writeOut(doc, out, outCap, outLen)
}

// logCtx is an integer, never a Go pointer: see picomq_cabi_call_log.
//
//export picomq_sink_v1_open
func picomq_sink_v1_open(config *C.char, configLen C.size_t, logFn C.picomq_log_fn, logCtx C.uintptr_t,
	out *C.picomq_instance, errBuf *C.char, errCap C.size_t) (st C.picomq_status) {
	defer guard(&st, errBuf, errCap)
	if out == nil || (config == nil && configLen > 0) {
		writeErr(errBuf, errCap, "open: NULL argument")
		return C.PICOMQ_FATAL
	}
	*out = 0
	var log sdk.LogFunc
	if logFn != nil {
		log = func(level slog.Level, line string) {
			C.picomq_cabi_call_log(logFn, logCtx, C.int32_t(level), (*C.char)(unsafe.Pointer(unsafe.StringData(line))), C.size_t(len(line)))
		}
	}
	def := C.GoBytes(unsafe.Pointer(config), C.int(configLen))
	env := environ()
	syncGoEnv(env)
	h, err := sdk.OpenEnv(def, log, env)
	if err != nil {
		writeErr(errBuf, errCap, err.Error())
		return status(err)
	}
	*out = C.picomq_instance(h)
	return C.PICOMQ_OK
}

//export picomq_sink_v1_consume
func picomq_sink_v1_consume(inst C.picomq_instance, cb *C.picomq_batch, errBuf *C.char, errCap C.size_t) (st C.picomq_status) {
	defer guard(&st, errBuf, errCap)
	b, err := batchFromC(cb)
	if err == nil {
		err = sdk.Consume(uint64(inst), b)
	}
	if err != nil {
		writeErr(errBuf, errCap, err.Error())
		return status(err)
	}
	// Rejections go to the host only with OK, on the thread that called
	// consume, as the header says (batchFromC accepted them only when the
	// host's batch has reject set).
	for _, r := range b.Rejections() {
		msg := r.Err.Error()
		C.picomq_cabi_call_reject(cb, C.size_t(r.Index), C.picomq_reject_reason(r.Reason),
			(*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
	}
	return C.PICOMQ_OK
}

//export picomq_sink_v1_metrics
func picomq_sink_v1_metrics(inst C.picomq_instance, out *C.char, outCap C.size_t, outLen *C.size_t) (st C.picomq_status) {
	defer guard(&st, nil, 0)
	doc, err := sdk.Metrics(uint64(inst))
	if err != nil {
		return status(err)
	}
	return writeOut(doc, out, outCap, outLen)
}

//export picomq_sink_v1_close
func picomq_sink_v1_close(inst C.picomq_instance, errBuf *C.char, errCap C.size_t) (st C.picomq_status) {
	defer guard(&st, errBuf, errCap)
	if err := sdk.Close(uint64(inst)); err != nil {
		writeErr(errBuf, errCap, err.Error())
		return status(err)
	}
	return C.PICOMQ_OK
}

// environ copies the C library's environment as it is now. The Go runtime
// of a c-shared library copied it once, at load, and os.Getenv never sees a
// setenv(3) made after that; the host injects secrets exactly that way, so
// open reads environ itself. Each string is copied as it is reached. The
// header asks hosts not to change the environment while an open runs:
// setenv in another thread may free the array being read.
func environ() []string {
	var out []string
	p := C.picomq_cabi_environ()
	for p != nil && *p != nil {
		out = append(out, C.GoString(*p))
		p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p)))
	}
	return out
}

// syncGoEnv makes the Go environment what the C library's is at this open.
// The plugin's own settings come from env (OpenEnv), but the libraries it
// uses read os.Getenv: the AWS SDK's default chain (AWS_ACCESS_KEY_ID,
// AWS_ENDPOINT_URL_*), Google's and Azure's default credentials. Without
// this they would see the environment as it was when the library loaded.
// Only what differs is set or unset; Go passes it on to the C library,
// which then already holds that value.
func syncGoEnv(env []string) {
	seen := make(map[string]bool, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		seen[k] = true
		if cur, set := os.LookupEnv(k); !set || cur != v {
			os.Setenv(k, v)
		}
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "" && !seen[k] {
			os.Unsetenv(k)
		}
	}
}

// The ABI numbers the SDK and the host client share (shared/abi) are the
// header's: a mismatch fails the build (a constant index out of range of a
// one-element array).
var _ = func() (x [1]struct{}) {
	_ = x[C.PICOMQ_OK-abi.StatusOK]
	_ = x[abi.StatusOK-C.PICOMQ_OK]
	_ = x[C.PICOMQ_RETRY-abi.StatusRetry]
	_ = x[abi.StatusRetry-C.PICOMQ_RETRY]
	_ = x[C.PICOMQ_FATAL-abi.StatusFatal]
	_ = x[abi.StatusFatal-C.PICOMQ_FATAL]
	_ = x[C.PICOMQ_BAD_CONFIG-abi.StatusBadConfig]
	_ = x[abi.StatusBadConfig-C.PICOMQ_BAD_CONFIG]
	_ = x[C.PICOMQ_ABI_MISMATCH-abi.StatusABIMismatch]
	_ = x[abi.StatusABIMismatch-C.PICOMQ_ABI_MISMATCH]
	_ = x[C.PICOMQ_BUFFER_TOO_SMALL-abi.StatusBufferTooSmall]
	_ = x[abi.StatusBufferTooSmall-C.PICOMQ_BUFFER_TOO_SMALL]
	_ = x[C.PICOMQ_SINK_ABI_MAJOR-abi.Major]
	_ = x[abi.Major-C.PICOMQ_SINK_ABI_MAJOR]
	_ = x[C.PICOMQ_SINK_ABI_MINOR-abi.Minor]
	_ = x[abi.Minor-C.PICOMQ_SINK_ABI_MINOR]
	_ = x[C.PICOMQ_REJECT_VALUE-abi.RejectValue]
	_ = x[abi.RejectValue-C.PICOMQ_REJECT_VALUE]
	_ = x[C.PICOMQ_REJECT_SIZE-abi.RejectSize]
	_ = x[abi.RejectSize-C.PICOMQ_REJECT_SIZE]
	_ = x[C.PICOMQ_REJECT_ENCODING-abi.RejectEncoding]
	_ = x[abi.RejectEncoding-C.PICOMQ_REJECT_ENCODING]
	return
}

// guard turns a panic in the shim itself into a FATAL result.
func guard(st *C.picomq_status, errBuf *C.char, errCap C.size_t) {
	if p := recover(); p != nil {
		writeErr(errBuf, errCap, (&sdk.PanicError{Value: p}).Error())
		*st = C.PICOMQ_FATAL
	}
}

func status(err error) C.picomq_status { return C.picomq_status(sdk.StatusOf(err)) }

// batchFromC views the host's batch without copying payloads, keys or
// headers: they stay in host memory for the duration of the call.
func batchFromC(cb *C.picomq_batch) (*sdk.Batch, error) {
	if cb == nil {
		return nil, sdk.Fatalf("consume: NULL batch")
	}
	// A 1.0 host's batch ends at record_count; the 1.1 fields are read only
	// when struct_size covers them.
	if uintptr(cb.struct_size) < uintptr(C.PICOMQ_BATCH_SIZE_1_0) {
		return nil, sdk.Fatalf("consume: batch struct_size %d is smaller than ABI 1.0's %d", cb.struct_size, C.PICOMQ_BATCH_SIZE_1_0)
	}
	withReject := uintptr(cb.struct_size) >= unsafe.Offsetof(cb.reject_ctx)+unsafe.Sizeof(cb.reject_ctx) && cb.reject != nil
	n := int(cb.record_count)
	if n > 0 && cb.records == nil {
		return nil, sdk.Fatalf("consume: NULL records with record_count %d", n)
	}
	b := &sdk.Batch{
		Topic:     string(view(&cb.topic)),
		Partition: uint32(cb.partition),
		Schema:    string(view(&cb.schema)),
		Attempt:   uint32(cb.attempt),
		Records:   make([]sdk.Record, n),
	}
	if withReject {
		b.AcceptRejections()
	}
	// ABI 1.3: a 1.2 host's batch ends before value_schema.
	if uintptr(cb.struct_size) >= unsafe.Offsetof(cb.value_schema)+unsafe.Sizeof(cb.value_schema) {
		b.ValueSchema = view(&cb.value_schema)
	}
	// ABI 1.4: a 1.3 host's batch ends before the redrive fields. The
	// offsets are copied: n words, and the sink may keep them in a group.
	if uintptr(cb.struct_size) >= unsafe.Offsetof(cb.redrive_offsets)+unsafe.Sizeof(cb.redrive_offsets) && cb.redrive_topic.ptr != nil {
		if n > 0 && cb.redrive_offsets == nil {
			return nil, sdk.Fatalf("consume: redrive batch with NULL redrive_offsets and record_count %d", n)
		}
		r := &sdk.Redrive{Topic: string(view(&cb.redrive_topic)), Partition: uint32(cb.redrive_partition), Offsets: make([]uint64, n)}
		if n > 0 {
			for i, o := range unsafe.Slice(cb.redrive_offsets, n) {
				r.Offsets[i] = uint64(o)
			}
		}
		b.Redrive = r
	}
	// ABI 1.5: a 1.4 host's batch ends before range_last. A RangeLast of 0
	// (unknown, or an older host) becomes the last record's offset in
	// sdk.Consume, which also checks the two against the records.
	if uintptr(cb.struct_size) >= unsafe.Offsetof(cb.has_follows)+unsafe.Sizeof(cb.has_follows) {
		b.RangeLast = uint64(cb.range_last)
		switch cb.has_follows {
		case 0:
		case 1:
			f := uint64(cb.follows)
			b.Follows = &f
		default:
			return nil, sdk.Fatalf("consume: batch has_follows %d, want 0 or 1", cb.has_follows)
		}
	}
	if n == 0 {
		return b, nil
	}
	crs := unsafe.Slice(cb.records, n)
	headerCount := 0
	for i := range crs {
		headerCount += int(crs[i].header_count)
	}
	headers := make([]sdk.Header, headerCount)
	for i := range crs {
		cr := &crs[i]
		r := &b.Records[i]
		r.Offset = uint64(cr.offset)
		r.Timestamp = int64(cr.timestamp_ms)
		r.Key = view(&cr.key)
		r.Payload = view(&cr.payload)
		if hc := int(cr.header_count); hc > 0 {
			if cr.headers == nil {
				return nil, sdk.Fatalf("consume: record %d has NULL headers with header_count %d", i, hc)
			}
			r.Headers = headers[:hc:hc]
			headers = headers[hc:]
			chs := unsafe.Slice(cr.headers, hc)
			for j := range chs {
				r.Headers[j] = sdk.Header{Key: view(&chs[j].key), Value: view(&chs[j].value)}
			}
		}
	}
	return b, nil
}

// view returns host bytes without copying; nil for an absent value. It
// takes the host's struct by address and never copies an empty value's
// pointer: the header allows any non-NULL one there (a Rust host passes its
// empty slices' dangling pointer), and Go aborts the process when it copies
// a stack holding a pointer below 4096 (see picomq_cabi_call_log).
func view(p *C.picomq_bytes) []byte {
	switch {
	case p.ptr == nil:
		return nil
	case p.len == 0:
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p.ptr)), int(p.len))
}

// writeOut copies a document into a host buffer, snprintf-style.
func writeOut(doc []byte, out *C.char, outCap C.size_t, outLen *C.size_t) C.picomq_status {
	if outLen != nil {
		*outLen = C.size_t(len(doc))
	}
	if out == nil || int(outCap) < len(doc)+1 {
		return C.PICOMQ_BUFFER_TOO_SMALL
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(out)), int(outCap))
	copy(dst, doc)
	dst[len(doc)] = 0
	return C.PICOMQ_OK
}

// writeErr copies msg into the host's error buffer, NUL-terminated and cut
// on a UTF-8 boundary.
func writeErr(buf *C.char, bufCap C.size_t, msg string) {
	if buf == nil || bufCap == 0 {
		return
	}
	n := min(len(msg), int(bufCap)-1)
	for n > 0 && n < len(msg) && !utf8.RuneStart(msg[n]) {
		n--
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(bufCap))
	copy(dst, msg[:n])
	dst[n] = 0
}
