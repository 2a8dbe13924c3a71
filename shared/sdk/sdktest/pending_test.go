package sdktest_test

import (
	"context"
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

// A Pending from NewPending behaves as the SDK's: unanswered until the
// func is called, then Wait returns nil for OK and RETRY otherwise.
func TestNewPending(t *testing.T) {
	for _, ok := range []bool{true, false} {
		p, answer := sdktest.NewPending("orders", 3, 41)
		if answered, _ := p.Answered(); answered {
			t.Fatal("answered before the func was called")
		}
		answer(ok)
		answer(!ok) // once
		<-p.Done()
		if answered, gotOK := p.Answered(); !answered || gotOK != ok {
			t.Fatalf("Answered() = %v, %v after answering %v", answered, gotOK, ok)
		}
		err := p.Wait(context.Background())
		if ok && err != nil {
			t.Fatalf("Wait after OK: %v", err)
		}
		if !ok && sdk.StatusOf(err) != sdk.StatusRetry {
			t.Fatalf("Wait after a failure: %v, want RETRY", err)
		}
	}
}
