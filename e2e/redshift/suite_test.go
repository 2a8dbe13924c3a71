package redshift_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/plugins/redshift/redshifttest"
)

// TestSuite runs the behaviour suite through the built .so in the C host
// (plugins/redshift runs the same suite in-process).
func TestSuite(t *testing.T) { redshifttest.Run(t, sinkdriver.CHost(libPath)) }
