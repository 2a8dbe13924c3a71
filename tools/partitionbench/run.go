package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

// result is one measured run.
type result struct {
	records        int
	elapsed        time.Duration // first produce to the last commit
	producing      time.Duration // the steady phase, or 0 for a backlog
	latencies      []time.Duration
	missing        int     // records whose commit was never seen
	versions       int     // table versions made while producing (steady) or in all (backlog)
	lags           []int64 // produced - committed, each second of producing
	endLag         int64   // when producing stopped
	undrained      int64   // records still not committed after -drain-timeout
	runtimeCPU     time.Duration
	hostCPU        time.Duration
	runtimeRSS     int64 // KiB, the largest of the processes'
	hostRSS        int64
	commits        float64 // the Delta sink's, over all processes
	conflicts      float64
	batches        float64 // delivered by the runtime, and their records
	batchRecords   float64
	metricsMissing bool
}

// run is one measured run on target t: a fresh topic and table, the
// picomq-connect processes, producing, draining.
func run(cl *kgo.Client, adm *kadm.Client, brokers []string, dist, work string, t target, name string,
	payloads []hostclient.Record) (result, error) {
	var r result
	ctx := context.Background()
	topic := "partitionbench." + name
	key := "partitionbench_" + name
	group := "picomq-connect-sink-" + key
	resp, err := adm.CreateTopics(ctx, int32(*partitions), -1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return r, fmt.Errorf("create topic: %w", err)
	}
	defer adm.DeleteTopics(ctx, topic) //nolint:errcheck // best effort: the broker is shared
	if err := t.create(name); err != nil {
		return r, err
	}
	defFile := filepath.Join(work, key+".toml")
	cfg := t.config(name)
	for k, v := range pluginKeys {
		cfg[k] = v
	}
	def := bench.SinkDefinition(key, t.lib(), []string{topic}, blockKeys(), cfg)
	if err := os.WriteFile(defFile, []byte(def), 0o644); err != nil {
		return r, err
	}

	var procs []*bench.Connect
	defer func() {
		for _, c := range procs {
			c.Stop()
		}
	}()
	for i := range *processes {
		args := []string{"--brokers", strings.Join(brokers, ","), "--plugin-dir", dist, "--log-level", "warn"}
		if *workers > 0 {
			args = append(args, "--workers", fmt.Sprint(*workers))
		}
		if *cpuProfile != "" {
			args = append(args, "--cpuprofile", filepath.Join(*cpuProfile, fmt.Sprintf("%s-%d.pprof", name, i)))
		}
		c, err := bench.StartConnect(*connectBin, append(args, defFile), t.env(key))
		if err != nil {
			return r, err
		}
		procs = append(procs, c)
	}
	if err := waitGroupStable(ctx, adm, group, *processes); err != nil {
		return r, err
	}

	poll := pollCommits(adm, group, topic, *partitions)
	defer poll.close()
	prod := newProducer(cl, topic, *partitions, payloads)
	cpu0, err := cpuOf(procs)
	if err != nil {
		return r, err
	}
	v0, err := t.versions(ctx, name)
	if err != nil {
		return r, err
	}
	start := time.Now()
	if *backlog > 0 {
		prod.send(*backlog)
	} else {
		prod.steady(*rate, *duration, func() {
			c, _ := poll.committed()
			r.lags = append(r.lags, int64(prod.sent)-c)
		})
		r.producing = time.Since(start)
		c, _ := poll.committed()
		r.endLag = int64(prod.sent) - c
		v1, err := t.versions(ctx, name)
		if err != nil {
			return r, err
		}
		r.versions = v1 - v0
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = prod.flush(fctx)
	cancel()
	if err != nil {
		return r, fmt.Errorf("produce: %w", err)
	}
	r.records = prod.sent

	// Drain: everything committed, bounded.
	var last time.Time
	for deadline := time.Now().Add(*drainTimeout); ; time.Sleep(10 * time.Millisecond) {
		var c int64
		if c, last = poll.committed(); c >= int64(r.records) {
			break
		}
		for _, p := range procs {
			select {
			case err := <-p.Exited():
				return r, fmt.Errorf("picomq-connect exited: %v", err)
			default:
			}
		}
		if time.Now().After(deadline) {
			r.undrained = int64(r.records) - c // reported, with what was committed
			break
		}
	}
	r.elapsed = last.Sub(start)
	cpu1, err := cpuOf(procs)
	if err != nil {
		return r, err
	}
	r.runtimeCPU, r.hostCPU = cpu1[0]-cpu0[0], cpu1[1]-cpu0[1]
	for _, p := range procs {
		rt, h := p.PeakRSS()
		r.runtimeRSS, r.hostRSS = max(r.runtimeRSS, rt), max(r.hostRSS, h)
		text, err := p.Metrics()
		if err != nil {
			return r, err
		}
		batches, ok3 := bench.PromSum(text, "picomq_connect_batch_records_count")
		batchRecords, ok4 := bench.PromSum(text, "picomq_connect_batch_records_sum")
		r.batches += batches
		r.batchRecords += batchRecords
		r.metricsMissing = r.metricsMissing || !ok3 || !ok4
		if t.delta() {
			commits, ok1 := bench.PromSum(text, "picomq_plugin_sink_commits_total")
			conflicts, ok2 := bench.PromSum(text, "picomq_plugin_sink_commit_conflicts_total")
			r.commits += commits
			r.conflicts += conflicts
			r.metricsMissing = r.metricsMissing || !ok1 || !ok2
		}
	}
	if *backlog > 0 {
		v1, err := t.versions(ctx, name)
		if err != nil {
			return r, err
		}
		r.versions = v1 - v0
	}
	r.latencies, r.missing = poll.latencies(prod.produced())
	return r, nil
}

// cpuOf sums the CPU of the processes and of their hosts.
func cpuOf(procs []*bench.Connect) ([2]time.Duration, error) {
	var sum [2]time.Duration
	for _, p := range procs {
		rt, h, err := p.CPU()
		if err != nil {
			return sum, err
		}
		sum[0] += rt
		sum[1] += h
	}
	return sum, nil
}

// waitGroupStable waits, up to a minute, until the group is Stable with
// members members: every process holds its partitions, so producing
// measures the pipeline and not the join.
func waitGroupStable(ctx context.Context, adm *kadm.Client, group string, members int) error {
	var state string
	var n int
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		groups, err := adm.DescribeGroups(dctx, group)
		cancel()
		if err != nil {
			continue
		}
		g, ok := groups[group]
		if !ok || g.Err != nil {
			continue
		}
		state, n = g.State, len(g.Members)
		if state == "Stable" && n == members {
			return nil
		}
	}
	return fmt.Errorf("group %s not Stable with %d members after a minute (last: %s, %d members)", group, members, state, n)
}
