// Package cabi exports the PicoMQ sink plugin C ABI (include/picomq_sink.h)
// from a Go c-shared library. A plugin's package main imports it for its
// side effect:
//
//	import _ "github.com/picomq/heavy-sinks/shared/sdk/cabi"
//
// It is a thin, uniform shim: C types in, sdk calls, C types out, every export
// guarded by recover. The exported symbols are picomq_sink_plugin_init (the
// one entry point hosts look up) and the picomq_sink_v1_* functions it puts
// in the table; hosts call those only through the table.
package cabi
