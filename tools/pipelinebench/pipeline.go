package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

type pipeResult struct {
	records             int
	elapsed             time.Duration
	runtimeCPU, hostCPU time.Duration
	latencies           []time.Duration
	lags                []int64        // sampled each second while producing
	endLag              int64          // when the producer stopped
	host                bench.ProcStat // the child host's, first produce to last commit
}

// pipeline runs dist/picomq-connect on a definition for topic into table
// name, its block as v says (schema, transforms), produces data (in v's
// format) to topic (all at once when rate is 0, else at rate records/s for
// -steady) and waits until everything is committed.
func pipeline(cl *kgo.Client, adm *kadm.Client, brokers []string, dist, work string, t *bench.DeltaTarget, topic, name string,
	v variant, data [][]hostclient.Record, rate float64) (pipeResult, error) {
	var r pipeResult
	key := "bench_" + name
	group := "picomq-connect-sink-" + key
	block, err := v.block(work)
	if err != nil {
		return r, err
	}
	block = append([]string{fmt.Sprintf("batch_length = %d", *batchSize), `poll_interval = "100ms"`}, block...)
	def := bench.SinkDefinitionSchema(key, "libpicomq_connector_delta_sink", []string{topic}, v.format, block, t.PluginConfig(name, false))
	defFile := filepath.Join(work, key+".toml")
	if err := os.WriteFile(defFile, []byte(def), 0o644); err != nil {
		return r, err
	}
	args := []string{"--brokers", strings.Join(brokers, ","), "--plugin-dir", dist, "--workers", "1", "--log-level", "warn"}
	if *cpuProfile != "" {
		args = append(args, "--cpuprofile", filepath.Join(*cpuProfile, name+".pprof"))
	}
	proc, err := bench.StartConnect(*connectBin, append(args, defFile), t.ConnectEnv(key))
	if err != nil {
		return r, err
	}
	defer proc.Stop()

	// Commit times, polled.
	var mu sync.Mutex
	type sample struct {
		at     time.Time
		offset int64
	}
	var commits []sample
	lastCommit := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		if len(commits) == 0 {
			return 0
		}
		return commits[len(commits)-1].offset
	}
	var produced int64 // records handed to the producer
	stopPoll := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			resp, err := adm.FetchOffsets(context.Background(), group)
			if err == nil {
				if o, ok := resp.Lookup(topic, 0); ok {
					mu.Lock()
					if len(commits) == 0 || o.At > commits[len(commits)-1].offset {
						commits = append(commits, sample{time.Now(), o.At})
					}
					mu.Unlock()
				}
			}
			select {
			case <-stopPoll:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	defer func() {
		select {
		case <-stopPoll:
		default:
			close(stopPoll)
		}
		<-polled
	}()

	cpuR0, cpuH0, err := proc.CPU()
	if err != nil {
		return r, err
	}
	hosts := proc.Hosts()
	if len(hosts) != 1 {
		return r, fmt.Errorf("picomq-connect has %d children, want its one host", len(hosts))
	}
	host0, err := bench.ReadProcStat(hosts[0])
	if err != nil {
		return r, err
	}
	start := time.Now()
	var produceTimes []time.Time // per offset
	var prodErr error
	var perr sync.Mutex
	send := func(recs []hostclient.Record) {
		for _, rec := range recs {
			now := time.Now()
			produceTimes = append(produceTimes, now)
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: rec.Payload, Timestamp: now}, func(_ *kgo.Record, err error) {
				if err != nil {
					perr.Lock()
					prodErr = errors.Join(prodErr, err)
					perr.Unlock()
				}
			})
		}
		produced += int64(len(recs))
	}
	if rate == 0 {
		for _, recs := range data {
			send(recs)
		}
	} else {
		// Fixed rate, in 10 ms slices, cycling through the workload.
		end := start.Add(*steady)
		nextLag := start.Add(time.Second)
		var flat []hostclient.Record
		for _, recs := range data {
			flat = append(flat, recs...)
		}
		i := 0
		for now := time.Now(); now.Before(end); now = time.Now() {
			want := int(rate * now.Sub(start).Seconds())
			for int(produced) < want {
				n := min(want-int(produced), len(flat)-i%len(flat))
				send(flat[i%len(flat) : i%len(flat)+n])
				i += n
			}
			if now.After(nextLag) {
				r.lags = append(r.lags, produced-lastCommit())
				nextLag = nextLag.Add(time.Second)
			}
			time.Sleep(10 * time.Millisecond)
		}
		r.endLag = produced - lastCommit()
	}
	if err := cl.Flush(context.Background()); err != nil {
		return r, err
	}
	if prodErr != nil {
		return r, fmt.Errorf("produce: %w", prodErr)
	}
	// Wait for the last commit.
	for deadline := time.Now().Add(5 * time.Minute); lastCommit() < produced; time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-proc.Exited():
			return r, fmt.Errorf("picomq-connect exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("not everything committed after 5 minutes")
		}
	}
	close(stopPoll)
	<-polled
	cpuR1, cpuH1, err := proc.CPU()
	if err != nil {
		return r, err
	}
	host1, err := bench.ReadProcStat(hosts[0])
	if err != nil {
		return r, err
	}
	r.host = host1.Sub(host0)
	r.elapsed = commits[len(commits)-1].at.Sub(start)
	r.runtimeCPU, r.hostCPU = cpuR1-cpuR0, cpuH1-cpuH0
	r.records = int(produced)
	// Latency of each record: its produce time to the first sample whose
	// committed offset is past it.
	c := 0
	for off, at := range produceTimes {
		for commits[c].offset <= int64(off) {
			c++
		}
		r.latencies = append(r.latencies, commits[c].at.Sub(at))
	}
	return r, nil
}
