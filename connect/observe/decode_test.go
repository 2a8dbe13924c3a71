package observe_test

import (
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/observe"
	"github.com/picomq/heavy-sinks/connect/pipeline"
)

// gathered is every sample of m whose name is in names, as name{outcome}
// for the deliveries and name otherwise, for sink "s" topic "t".
func gathered(t *testing.T, m *observe.Metrics, names ...string) map[string]float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, n := range names {
			if mf.GetName() != n {
				continue
			}
			for _, mt := range mf.GetMetric() {
				key := n
				for _, lp := range mt.GetLabel() {
					if lp.GetName() == "outcome" {
						key += "{" + lp.GetValue() + "}"
					}
				}
				switch {
				case mt.GetCounter() != nil:
					out[key] = mt.GetCounter().GetValue()
				case mt.GetHistogram() != nil:
					out[key] = float64(mt.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return out
}

// Decoding is counted in records and seconds, only for blocks that decode;
// a decode retry counts as a delivery of outcome decode_retry and in no
// histogram of consume().
func TestDecodeCounted(t *testing.T) {
	names := []string{"picomq_connect_records_decoded_total", "picomq_connect_decode_seconds_total",
		"picomq_connect_deliveries_total", "picomq_connect_consume_duration_seconds", "picomq_connect_batch_records"}
	m := observe.NewMetrics()
	m.Delivered(pipeline.Delivery{Sink: "s", Topic: "t", Attempt: 1, Outcome: pipeline.OK, Records: 3})
	if got := gathered(t, m, names...); got["picomq_connect_records_decoded_total"] != 0 || len(got) != 7 {
		t.Errorf("a json delivery: %v", got) // 5 outcomes, 2 histograms, no decode series
	}
	m.Delivered(pipeline.Delivery{Sink: "s", Topic: "t", Outcome: pipeline.DecodeRetry, Records: 3})
	m.Delivered(pipeline.Delivery{Sink: "s", Topic: "t", Attempt: 1, Outcome: pipeline.OK, Records: 3, Decoded: 2, DecodeTook: 1500 * time.Millisecond})
	got := gathered(t, m, names...)
	for k, want := range map[string]float64{
		"picomq_connect_records_decoded_total": 2, "picomq_connect_decode_seconds_total": 1.5,
		"picomq_connect_deliveries_total{decode_retry}": 1, "picomq_connect_deliveries_total{ok}": 2,
		"picomq_connect_consume_duration_seconds": 2, "picomq_connect_batch_records": 2,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
}
