// Command sink is built with -buildmode=c-shared into
// libpicomq_connector_delta_sink.so; the C ABI lives in shared/sdk/cabi.
package main

import (
	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/shared/sdk"
	_ "github.com/picomq/heavy-sinks/shared/sdk/cabi"
)

func main() {}

// profiled is the identity in release builds; with -tags picomqprof it
// adds the CPU profiler of profile.go.
func init() { sdk.Register(profiled(delta.Plugin())) }
