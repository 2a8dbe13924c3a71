package sdk_test

import (
	"context"
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

// A Pending from NewPending behaves as the sequencer's: unanswered until
// the func is called, then Wait returns nil for OK and RETRY otherwise.
func TestNewPending(t *testing.T) {
	for _, ok := range []bool{true, false} {
		p, answer := sdk.NewPending(&sdk.Batch{Topic: "orders", Partition: 3, RangeLast: 41})
		if p.Topic != "orders" || p.Partition != 3 || p.RangeLast != 41 {
			t.Fatalf("Pending = %+v, want the batch's topic, partition and last offset", p)
		}
		if answered, _ := p.Answered(); answered {
			t.Fatal("answered before the func was called")
		}
		answer(ok)
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
