package delta

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

// The queue alone, under -race, with chains of pipelined batches that
// arrive in any order: every member is answered once, and a member is
// written only in its predecessor's group after it, or once its
// predecessor was answered OK; one whose predecessor failed is not
// written.
func TestQueueChainsInAnyOrder(t *testing.T) {
	const parts, depth = 8, 4
	var q queue
	var mu sync.Mutex
	okAt := map[*sdk.Pending]bool{} // answered OK
	var wg sync.WaitGroup
	var all []*sdk.Batch
	answers := map[*sdk.Batch]func(bool){}
	for p := range parts {
		var c []*sdk.Batch
		for i := range depth {
			c = append(c, idBatch(p, i*2, 2))
		}
		for i, fn := range chain(c...) {
			answers[c[i]] = fn
		}
		all = append(all, c...)
	}
	rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for _, b := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
			m := &member{b: b, appID: appOf(int(b.Partition)), pred: b.Pred, wake: make(chan struct{})}
			var predDone <-chan struct{}
			if m.pred != nil {
				predDone = m.pred.Done()
			}
			lead, err := q.join(m)
			if err != nil {
				t.Error(err)
				return
			}
			for !lead {
				select {
				case <-m.wake:
					lead = true
				case <-predDone:
					predDone = nil
					lead = q.kick(m)
				}
			}
			if !m.lead {
				answers[b](m.err == nil)
				return
			}
			if m.settle() {
				m.answer(m.pred.NotWritten())
				q.next()
				answers[b](false)
				return
			}
			group := q.take(m, 1000, 1<<20)
			mu.Lock()
			for i, g := range group {
				// The 3rd batch of partition 5 fails: its followers must not be written.
				if g.b.Partition == 5 && g.b.FirstOffset() == 4 {
					g.answer(sdk.Fatalf("bad"))
					continue
				}
				if g.after != nil && g.after.done && g.after.err != nil {
					g.answer(g.b.Pred.NotWritten())
					continue
				}
				if g.b.Pred != nil && !okAt[g.b.Pred] && (g.after == nil || !slices.Contains(group[:i], g.after)) {
					t.Errorf("partition %d offset %d written without its predecessor", g.b.Partition, g.b.FirstOffset())
				}
				okAt[g.b.Self] = true
				g.answer(nil)
			}
			mu.Unlock()
			q.next()
			answers[b](m.err == nil)
		}()
	}
	wg.Wait()
	for _, b := range all {
		answered, ok := b.Self.Answered()
		want := !(b.Partition == 5 && b.FirstOffset() >= 4)
		if !answered || ok != want {
			t.Errorf("partition %d offset %d: answered %v ok %v, want ok %v", b.Partition, b.FirstOffset(), answered, ok, want)
		}
	}
}
