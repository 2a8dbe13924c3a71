// Command sink is the c-shared entry point of libpicomq_connector_delta_sink.so:
// it registers the Delta Lake sink with the SDK, whose cabi package exports
// the C ABI.
package main

import (
	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/shared/sdk"
	_ "github.com/picomq/heavy-sinks/shared/sdk/cabi"
)

func init() {
	sdk.Register(sdk.Plugin[delta.Config]{Name: delta.PluginName, New: delta.New, ValidatesPayloads: true})
}

func main() {}
