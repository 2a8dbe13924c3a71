package observe_test

import (
	"context"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/observe"
	"github.com/picomq/heavy-sinks/connect/pipeline"
)

// destPlugin is a plugin whose sink writes to a templated table and that
// reports its last commit in metrics().
type destPlugin struct{ calls int }

func (p *destPlugin) Destination() string { p.calls++; return "s3://lake/{topic_segment[-1]}" }
func (*destPlugin) Metrics(context.Context) (string, error) {
	return `{"batches":2,"last_commits":[{"table":"s3://lake/eu","version":7,"records":3,"time":"2026-01-02T03:04:05Z"}]}`, nil
}

// The freshness metrics are labelled with the destination template (one
// value per sink), count only batches consume() returned OK for, and keep
// the newest record timestamp: an older batch committed later does not
// move it back.
func TestFreshness(t *testing.T) {
	m := observe.NewMetrics()
	p := &destPlugin{}
	m.Add(fakeSink{state: pipeline.StateRunning}, p)
	newest := time.Now().Add(-90 * time.Second).Truncate(time.Millisecond)
	m.Delivered(pipeline.Delivery{Sink: "fake", Topic: "orders.eu", Attempt: 1, Outcome: pipeline.Retry, Took: time.Second, Newest: newest.Add(time.Hour)})
	m.Delivered(pipeline.Delivery{Sink: "fake", Topic: "orders.eu", Attempt: 2, Outcome: pipeline.OK, Took: 250 * time.Millisecond, Newest: newest})
	m.Delivered(pipeline.Delivery{Sink: "fake", Topic: "orders.us", Attempt: 1, Outcome: pipeline.OK, Took: 50 * time.Millisecond, Newest: newest.Add(-time.Hour)})
	// Nothing reached consume(): every record filtered.
	m.Delivered(pipeline.Delivery{Sink: "fake", Topic: "orders.us", Attempt: 0, Outcome: pipeline.OK, Newest: newest.Add(time.Minute)})
	srv := httptest.NewServer(observe.Handler(m))
	defer srv.Close()
	mfs := scrape(t, srv)
	labels := []string{"sink_key=fake", "table=s3://lake/{topic_segment[-1]}"}
	if v, _ := value(t, mfs, "picomq_connect_committed_event_timestamp_seconds", labels...); math.Abs(v-float64(newest.UnixMilli())/1000) > 1e-6 {
		t.Errorf("newest committed event timestamp %v, want %v", v, float64(newest.UnixMilli())/1000)
	}
	if v, _ := value(t, mfs, "picomq_connect_committed_event_age_seconds", labels...); v < 90 || v > 100 {
		t.Errorf("committed event age %v s, want about 90", v)
	}
	mf := mfs["picomq_connect_commit_duration_seconds"]
	if mf == nil || len(mf.GetMetric()) != 1 {
		t.Fatalf("commit duration series: %v", mf)
	}
	h := mf.GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 2 || math.Abs(h.GetSampleSum()-0.3) > 1e-9 {
		t.Errorf("commit duration count %d sum %v, want 2 and 0.3 (OK attempts only)", h.GetSampleCount(), h.GetSampleSum())
	}
	if p.calls != 1 {
		t.Errorf("Destination read %d times, want once", p.calls)
	}
	s := status(t, srv).Sinks[0]
	if s.Table != "s3://lake/{topic_segment[-1]}" || len(s.LastCommits) != 1 || s.LastCommits[0].Table != "s3://lake/eu" ||
		*s.LastCommits[0].Version != 7 || s.LastCommits[0].Records != 3 {
		t.Errorf("/status %+v", s)
	}
	// /readyz does not ask the plugin.
	if code, _ := get(t, srv.URL+"/readyz"); code != 200 {
		t.Errorf("/readyz %d", code)
	}
}

// Before any commit there is no freshness series: an alert on age must
// not read a made-up value (absent() catches a sink that never commits).
func TestNoFreshnessBeforeCommit(t *testing.T) {
	m := observe.NewMetrics()
	m.Add(fakeSink{state: pipeline.StateRunning}, &destPlugin{})
	m.Delivered(pipeline.Delivery{Sink: "fake", Topic: "t", Attempt: 1, Outcome: pipeline.Fatal, Newest: time.Now()})
	srv := httptest.NewServer(observe.Handler(m))
	defer srv.Close()
	mfs := scrape(t, srv)
	for _, name := range []string{"picomq_connect_committed_event_timestamp_seconds", "picomq_connect_committed_event_age_seconds", "picomq_connect_commit_duration_seconds"} {
		if _, ok := mfs[name]; ok {
			t.Errorf("%s before any OK", name)
		}
	}
}
