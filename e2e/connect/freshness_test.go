package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/observe"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
)

// A Delta commit through the real library: /metrics shows the age of the
// newest committed record under the table template, and /status the
// version the plugin committed, which delta-rs reads as the table's.
func TestFreshnessAndLastCommit(t *testing.T) {
	base := "file://" + t.TempDir()
	template := base + "/{topic_segment[-1]}"
	uri := base + "/eu"
	pyenv.Run(t, `
import sys
import pyarrow as pa
from deltalake import write_deltalake
schema = pa.schema([("id", pa.int64()), ("customer", pa.string())])
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=schema))
`, uri)
	kf, cl := fakeKafka(t, "orders.eu")
	def, err := definition.Parse("orders.toml", fmt.Appendf(nil, `type = "sink"
key = "orders_delta"
name = "Orders to Delta"
path = "libpicomq_connector_delta_sink"

[[topics]]
pattern = 'orders\..*'
schema = "json"
batch_length = 10
poll_interval = "100ms"

[plugin_config]
table_uri = %q
`, template))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	proc := child.New(hosttest.BuildHost(t), def.LibraryPath(distDir(t)), child.Options{Logger: log, Stderr: os.Stderr})
	js, err := def.OpenConfig()
	if err != nil {
		t.Fatal(err)
	}
	inst, err := proc.Open(context.Background(), string(js), log)
	if err != nil {
		t.Fatal(err)
	}
	m := observe.NewMetrics()
	sink := pipeline.New(def, inst, pipeline.Config{Brokers: kf.ListenAddrs(), Logger: log, Observer: m})
	m.Add(sink, inst)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sink.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; inst.Close(); proc.Close() })

	// Records stamped 45 s ago by their producer; the newest decides.
	stamp := time.Now().Add(-45 * time.Second).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "orders.eu", Timestamp: stamp.Add(time.Duration(i-9) * time.Second),
			Value: fmt.Appendf(nil, `{"id":%d,"customer":"c%d"}`, i, i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, kadm.NewClient(cl), "orders.eu", 10)

	srv := httptest.NewServer(observe.Handler(m))
	defer srv.Close()
	labels := `sink_key="orders_delta",table="` + template + `"`
	text := metricsText(t, srv.URL)
	ts := sample(t, text, "picomq_connect_committed_event_timestamp_seconds{"+labels+"}")
	if math.Abs(ts-float64(stamp.UnixMilli())/1000) > 1e-6 {
		t.Errorf("newest committed event timestamp %v, want %v (the newest record's)", ts, float64(stamp.UnixMilli())/1000)
	}
	if age := sample(t, text, "picomq_connect_committed_event_age_seconds{"+labels+"}"); age < 45 || age > 45+60 {
		t.Errorf("committed event age %v s, want from 45 s to the test's length more", age)
	}
	if n := sample(t, text, "picomq_connect_commit_duration_seconds_count{"+labels+"}"); n < 1 {
		t.Errorf("commit duration count %v", n)
	}
	if strings.Contains(text, `table="`+uri+`"`) {
		t.Error("a resolved table URI is a label value")
	}
	if c := strings.Count(text, "\npicomq_connect_commit_duration_seconds_count{"); c != 1 {
		t.Errorf("%d commit duration series, want 1", c)
	}

	_, body := httpGet(t, srv.URL+"/status")
	var st observe.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	version := pyenv.Run(t, `
import sys
from deltalake import DeltaTable
print(DeltaTable(sys.argv[1]).version())
`, uri)
	s := st.Sinks[0]
	if s.Table != template || len(s.LastCommits) != 1 || s.LastCommits[0].Table != uri || s.LastCommits[0].Version == nil ||
		strconv.FormatInt(*s.LastCommits[0].Version, 10) != strings.TrimSpace(version) || s.LastCommits[0].Records != 10 {
		t.Errorf("/status %s; delta-rs reads version %s", body, version)
	}
	if age := time.Since(s.LastCommits[0].Time); age < 0 || age > time.Minute {
		t.Errorf("last commit time %v", s.LastCommits[0].Time)
	}
}

func metricsText(t *testing.T, url string) string {
	t.Helper()
	code, body := httpGet(t, url+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics %d", code)
	}
	return body
}

// sample returns the value of the exposition line starting with series.
func sample(t *testing.T, text, series string) float64 {
	t.Helper()
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("no series %s in /metrics", series)
	return 0
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
