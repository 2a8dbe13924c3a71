package main

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// call is one consume call a feed made.
type call struct {
	first, last uint64
	follows     *uint64
}

// testFeed is a feed of total records that have all arrived, batches of
// batchLength, whose consume calls go to answer (by call number).
func testFeed(total, batchLength, depth int, answer func(i int, c call) error) (*feed, func() ([]call, []int, []int)) {
	var mu sync.Mutex
	var calls []call
	var landed, failed []int // first offsets
	start := time.Now().Add(-time.Hour)
	fd := &feed{topic: "t", total: total, depth: depth, batchLength: batchLength, stop: time.Now().Add(time.Minute),
		arrival: func(off int) time.Time { return start },
		arrived: func(time.Time) int { return total },
		records: func(first, n int) []hostclient.Record {
			recs := make([]hostclient.Record, n)
			for i := range recs {
				recs[i].Offset = uint64(first + i)
			}
			return recs
		},
		consume: func(b hostclient.Batch) error {
			c := call{first: b.Records[0].Offset, last: b.RangeLast, follows: b.Follows}
			mu.Lock()
			i := len(calls)
			calls = append(calls, c)
			mu.Unlock()
			return answer(i, c)
		},
		landed: func(f *flight, _ time.Time) { mu.Lock(); landed = append(landed, f.first); mu.Unlock() },
		failed: func(f *flight) { mu.Lock(); failed = append(failed, f.first); mu.Unlock() },
	}
	return fd, func() ([]call, []int, []int) { mu.Lock(); defer mu.Unlock(); return calls, landed, failed }
}

// At depth 2 the second batch is sent while the first is unanswered, with
// Follows = the first's RangeLast; batches land in order even when the
// second returns first.
func TestFeedPipelinesAndLandsInOrder(t *testing.T) {
	release := make(chan struct{})
	fd, got := testFeed(20, 10, 2, func(i int, c call) error {
		if i == 0 {
			<-release // the first answers only once the second was sent
		}
		if i == 1 {
			close(release)
		}
		return nil
	})
	fd.run()
	calls, landed, failed := got()
	if len(calls) != 2 || calls[0].follows != nil || calls[1].follows == nil || *calls[1].follows != 9 || calls[1].first != 10 {
		t.Fatalf("calls %+v: want 0..9, then 10..19 following 9", calls)
	}
	if !slices.Equal(landed, []int{0, 10}) || len(failed) != 0 {
		t.Fatalf("landed %v, failed %v", landed, failed)
	}
}

// When the first batch fails, the second's OK is discarded and both go
// again; at depth 1 no batch follows another.
func TestFeedDiscardsTheFollowersOfAFailedBatch(t *testing.T) {
	release := make(chan struct{})
	fd, got := testFeed(20, 10, 2, func(i int, c call) error {
		switch {
		case i == 0:
			<-release
			return errors.New("RETRY")
		case i == 1:
			close(release)
		case c.first == 0 && c.follows != nil:
			t.Errorf("call %d, the failed batch again, follows %d: want a head batch", i, *c.follows)
		}
		return nil
	})
	fd.run()
	calls, landed, failed := got()
	firsts := []uint64{}
	for _, c := range calls {
		firsts = append(firsts, c.first)
	}
	if !slices.Equal(firsts, []uint64{0, 10, 0, 10}) || !slices.Equal(failed, []int{0}) || !slices.Equal(landed, []int{0, 10}) {
		t.Fatalf("calls from %v, failed %v, landed %v: want 0 and 10 sent twice, landed once", firsts, failed, landed)
	}

	fd, got = testFeed(30, 10, 1, func(int, call) error { return nil })
	fd.run()
	calls, landed, _ = got()
	for _, c := range calls {
		if c.follows != nil {
			t.Fatalf("depth 1 sent a follower: %+v", calls)
		}
	}
	if !slices.Equal(landed, []int{0, 10, 20}) {
		t.Fatalf("landed %v", landed)
	}
}
