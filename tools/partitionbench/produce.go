package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// producer writes the workload's payloads round-robin over a topic's
// partitions and keeps each record's produce time by partition and offset.
type producer struct {
	cl         *kgo.Client
	topic      string
	partitions int
	payloads   []hostclient.Record
	sent       int // records handed to the client

	mu    sync.Mutex
	times [][]time.Time // [partition][offset]: when it was produced
	err   error
}

func newProducer(cl *kgo.Client, topic string, partitions int, payloads []hostclient.Record) *producer {
	return &producer{cl: cl, topic: topic, partitions: partitions, payloads: payloads, times: make([][]time.Time, partitions)}
}

// send produces n more records.
func (p *producer) send(n int) {
	for range n {
		now := time.Now()
		rec := &kgo.Record{Topic: p.topic, Partition: int32(p.sent % p.partitions), Value: p.payloads[p.sent%len(p.payloads)].Payload, Timestamp: now}
		p.sent++
		p.cl.Produce(context.Background(), rec, p.acked)
	}
}

func (p *producer) acked(r *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.err = errors.Join(p.err, err)
		return
	}
	ts := p.times[r.Partition]
	for int64(len(ts)) <= r.Offset {
		ts = append(ts, time.Time{})
	}
	ts[r.Offset] = r.Timestamp
	p.times[r.Partition] = ts
}

// steady produces rate records/s for d, in 10 ms slices, calling each
// second once a second has passed.
func (p *producer) steady(rate float64, d time.Duration, each func()) {
	start := time.Now()
	next := start.Add(time.Second)
	for now := start; now.Before(start.Add(d)); now = time.Now() {
		if want := int(rate * now.Sub(start).Seconds()); want > p.sent {
			p.send(want - p.sent)
		}
		if !now.Before(next) {
			each()
			next = next.Add(time.Second)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// flush waits for every record's acknowledgement and returns the first
// failure.
func (p *producer) flush(ctx context.Context) error {
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// produced returns each partition's produce times (after flush).
func (p *producer) produced() [][]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.times
}
