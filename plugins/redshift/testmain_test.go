package redshift_test

import (
	"github.com/picomq/heavy-sinks/plugins/redshift"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// The test binary is a library of its own: it registers the sink once, and
// the tests open instances through the SDK's Go API exactly as the C ABI
// does (sdk.Open, sdk.Consume, sdk.Metrics, sdk.Close).
func init() { sdk.Register(redshift.Plugin()) }
