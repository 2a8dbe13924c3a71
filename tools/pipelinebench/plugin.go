package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

type pluginResult struct {
	records int
	elapsed time.Duration
	hostCPU time.Duration
	host    bench.ProcStat // the host's, over the batches
}

// consumer is what the plugin-only run calls: the runtime's way
// (connect/child) or the other benches' (hostclient directly).
type consumer interface {
	consume(hostclient.Batch) error
	pid() int
	close() error
}

// pluginOnly is make bench-delta's measurement: the batches straight into
// the plugin, with the host's CPU. The batches carry what the runtime's
// would: the topic, partition 0, json.
func pluginOnly(dist, topic string, t *bench.DeltaTarget, table string, data [][]hostclient.Record) (pluginResult, error) {
	var r pluginResult
	lib := filepath.Join(dist, "libpicomq_connector_delta_sink.so")
	config := bench.Definition("bench_"+table, t.PluginConfig(table, true))
	var c consumer
	var err error
	if *hostStart == "bench" {
		c, err = openBench(dist, lib, config)
	} else {
		c, err = openRuntime(dist, lib, config)
	}
	if err != nil {
		return r, err
	}
	defer c.close()
	st0, err := bench.ReadProcStat(c.pid())
	if err != nil {
		return r, err
	}
	start := time.Now()
	for _, recs := range data {
		if err := c.consume(hostclient.Batch{Attempt: 1, Topic: topic, Schema: "json", Records: recs}); err != nil {
			return r, err
		}
		r.records += len(recs)
	}
	r.elapsed = time.Since(start)
	st1, err := bench.ReadProcStat(c.pid())
	if err != nil {
		return r, err
	}
	r.host = st1.Sub(st0)
	r.hostCPU = r.host.User + r.host.Sys
	return r, c.close()
}

// runtimeHost is the plugin in a child.Process, as picomq-connect runs it
// with --workers 1 --log-level warn.
type runtimeHost struct {
	p    *child.Process
	inst *child.Instance
}

func openRuntime(dist, lib, config string) (consumer, error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p := child.New(filepath.Join(dist, "picomq-host"), lib, child.Options{Workers: 1, Logger: log, Stderr: os.Stderr})
	inst, err := p.Open(context.Background(), config, log)
	if err != nil {
		p.Close()
		return nil, err
	}
	return &runtimeHost{p: p, inst: inst}, nil
}

func (h *runtimeHost) consume(b hostclient.Batch) error {
	_, err := h.inst.Consume(context.Background(), b)
	return err
}

func (h *runtimeHost) pid() int { return h.p.Pid() }

func (h *runtimeHost) close() error {
	if h.inst == nil {
		return nil
	}
	err := h.inst.Close()
	h.inst = nil
	h.p.Close()
	return err
}

// benchHost is the plugin in a host started as the other benches start
// it (bench.StartHost: one worker, no quarantine).
type benchHost struct {
	h    *hostclient.Host
	inst *hostclient.Instance
}

func openBench(dist, lib, config string) (consumer, error) {
	h, err := bench.StartHost(dist, 1)
	if err != nil {
		return nil, err
	}
	l, err := h.Load(lib)
	if err == nil {
		var inst *hostclient.Instance
		if inst, err = l.Open(config); err == nil {
			return &benchHost{h: h, inst: inst}, nil
		}
	}
	h.Close()
	return nil, err
}

func (b *benchHost) consume(batch hostclient.Batch) error { return b.inst.Consume(batch) }

func (b *benchHost) pid() int { return b.h.Pid() }

func (b *benchHost) close() error {
	if b.inst == nil {
		return nil
	}
	err := b.inst.Close()
	b.inst = nil
	b.h.Close()
	return err
}
