package redshift_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/plugins/redshift/redshifttest"
)

// TestSuite runs the behaviour suite in-process, through the SDK's Go API
// (e2e/redshift runs the same suite through the built .so in the C host).
func TestSuite(t *testing.T) { redshifttest.Run(t, sinkdriver.InProcess()) }
