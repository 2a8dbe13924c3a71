package bench

import (
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/definition"
)

// A -topic-key value is written raw when it is a TOML value and quoted
// otherwise; a value that is not name=value is refused.
func TestTopicKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"max_in_flight=16", "max_in_flight = 16"},
		{" poll_interval = 50ms ", `poll_interval = "50ms"`},
		{`poll_interval="50ms"`, `poll_interval = "50ms"`},
		{"x=0.5", "x = 0.5"},
		{"x=true", "x = true"},
		{`x=["a", "b"]`, `x = ["a", "b"]`},
		{"errors_tolerance=all", `errors_tolerance = "all"`},
	} {
		got, err := TopicKey(c.in)
		if err != nil || got != c.want {
			t.Errorf("TopicKey(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "x", "=1", "x=", "a b=1", `"x"=1`} {
		if got, err := TopicKey(bad); err == nil {
			t.Errorf("TopicKey(%q) = %q, want an error", bad, got)
		}
	}
}

// The generated definition is one the runtime's parser takes, with the
// block keys and plugin_config as given.
func TestSinkDefinition(t *testing.T) {
	var keys TopicKeys
	for _, kv := range []string{"batch_length=100", "poll_interval=40ms", "max_batch_latency=200ms"} {
		if err := keys.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	text := SinkDefinition("bench_k", "libpicomq_connector_delta_sink", []string{"t1"}, keys,
		map[string]any{"table_uri": "file:///x", "aws_s3_allow_http": true})
	def, err := definition.Parse("d.toml", []byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	b := def.Topics[0]
	if def.Key != "bench_k" || len(b.Topics) != 1 || b.Topics[0] != "t1" || b.BatchLength != 100 ||
		b.PollInterval != 40*time.Millisecond || b.MaxBatchLatency != 200*time.Millisecond {
		t.Errorf("parsed %+v from\n%s", b, text)
	}
	if def.PluginConfig["table_uri"] != "file:///x" || def.PluginConfig["aws_s3_allow_http"] != true {
		t.Errorf("plugin_config %v", def.PluginConfig)
	}
}

// PromSum adds a metric's samples over its label sets and ignores metrics
// whose names only start with it.
func TestPromSum(t *testing.T) {
	text := `# HELP picomq_plugin_sink_commits_total Delta commits.
# TYPE picomq_plugin_sink_commits_total counter
picomq_plugin_sink_commits_total{sink="a",path="x{y}"} 3
picomq_plugin_sink_commits_total{sink="b"} 4.5
picomq_plugin_sink_commits_total_other 100
picomq_plugin_sink_commit_conflicts_total 2
`
	if got, ok := PromSum(text, "picomq_plugin_sink_commits_total"); !ok || got != 7.5 {
		t.Errorf("commits = %v, %v; want 7.5", got, ok)
	}
	if got, ok := PromSum(text, "picomq_plugin_sink_commit_conflicts_total"); !ok || got != 2 {
		t.Errorf("conflicts = %v, %v; want 2", got, ok)
	}
	if _, ok := PromSum(text, "absent"); ok {
		t.Error("absent metric found")
	}
}

func TestMedian(t *testing.T) {
	if Median([]float64{3, 1, 2}) != 2 || Median([]float64{4, 1, 3, 2}) != 2.5 || Median(nil) != 0 {
		t.Error("Median")
	}
}
