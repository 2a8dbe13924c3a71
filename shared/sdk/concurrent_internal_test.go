package sdk

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"
)

// meetSink's Consume returns only once two calls are inside it at the same
// time, or after a second.
type meetSink struct {
	inside  atomic.Int32
	met     chan struct{}
	consume atomic.Int32
}

type meetConfig struct{}

func (s *meetSink) Open(context.Context, *meetConfig, *Host) error { return nil }
func (s *meetSink) Close(context.Context) error {
	if n := s.inside.Load(); n != 0 {
		return Fatalf("close ran with %d consume calls inside", n)
	}
	return nil
}
func (s *meetSink) Consume(ctx context.Context, b *Batch) error {
	s.consume.Add(1)
	if s.inside.Add(1) == 2 {
		close(s.met)
	}
	defer s.inside.Add(-1)
	select {
	case <-s.met:
		return nil
	case <-time.After(time.Second):
		return Retryf("no other consume came in")
	}
}

// withPlugin registers p for the test, in place of the test binary's
// probe plugin.
func withPlugin[C any](t *testing.T, p Plugin[C]) {
	regMu.Lock()
	saved := registered
	registered = nil
	regMu.Unlock()
	Register(p)
	t.Cleanup(func() {
		regMu.Lock()
		registered = saved
		regMu.Unlock()
	})
}

func twoConsumes(t *testing.T, concurrent bool) []error {
	sink := &meetSink{met: make(chan struct{})}
	withPlugin(t, Plugin[meetConfig]{Name: "meet_sink", ConcurrentConsume: concurrent,
		New: func() Sink[meetConfig] { return sink }})
	def, _ := json.Marshal(Definition{Key: "meet", PluginConfig: json.RawMessage(`{}`)})
	h, err := Open(def, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for p := range uint32(2) {
		go func() {
			errs <- Consume(h, &Batch{Topic: "t", Partition: p, Schema: "json", Records: []Record{{Offset: 1, Payload: []byte(`1`)}}})
		}()
	}
	got := []error{<-errs, <-errs}
	if err := Close(h); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestConcurrentConsumeLetsCallsOverlap(t *testing.T) {
	for _, err := range twoConsumes(t, true) {
		if err != nil {
			t.Fatalf("with ConcurrentConsume the two calls did not meet: %v", err)
		}
	}
	d, err := Describe()
	if err != nil {
		t.Fatal(err)
	}
	var desc struct {
		Concurrent bool `json:"concurrent_consume"`
	}
	if err := json.Unmarshal(d, &desc); err != nil || !desc.Concurrent {
		t.Fatalf("describe() does not declare concurrent_consume: %s", d)
	}
}

func TestConsumeIsSerialisedByDefault(t *testing.T) {
	for _, err := range twoConsumes(t, false) {
		if StatusOf(err) != StatusRetry {
			t.Fatalf("without ConcurrentConsume two calls were inside Consume at once (%v)", err)
		}
	}
}
