package main

import (
	"time"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// feed delivers one partition's records to a sink as picomq-connect does,
// with up to depth batches in flight (steady mode): a batch goes when a
// slot is free and -batch-length records waited or the oldest waited
// maxLatency; a batch sent while the one before it is unanswered carries
// Follows (that one's RangeLast) and is sent after it; batches land in
// order; when one fails, the results of those after it are discarded (once
// their calls returned) and all their records go again.
type feed struct {
	topic       string
	partition   uint32
	total       int                     // records of the partition: offsets 0..total-1
	arrival     func(off int) time.Time // when record off arrives
	arrived     func(now time.Time) int // records arrived by now (at most total)
	records     func(first, n int) []hostclient.Record
	consume     func(b hostclient.Batch) error
	depth       int
	batchLength int
	maxLatency  time.Duration
	stop        time.Time                     // no batch goes after it
	landed      func(f *flight, at time.Time) // a batch answered OK, in order
	failed      func(f *flight)               // a batch that failed (its records go again)
}

// flight is one batch of a partition in flight.
type flight struct {
	first, n int           // its records: offsets first..first+n-1
	follows  *uint64       // Follows as sent
	sent     time.Time     // when its consume call began
	started  chan struct{} // closed as its consume call begins
	done     chan struct{}
	err      error // set before done closes
	end      time.Time
}

// run delivers until every record landed or stop passed with nothing in
// flight.
func (fd *feed) run() {
	delivered := 0   // records sent (in flight or landed)
	var fl []*flight // in flight, oldest first; only fl[0] lands
	launch := func(n int) {
		f := &flight{first: delivered, n: n, started: make(chan struct{}), done: make(chan struct{})}
		b := hostclient.Batch{Attempt: 1, Topic: fd.topic, Partition: fd.partition, Schema: "json",
			Records: fd.records(f.first, n), RangeLast: uint64(f.first + n - 1)}
		if len(fl) > 0 {
			// Sent while the batch before it is unanswered: a follower,
			// sent after that one was (as the runtime: once its
			// predecessor called the plugin).
			p := fl[len(fl)-1]
			<-p.started
			pred := uint64(p.first + p.n - 1)
			f.follows, b.Follows = &pred, &pred
		}
		f.sent = time.Now()
		go func() {
			close(f.started)
			f.err = fd.consume(b)
			f.end = time.Now()
			close(f.done)
		}()
		fl = append(fl, f)
		delivered += n
	}
	for {
		for len(fl) > 0 && closed(fl[0].done) {
			f := fl[0]
			if f.err != nil {
				fd.failed(f)
				for _, later := range fl[1:] {
					<-later.done // discarded, whatever it answered
				}
				delivered, fl = f.first, nil
				break
			}
			fd.landed(f, time.Now())
			fl = fl[1:]
		}
		now := time.Now()
		more := delivered < fd.total && now.Before(fd.stop)
		if !more && len(fl) == 0 {
			return
		}
		var due time.Time // when the next batch may go; zero: no slot
		if more && len(fl) < fd.depth {
			switch n := min(fd.arrived(now)-delivered, fd.batchLength); {
			case n >= fd.batchLength || (n > 0 && !now.Before(fd.arrival(delivered).Add(fd.maxLatency))):
				launch(n)
				continue
			case n > 0:
				due = fd.arrival(delivered).Add(fd.maxLatency)
			default:
				due = fd.arrival(delivered)
			}
		}
		var wake <-chan time.Time
		if !due.IsZero() {
			wake = time.After(time.Until(due))
		}
		var head <-chan struct{}
		if len(fl) > 0 {
			head = fl[0].done
		}
		select {
		case <-head:
		case <-wake:
		}
	}
}

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
