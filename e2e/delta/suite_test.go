package delta_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/plugins/delta/deltatest"
)

// TestSuite runs deltatest's behaviour tests through the built .so in the C
// host (plugins/delta runs them in-process).
func TestSuite(t *testing.T) {
	deltatest.Run(t, sinkdriver.CHost(func(tb testing.TB) string {
		return testenv.Library(tb, "libpicomq_connector_delta_sink.so")
	}))
}
