package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/definition"
)

// The fetch settings a block's client gets: derived from the block when
// its properties set neither fetch.min.bytes nor fetch.wait.max.ms,
// exactly what it set otherwise (the client's defaults for what it left
// out). Read back from a kgo client built from the block's options.
func TestFetchShapeDerivedFromBlock(t *testing.T) {
	cl, err := kgo.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	kgoMinBytes := cl.OptValue(kgo.FetchMinBytes).(int32)
	kgoMaxWait := cl.OptValue(kgo.FetchMaxWait).(time.Duration)
	cl.Close()

	for _, c := range []struct {
		name     string
		block    string
		minBytes int32
		maxWait  time.Duration
	}{
		{"defaults", ``, 1000 * 256, 100 * time.Millisecond},
		{"poll_interval", `poll_interval = "30ms"`, 1000 * 256, 30 * time.Millisecond},
		{"max_batch_latency shorter", "poll_interval = \"400ms\"\nmax_batch_latency = \"80ms\"", 1000 * 256, 40 * time.Millisecond},
		{"max_batch_latency longer", "poll_interval = \"400ms\"\nmax_batch_latency = \"2s\"", 1000 * 256, 200 * time.Millisecond},
		{"wait at most 500 ms", `poll_interval = "10s"`, 1000 * 256, 500 * time.Millisecond},
		{"wait at least 10 ms", `poll_interval = "5ms"`, 1000 * 256, 10 * time.Millisecond},
		{"small batches", `batch_length = 10`, 10 * 256, 100 * time.Millisecond},
		{"min bytes at most 1 MiB", `batch_length = 100000`, 1 << 20, 100 * time.Millisecond},
		{"min bytes set", "[topics.properties]\n\"fetch.min.bytes\" = 5000", 5000, kgoMaxWait},
		{"wait set", "[topics.properties]\n\"fetch.wait.max.ms\" = 300", kgoMinBytes, 300 * time.Millisecond},
		{"both set", "[topics.properties]\n\"fetch.min.bytes\" = 7\n\"fetch.wait.max.ms\" = 20", 7, 20 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			def, err := definition.Parse("d.toml", []byte("type = \"sink\"\nkey = \"k\"\npath = \"p\"\n\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n"+c.block+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			opts, err := clientOpts([]string{"127.0.0.1:1"}, def.Topics[0])
			if err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if got := cl.OptValue(kgo.FetchMinBytes).(int32); got != c.minBytes {
				t.Errorf("fetch.min.bytes %d, want %d", got, c.minBytes)
			}
			if got := cl.OptValue(kgo.FetchMaxWait).(time.Duration); got != c.maxWait {
				t.Errorf("fetch.wait.max.ms %v, want %v", got, c.maxWait)
			}
			// Only the runtime's own settings turn the fetch clock on.
			if _, _, derived := fetchShape(def.Topics[0]); derived != !strings.Contains(c.block, "properties") {
				t.Errorf("derived %v", derived)
			}
		})
	}
}
