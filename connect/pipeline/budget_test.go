package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// A budget smaller than one batch_length of records flushes buckets early:
// the buffered bytes never pass the budget by more than one fetch, every
// record is delivered exactly once, the offsets reach the end, and nothing
// stays counted once everything is committed; also when the plugin's host
// dies twice, the consumer rewinding and dropping what it buffered.
func TestMemoryBudgetFlushesEarly(t *testing.T) {
	t.Run("clean", func(t *testing.T) { testMemoryBudget(t, &fakeplugin.Plugin{}) })
	t.Run("rewinds", func(t *testing.T) {
		deaths := map[int]fakeplugin.Result{2: fakeplugin.Exit(), 6: fakeplugin.Exit()}
		testMemoryBudget(t, &fakeplugin.Plugin{Decide: func(_ hostclient.Batch, n int) fakeplugin.Result { return deaths[n] }})
	})
}

func testMemoryBudget(t *testing.T, p *fakeplugin.Plugin) {
	const (
		total, perProduce = 300, 5
		size              = 1000 // payload bytes; key "k" and header h=v add 3
		budget            = 20_000
		fetchMax          = 10_000
		// One fetch: up to fetch.max.bytes, plus the record batch that
		// crosses it (perProduce records, with their framing).
		oneFetch = fetchMax + perProduce*(size+100)
	)
	kf := cluster(t, "a")
	// Uncompressed, so that fetch.max.bytes bounds the bytes of a fetch.
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pad := strings.Repeat("x", size-len(`{"n":000,"p":""}`))
	for i := 0; i < total; i += perProduce {
		var recs []*kgo.Record
		for j := i; j < i+perProduce; j++ {
			recs = append(recs, &kgo.Record{Topic: "a", Key: []byte("k"), Value: fmt.Appendf(nil, `{"n":%d,"p":"%s"}`, j, pad),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}})
		}
		// One produce per record batch, so that a fetch can stop
		// between them.
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, kf, fmt.Sprintf("[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = 100\npoll_interval = \"1h\"\n"+
		"[topics.properties]\n\"fetch.max.bytes\" = %d\n\"max.partition.fetch.bytes\" = %d\n", fetchMax, fetchMax), fake(p))
	b := pipeline.NewBudget(budget)
	h.budget = b
	h.start()
	poll.Until(t, 30*time.Second, "every record committed", func() bool { return committed(t, kf, group, "a")["a"] == total })
	if b.EarlyFlushes() == 0 {
		t.Error("no early flush: batch_length 100 of 1 kB records is five times the budget")
	}
	if peak := b.Peak(); peak > budget+oneFetch {
		t.Errorf("%d bytes buffered at the peak, over the budget %d + one fetch %d", peak, budget, oneFetch)
	}
	for _, c := range p.Calls() {
		if n := len(c.Batch.Records); n >= 100 {
			t.Errorf("a batch of %d records: the budget holds at most %d", n, budget/size)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if dups := duplicates(t, h.lines(), "a", total); dups != 0 {
		t.Errorf("%d records delivered twice", dups)
	}
	if u := b.Used(); u != 0 {
		t.Errorf("%d bytes still counted with nothing buffered", u)
	}
}

// A partition revoked in a rebalance gives its buffered bytes back: once a
// second member takes one of two partitions, the first counts only what
// it still holds.
func TestMemoryBudgetRevocation(t *testing.T) {
	const perPartition = 20
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "a"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	var size int64
	for p := range int32(2) {
		for i := range perPartition {
			r := &kgo.Record{Topic: "a", Partition: p, Key: []byte("k"), Value: fmt.Appendf(nil, `{"n":%d}`, 100+i)}
			size = int64(len(r.Key) + len(r.Value)) // the same for every record
			recs = append(recs, r)
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Nothing is due: the buckets hold every record until shutdown.
	block := "[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = 1000\npoll_interval = \"1h\"\n"
	h1 := newHarness(t, kf, block, fake(&fakeplugin.Plugin{}))
	b1 := pipeline.NewBudget(0)
	h1.budget = b1
	h1.start()
	poll.Until(t, 20*time.Second, "both partitions buffered", func() bool { return b1.Used() == 2*perPartition*size })
	h2 := newHarness(t, kf, block, fake(&fakeplugin.Plugin{}))
	h2.budget = pipeline.NewBudget(0)
	h2.start()
	poll.Until(t, 30*time.Second, "one partition moved to the second member", func() bool {
		return h1.logged("event=partition_revoked") && h2.budget.Used() == perPartition*size
	})
	if u := b1.Used(); u != perPartition*size {
		t.Errorf("the first member counts %d bytes after the revocation, want the %d of the partition it kept", u, perPartition*size)
	}
	if err := h2.stop(); err != nil {
		t.Fatal(err)
	}
	if err := h1.stop(); err != nil {
		t.Fatal(err)
	}
	if u1, u2 := b1.Used(), h2.budget.Used(); u1 != 0 || u2 != 0 {
		t.Errorf("%d and %d bytes counted after both stopped", u1, u2)
	}
}
