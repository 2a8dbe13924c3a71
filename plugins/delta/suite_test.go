package delta_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/plugins/delta/deltatest"
)

// TestSuite runs deltatest's behaviour tests in-process through the SDK's
// Go API (the plugin is registered in bench_test.go's init); e2e/delta runs
// the same tests through the C host.
func TestSuite(t *testing.T) { deltatest.Run(t, sinkdriver.InProcess()) }
