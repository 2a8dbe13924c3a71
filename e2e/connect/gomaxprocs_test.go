package connect_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
)

// The built picomq-connect runs its Go code on one processor while it is
// quiet (connect/gomaxprocs, started by main), and leaves a GOMAXPROCS
// from its environment alone: read from its /metrics, as an operator would.
// Raising the processors under load is connect/gomaxprocs's own test.
func TestProcessorsWhileQuiet(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skipf("%d CPU: picomq-connect has no processors to govern here", runtime.NumCPU())
	}
	kf, cl := fakeKafka(t, "quiet")
	produce(t, cl, "quiet", 0, 5)
	for _, c := range []struct {
		name string
		env  []string
		want int
	}{
		{"governed", []string{"GOMAXPROCS="}, 1}, // empty: unset, whatever this test inherited
		{"GOMAXPROCS set", []string{"GOMAXPROCS=3"}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			defs := t.TempDir()
			writeDef(t, filepath.Join(defs, "test.toml"), fmt.Sprintf(`type = "sink"
key = "quiet_test"
path = "test/libpicomq_connector_test_a_sink"

[[topics]]
topics = ["quiet"]
schema = "json"
batch_length = 5
poll_interval = "100ms"
consumer_group = "quiet-%d"

[plugin_config]
record_path = %q
`, c.want, filepath.Join(t.TempDir(), "records.jsonl")))
			rt := &connectProc{t: t, bin: buildConnect(t), host: hosttest.BuildHost(t), plugins: distDir(t),
				brokers: strings.Join(kf.ListenAddrs(), ","), defs: defs, log: filepath.Join(t.TempDir(), "connect.log"),
				args: []string{"--http", "127.0.0.1:0", "--log-level", "debug"}, env: c.env}
			t.Cleanup(rt.kill)
			rt.start()
			group := fmt.Sprintf("quiet-%d", c.want)
			poll.Until(t, 60*time.Second, "the five records committed", func() bool {
				resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group) // the group is made as it joins
				o, ok := resp.Lookup("quiet", 0)
				return err == nil && ok && o.At == 5
			})
			listening := regexp.MustCompile(`event=http_listening addr=(\S+)`)
			var addr string
			poll.Until(t, 60*time.Second, "picomq-connect's http_listening line", func() bool {
				b, _ := os.ReadFile(rt.log)
				if m := listening.FindSubmatch(b); m != nil {
					addr = string(m[1])
				}
				return addr != ""
			})
			// Its five records committed: the runtime is quiet. (Should the
			// start alone have raised the processors, they come down only
			// after 30 quiet seconds: the poll allows for that.)
			var got int
			poll.Until(t, 45*time.Second, fmt.Sprintf("go_sched_gomaxprocs_threads %d", c.want), func() bool {
				got = gomaxprocsSample(t, addr)
				return got == c.want
			})
			time.Sleep(2 * time.Second) // a governor step or two later: still so
			if got = gomaxprocsSample(t, addr); got != c.want {
				t.Fatalf("go_sched_gomaxprocs_threads %d, want %d\n%s", got, c.want, rt.tail())
			}
		})
	}
}

// gomaxprocsSample is the runtime's go_sched_gomaxprocs_threads (the Go
// collector's) on its /metrics at addr.
func gomaxprocsSample(t *testing.T, addr string) int {
	t.Helper()
	return int(sample(t, metricsText(t, "http://"+addr), "go_sched_gomaxprocs_threads"))
}
