//go:build !picomqprof

package main

import (
	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// profiled: release builds have no profiler (and no runtime/pprof).
func profiled(p sdk.Plugin[delta.Config]) sdk.Plugin[delta.Config] { return p }
