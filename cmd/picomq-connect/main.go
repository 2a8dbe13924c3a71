// Command picomq-connect runs sink plugins from Kafka-protocol topics, as
// the runtime spec describes: one consumer group per [[topics]] block,
// batches handed to the plugin's consume(), offsets committed only after
// the write. Each plugin library runs in a child picomq-host process.
//
//	picomq-connect --brokers localhost:9092 sinks/
//	picomq-connect --check orders.toml
//	picomq-connect redrive orders.toml   # dead letters put back (redrive.go)
//
// Every flag and definition field: docs/runtime.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/gomaxprocs"
	"github.com/picomq/heavy-sinks/connect/observe"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/connect/preflight"
)

// Exit codes.
const (
	exitOK        = 0
	exitSinkError = 1 // a sink stopped on a failure (FATAL at open too), or the shutdown timed out
	exitUsage     = 2 // bad flags or definitions; a plugin refused its config or did not load
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

// stderr receives the log lines and what the plugin hosts write to their
// stderr; tests replace it to read them.
var stderr io.Writer = os.Stderr

func run(args []string) (code int) {
	// Subcommands other than running the definitions: each has its own
	// flags and file (audit.go, redrive.go).
	if len(args) > 0 {
		switch args[0] {
		case "audit":
			return runAudit(args[1:])
		case "redrive":
			return runRedrive(args[1:])
		}
	}
	fs := flag.NewFlagSet("picomq-connect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "localhost:9092", "comma-separated seed brokers (a block's bootstrap.servers property overrides it)")
	pluginDir := fs.String("plugin-dir", "dist", "directory a definition's relative path is resolved against")
	hostBin := fs.String("host", "", "picomq-host binary (default: picomq-host in --plugin-dir, next to this executable, or on PATH)")
	workers := fs.Int("workers", 4, "host threads per plugin library; raised to the sum of max_in_flight of the blocks using it, plus one")
	maxBuffered := fs.Int64("max-buffered-bytes", 0, "cap on the bytes of records buffered by every sink together; past it the largest buckets flush early (0: no cap)")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "bound on the whole shutdown: flush, final commit, closing the plugins; plugin hosts still running then are killed")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	format := fs.String("log-format", "text", "text or json")
	check := fs.Bool("check", false, "check the definitions and exit")
	httpAddr := fs.String("http", "", "serve /healthz, /readyz, /status and /metrics on this address (host:port); off when empty")
	cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of this process to this file until it stops (debugging)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: picomq-connect [flags] <definition.toml | directory>...\n\n")
		fs.PrintDefaults()
	}
	// Until the logger exists, the flag package and this function say what
	// is wrong in plain text: there is no format to say it in yet.
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	log, err := newLogger(stderr, *level, *format)
	if err != nil {
		fmt.Fprintln(stderr, "picomq-connect:", err)
		return exitUsage
	}
	// From here every way out, refusals at start included, ends with this
	// line, in the format asked for.
	defer func() { log.Info("picomq-connect stopped", "event", "runtime_stopped", "exit_code", code) }()
	if *maxBuffered < 0 {
		return startupFailed(log, "--max-buffered-bytes", fmt.Errorf("%d: want 0 (no cap) or a number of bytes", *maxBuffered))
	}
	if fs.NArg() == 0 {
		if *format == "text" {
			fs.Usage()
		}
		return startupFailed(log, "no definition file or directory given", errors.New("usage: picomq-connect [flags] <definition.toml | directory>..."))
	}
	defs, err := definition.Load(fs.Args()...)
	if err != nil {
		// One line per problem, as Load found them all.
		for _, e := range leaves(err) {
			log.Error("definition refused", "event", "startup_failed", "err", e)
		}
		return exitUsage
	}
	var enabled []*definition.Definition
	for _, d := range defs {
		if !d.Enabled {
			log.Info("sink disabled; not started", "event", "sink_disabled", "sink_key", d.Key, "file", d.File)
			continue
		}
		if err := d.CheckLibrary(*pluginDir); err != nil {
			return startupFailed(log, "plugin library not found", err, "sink_key", d.Key, "file", d.File)
		}
		enabled = append(enabled, d)
	}
	if *check {
		bin, err := child.FindHost(*hostBin, *pluginDir)
		if err != nil {
			return startupFailed(log, "no plugin host", err)
		}
		// The problems are the report --check exists for: one plain line
		// each, as an editor or CI log shows them, whatever the log format.
		opts := preflight.Options{Host: bin, PluginDir: *pluginDir, Environ: os.Environ(), Stderr: stderr, Logger: log, Formats: formats}
		if errs := preflight.Check(context.Background(), enabled, opts); len(errs) > 0 {
			for _, err := range errs {
				fmt.Fprintln(stderr, err)
			}
			return exitUsage
		}
		fmt.Printf("%d definition(s) OK, %d enabled\n", len(defs), len(enabled))
		return exitOK
	}
	// Each binary-format block's decoder, its schema compiled now: a
	// schema file the format refuses stops the start like a bad
	// definition, before any plugin opens.
	decoders := map[*definition.Definition]map[int]decode.Decoder{}
	for _, d := range enabled {
		decs, err := formats.Decoders(d, os.Getenv)
		if err != nil {
			for _, e := range leaves(err) {
				log.Error("definition refused", "event", "startup_failed", "err", e)
			}
			return exitUsage
		}
		decoders[d] = decs
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return startupFailed(log, "--cpuprofile", err)
		}
		defer stop()
	}
	bin, err := child.FindHost(*hostBin, *pluginDir)
	if err != nil {
		return startupFailed(log, "no plugin host", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// One Go processor while the runtime is quiet, every one while it is
	// busy: connect/gomaxprocs says why.
	go gomaxprocs.Govern(ctx, os.Getenv, log)

	// One child process per library, shared by every sink that uses it;
	// it starts with its first sink's open.
	procs := map[string]*child.Process{}
	// Each batch in flight holds a host thread of its library's child.
	inFlight := map[string]int{}
	for _, d := range enabled {
		inFlight[d.LibraryPath(*pluginDir)] += d.InFlight()
	}
	var sinks []*pipeline.Sink
	var insts []*child.Instance
	metrics := observe.NewMetrics()
	// One budget for every sink: the process is what runs out of memory.
	budget := pipeline.NewBudget(*maxBuffered)
	metrics.Watch(budget)
	cfg := pipeline.Config{Brokers: splitList(*brokers), Logger: log, ShutdownTimeout: *shutdown, Observer: metrics, Budget: budget}
	for _, d := range enabled {
		lib := d.LibraryPath(*pluginDir)
		p := procs[lib]
		if p == nil {
			w := child.WorkersFor(*workers, inFlight[lib])
			if w != *workers {
				log.Info("plugin host threads raised to the batches its sinks may have in flight, plus one", "event", "host_workers",
					"library", lib, "workers", w, "max_in_flight_total", inFlight[lib])
			}
			p = child.New(bin, lib, child.Options{Workers: w, Logger: log, Stderr: stderr})
			procs[lib] = p
		}
		js, err := d.OpenConfig()
		if err != nil {
			return startupFailed(log, "plugin_config cannot be passed to the plugin", err, "sink_key", d.Key, "file", d.File)
		}
		inst := p.Instance(string(js), log.With("sink_key", d.Key))
		if d.InFlight() > len(d.Topics) {
			inst.AllowOverlap() // a block asks for batches in flight
		}
		insts = append(insts, inst)
		sc := cfg
		sc.Decoders = decoders[d]
		s := pipeline.New(d, inst, sc)
		sinks = append(sinks, s)
		metrics.Add(s, inst)
	}
	if *httpAddr != "" {
		// Bound before the plugins open, so that a taken address fails at
		// once and /readyz answers while a sink waits for its destination;
		// it serves until every sink has flushed and stopped.
		srv, err := listen(*httpAddr, observe.Handler(metrics), log)
		if err != nil {
			return startupFailed(log, "--http cannot listen", err, "addr", *httpAddr)
		}
		defer srv.Close()
		log.Info("http endpoint listening", "event", "http_listening", "addr", srv.Addr())
	}

	// live ends with a signal, a refused sink, or once every sink stopped;
	// deadline ends --shutdown-timeout later and bounds everything after:
	// the consumers' flush and commit (pipeline.Config.ShutdownTimeout,
	// counted from the same moment) and closing the plugins.
	live, stopLive := context.WithCancel(ctx)
	defer stopLive()
	deadline, expire := context.WithCancelCause(context.Background())
	defer expire(nil)
	timedOut := fmt.Errorf("--shutdown-timeout %v passed", *shutdown)
	defer context.AfterFunc(live, func() { time.AfterFunc(*shutdown, func() { expire(timedOut) }) })()

	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, s := range sinks {
		d := enabled[i]
		// Each sink opens on its own: one destination that is down does
		// not hold back the sinks whose plugins opened.
		wg.Go(func() {
			log.Info("sink starting", "event", "sink_started", "sink_key", d.Key, "library", d.LibraryPath(*pluginDir), "blocks", len(d.Topics))
			err := s.Run(live)
			var refused *pipeline.RefusedError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
			case errors.As(err, &refused):
				// A definition the plugin can never open is the
				// operator's to fix, as a bad definition is: every
				// sink stops (flushing and committing) and the exit
				// code says so.
				log.Error("sink refused at open; stopping every sink", "event", "sink_refused", "sink_key", d.Key, "file", d.File, "state", pipeline.StateError, "err", err)
				code = exitUsage
				stopLive()
			default:
				log.Error("sink failed", "event", "sink_failed", "sink_key", s.Key(), "state", pipeline.StateError, "err", err)
				code = max(code, exitSinkError)
			}
		})
	}
	wg.Wait()
	stopLive()
	if closeAll(deadline, log, insts, procs) {
		log.Error("shutdown timed out: plugin hosts killed", "event", "shutdown_timeout", "err", context.Cause(deadline))
		code = max(code, exitSinkError)
	}
	return code
}

// closeAll closes every instance, then every child process, within ctx,
// killing the children still running when it ends. It reports whether ctx
// cut any of it short.
func closeAll(ctx context.Context, log *slog.Logger, insts []*child.Instance, procs map[string]*child.Process) (cut bool) {
	for _, i := range insts {
		if err := i.CloseContext(ctx); err != nil {
			cut = cut || ctx.Err() != nil
			log.Warn("closing a sink instance", "event", "instance_close_failed", "err", err)
		}
	}
	for _, p := range procs {
		if err := p.Shutdown(ctx); err != nil {
			cut = cut || ctx.Err() != nil
			log.Warn("plugin host exit", "event", "host_close_failed", "err", err)
		}
	}
	return cut
}

// startupFailed logs why the runtime cannot start and returns exitUsage.
func startupFailed(log *slog.Logger, msg string, err error, attrs ...any) int {
	log.Error(msg, append([]any{"event", "startup_failed", "err", err}, attrs...)...)
	return exitUsage
}

// leaves flattens errors.Join trees into their single errors.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
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

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, errors.New("--log-format: want text or json")
}
