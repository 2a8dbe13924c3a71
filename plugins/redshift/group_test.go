package redshift_test

import (
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Batches of several partitions delivered at once to an idle table (a
// runtime starting) share one load: the first to arrive does not load
// alone while the others queue behind it for a whole load, since other
// consume calls started while it uploaded.
func TestConcurrentBatchesAtAnIdleTableShareTheFirstLoad(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("group_start", r.config(map[string]any{"target_table": "orders_start"}))
	const k, n = 8, 20
	var wg sync.WaitGroup
	errs := make([]error, k)
	for p := range k {
		b := batch("orders", 100, n)
		b.Partition = uint32(p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = sdk.Consume(h, b)
		}()
	}
	wg.Wait()
	for p, err := range errs {
		if err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
	}
	if _, rows := r.ids("orders_start"); rows != k*n {
		t.Fatalf("%d rows, want %d", rows, k*n)
	}
	if m := metrics(t, h); m["loads"] != 1 || m["load_batches"] != k {
		t.Fatalf("%v loads carried %v batches; want all %d batches in one load", m["loads"], m["load_batches"], k)
	}
}
