package hosttest

import (
	"github.com/picomq/heavy-sinks/internal/hostopt"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// The options below make the host do what the runtime never asks for, to
// exercise the host's contract checks and the plugins' handling of older
// and newer hosts. They set fields of the internal hostopt settings that
// hostclient puts on the wire with fixed defaults.

type (
	startConfig = hostopt.Start[hostclient.LogLine]
	callConfig  = hostopt.Call
)

// Wrapper runs the host under another program, for example
// Wrapper("valgrind", "--error-exitcode=99").
func Wrapper(argv ...string) hostclient.Option {
	return func(c *startConfig) { c.Wrapper = argv }
}

// Quarantine sets how many bytes of poisoned, lent memory the host keeps
// allocated before freeing it (host flag -q). Default: the host's, 32 MiB.
func Quarantine(bytes int) hostclient.Option {
	return func(c *startConfig) { c.Quarantine = bytes }
}

// ErrCap sets err_cap, the size of the error buffer the host passes to
// open, consume and close. Default 1024; 0 passes err == NULL, err_cap 0.
func ErrCap(n int) hostclient.CallOption { return func(c *callConfig) { c.ErrCap = n } }

// OutCap sets the size of the first output buffer for describe and metrics;
// the host grows it to *out_len + 1 on BUFFER_TOO_SMALL. Default 64.
func OutCap(n int) hostclient.CallOption { return func(c *callConfig) { c.OutCap = n } }

// CallCount stores in *n how many times describe or metrics was called:
// 1, or more after BUFFER_TOO_SMALL.
func CallCount(n *int) hostclient.CallOption { return func(c *callConfig) { c.Calls = n } }

// TableSize sets the table_size Load passes to picomq_sink_plugin_init,
// as an older or newer host would. Default sizeof(picomq_sink_api).
func TableSize(n int) hostclient.CallOption { return func(c *callConfig) { c.TableSize = n } }

// ABI makes Load pass major.minor to picomq_sink_plugin_init instead of
// the host's version (Host.ABI), as a host built against another version
// of the header would.
func ABI(major, minor uint32) hostclient.CallOption {
	return func(c *callConfig) { c.ABI = &[2]uint32{major, minor} }
}

// Batch1_0 makes Consume pass the batch as a host built against ABI 1.0
// would: struct_size PICOMQ_BATCH_SIZE_1_0, no reject callback.
func Batch1_0() hostclient.CallOption { return func(c *callConfig) { c.Batch1_0 = true } }

// Batch1_2 makes Consume pass the batch as a host built against ABI 1.1 or
// 1.2 would: struct_size ends at reject_ctx, so the plugin sees no
// value_schema.
func Batch1_2() hostclient.CallOption { return func(c *callConfig) { c.Batch1_2 = true } }

// Batch1_3 makes Consume pass the batch as a host built against ABI 1.3
// would: struct_size ends at value_schema, so the plugin sees no redrive.
func Batch1_3() hostclient.CallOption { return func(c *callConfig) { c.Batch1_3 = true } }

// Batch1_4 makes Consume pass the batch as a host built against ABI 1.4
// would: struct_size ends at redrive_offsets, so the plugin sees no
// range_last and no batch as pipelined.
func Batch1_4() hostclient.CallOption { return func(c *callConfig) { c.Batch1_4 = true } }

// DanglingEmpties makes Consume pass every empty byte string (topic,
// schema, key, header, payload) and every empty array (records, headers,
// redrive offsets) as a non-NULL pointer that is no address, as a Rust host
// passes an empty slice. The header allows it; an absent key stays NULL.
func DanglingEmpties() hostclient.CallOption { return func(c *callConfig) { c.Dangling = true } }

// NoLog makes Open pass log == NULL, so the plugin logs to stderr.
func NoLog() hostclient.CallOption { return func(c *callConfig) { c.NoLog = true } }
