package hosttest

import (
	"context"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// StartTest starts a host for a test and closes it in tb.Cleanup. The
// cleanup reports an unclean exit as a test error, unless the host had
// already died before (a test that crashes the host on purpose sees that
// in its calls), and logs the host's stderr when the test failed.
func StartTest(tb testing.TB, binary string, opts ...hostclient.Option) *hostclient.Host {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := hostclient.Start(ctx, binary, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		died := h.Err() != nil
		if err := h.Close(); err != nil && !died {
			tb.Errorf("closing the host: %v", err)
		} else if tb.Failed() {
			tb.Logf("host stderr:\n%s", h.Stderr())
		}
	})
	return h
}
