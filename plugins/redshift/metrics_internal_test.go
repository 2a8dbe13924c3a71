package redshift

import (
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

// Every number of Metrics() is declared for describe() (ABI 1.2), and
// nothing else is.
func TestMetricsDeclared(t *testing.T) {
	sdktest.CheckDeclared(t, (&Sink{}).Metrics(), metrics)
}
