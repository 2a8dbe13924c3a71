// Command picomq-connect runs sink plugins from Kafka-protocol topics, as
// the runtime spec describes: one consumer group per [[topics]] block,
// batches handed to the plugin's consume(), offsets committed only after
// the write. Each plugin library runs in a child picomq-host process.
//
//	picomq-connect --brokers localhost:9092 sinks/
//	picomq-connect --check orders.toml
//
// Every flag and definition field: docs/runtime.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/observe"
	"github.com/picomq/heavy-sinks/connect/pipeline"
)

// Exit codes.
const (
	exitOK        = 0
	exitSinkError = 1 // a sink stopped on a failure
	exitUsage     = 2 // bad flags or definitions, a plugin refused its config
)

func main() {
	setGCPercent(os.Getenv)
	os.Exit(run(os.Args[1:]))
}

// defaultGOGC is the runtime's GC target unless GOGC is set. Almost all of
// its heap is short-lived: fetch responses and the records decoded from
// them, dropped once their batch is committed. At Go's default of 100 the
// collector ran every few fetches on a heap of a few MiB and took about a
// fifth of the runtime's CPU per record (docs/runtime.md, Benchmark); 400
// lets the heap grow to five times what is live before collecting. Set
// GOGC (or GOMEMLIMIT, which still applies) to trade back.
const defaultGOGC = 400

func setGCPercent(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGOGC)
	}
}

// listen starts the HTTP endpoint; tests replace it to see whether it was
// started.
var listen = observe.Listen

func run(args []string) int {
	fs := flag.NewFlagSet("picomq-connect", flag.ContinueOnError)
	brokers := fs.String("brokers", "localhost:9092", "comma-separated seed brokers (a block's bootstrap.servers property overrides it)")
	pluginDir := fs.String("plugin-dir", "dist", "directory a definition's relative path is resolved against")
	hostBin := fs.String("host", "", "picomq-host binary (default: picomq-host in --plugin-dir, next to this executable, or on PATH)")
	workers := fs.Int("workers", 4, "host threads per plugin library")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "bound on the flush and final commit at shutdown")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	format := fs.String("log-format", "text", "text or json")
	check := fs.Bool("check", false, "check the definitions and exit")
	httpAddr := fs.String("http", "", "serve /healthz, /readyz, /status and /metrics on this address (host:port); off when empty")
	cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of this process to this file until it stops (debugging)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: picomq-connect [flags] <definition.toml | directory>...\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	log, err := newLogger(*level, *format)
	if err != nil {
		fmt.Fprintln(os.Stderr, "picomq-connect:", err)
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	defs, err := definition.Load(fs.Args()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return exitUsage
	}
	var enabled []*definition.Definition
	for _, d := range defs {
		if !d.Enabled {
			log.Info("sink disabled; not started", "event", "sink_disabled", "sink_key", d.Key, "file", d.File)
			continue
		}
		if err := d.CheckLibrary(*pluginDir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitUsage
		}
		enabled = append(enabled, d)
	}
	if *check {
		fmt.Printf("%d definition(s) OK, %d enabled\n", len(defs), len(enabled))
		return exitOK
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "picomq-connect: --cpuprofile:", err)
			return exitUsage
		}
		defer stop()
	}
	bin, err := child.FindHost(*hostBin, *pluginDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "picomq-connect:", err)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// One child process per library, shared by every sink that uses it.
	procs := map[string]*child.Process{}
	defer func() {
		for _, p := range procs {
			if err := p.Close(); err != nil {
				log.Warn("plugin host exit", "event", "host_close_failed", "err", err)
			}
		}
	}()
	var sinks []*pipeline.Sink
	var insts []*child.Instance
	metrics := observe.NewMetrics()
	cfg := pipeline.Config{Brokers: splitList(*brokers), Logger: log, ShutdownTimeout: *shutdown, Observer: metrics}
	for _, d := range enabled {
		lib := d.LibraryPath(*pluginDir)
		p := procs[lib]
		if p == nil {
			p = child.New(bin, lib, child.Options{Workers: *workers, Logger: log, Stderr: os.Stderr})
			procs[lib] = p
		}
		js, err := d.OpenConfig()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitUsage
		}
		inst, err := p.Open(ctx, string(js), log.With("sink_key", d.Key))
		if err != nil && ctx.Err() != nil {
			// SIGINT/SIGTERM while starting: a shutdown with nothing
			// consumed, not a refused configuration.
			closeAll(log, insts)
			log.Info("picomq-connect stopped before consuming: signal during startup", "exit_code", exitOK)
			return exitOK
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: open: %v\n", d.File, err)
			closeAll(log, insts)
			return exitUsage
		}
		insts = append(insts, inst)
		s := pipeline.New(d, inst, cfg)
		sinks = append(sinks, s)
		metrics.Add(s, inst)
		log.Info("sink started", "event", "sink_started", "sink_key", d.Key, "library", lib, "blocks", len(d.Topics))
	}
	if *httpAddr != "" {
		// Bound before consuming, so a taken address fails at start; it
		// serves until every sink has flushed and stopped.
		srv, err := listen(*httpAddr, observe.Handler(metrics), log)
		if err != nil {
			fmt.Fprintln(os.Stderr, "picomq-connect: --http:", err)
			closeAll(log, insts)
			return exitUsage
		}
		defer srv.Close()
		log.Info("http endpoint listening", "event", "http_listening", "addr", srv.Addr())
	}

	code := exitOK
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range sinks {
		wg.Go(func() {
			if err := s.Run(ctx); err != nil {
				log.Error("sink failed", "event", "sink_failed", "sink_key", s.Key(), "state", pipeline.StateError, "err", err)
				mu.Lock()
				code = exitSinkError
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	closeAll(log, insts)
	log.Info("picomq-connect stopped", "event", "runtime_stopped", "exit_code", code)
	return code
}

func closeAll(log *slog.Logger, insts []*child.Instance) {
	for _, i := range insts {
		if err := i.Close(); err != nil {
			log.Warn("closing a sink instance", "event", "instance_close_failed", "err", err)
		}
	}
}

// startCPUProfile profiles the process's CPU into path until stop is
// called: the runtime's own cost, without the plugin's (in its child).
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func newLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, errors.New("--log-format: want text or json")
}
