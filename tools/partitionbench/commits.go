package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

// commitPoller polls a group's committed offsets of one topic every 10 ms
// and keeps, per partition, each time the offset moved.
type commitPoller struct {
	adm   *kadm.Client
	group string
	topic string

	mu      sync.Mutex
	moves   [][]move // per partition, in time order
	stop    chan struct{}
	stopped chan struct{}
}

type move struct {
	at     time.Time
	offset int64 // the committed offset: the next record to read
}

func pollCommits(adm *kadm.Client, group, topic string, partitions int) *commitPoller {
	c := &commitPoller{adm: adm, group: group, topic: topic, moves: make([][]move, partitions),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	go c.run()
	return c
}

func (c *commitPoller) run() {
	defer close(c.stopped)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.adm.FetchOffsets(ctx, c.group)
		cancel()
		now := time.Now()
		if err == nil {
			c.mu.Lock()
			resp.Each(func(o kadm.OffsetResponse) {
				if o.Topic != c.topic || int(o.Partition) >= len(c.moves) || o.Err != nil {
					return
				}
				m := c.moves[o.Partition]
				if len(m) == 0 || o.At > m[len(m)-1].offset {
					c.moves[o.Partition] = append(m, move{now, o.At})
				}
			})
			c.mu.Unlock()
		}
		select {
		case <-c.stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// committed is the sum over partitions of the committed offsets, and the
// time of the last move.
func (c *commitPoller) committed() (total int64, last time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.moves {
		if len(m) > 0 {
			total += m[len(m)-1].offset
			if m[len(m)-1].at.After(last) {
				last = m[len(m)-1].at
			}
		}
	}
	return total, last
}

func (c *commitPoller) close() {
	close(c.stop)
	<-c.stopped
}

// latencies is, for every produced record, the time from its produce to
// the first poll that saw its partition's committed offset past it.
// Records not yet committed are left out and counted.
func (c *commitPoller) latencies(produced [][]time.Time) (lat []time.Duration, missing int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, times := range produced {
		m := c.moves[p]
		i := 0
		for off, at := range times {
			for i < len(m) && m[i].offset <= int64(off) {
				i++
			}
			if i == len(m) {
				missing += len(times) - off
				break
			}
			lat = append(lat, m[i].at.Sub(at))
		}
	}
	return lat, missing
}

// percentiles prints p50, p95 and p99 of d in ms.
func percentiles(d []time.Duration) string {
	return fmtMS(bench.Percentile(d, 0.5)) + " / " + fmtMS(bench.Percentile(d, 0.95)) + " / " + fmtMS(bench.Percentile(d, 0.99)) + " ms"
}

func fmtMS(d time.Duration) string { return fmt.Sprintf("%.0f", bench.MS(d)) }
