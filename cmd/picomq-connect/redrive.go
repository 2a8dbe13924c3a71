package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/connect/redrive"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

// runRedrive is `picomq-connect redrive [flags] <definition>...`: the dead
// letters of each enabled definition put back through its sink
// (connect/redrive, docs/runtime.md "Redrive"). Exit 0 when every letter
// to put back was written (or found written), filtered or dead-lettered
// again; 1 otherwise; 2 for bad flags or definitions, or a plugin that
// cannot take a redrive.
func runRedrive(args []string) (code int) {
	fs := flag.NewFlagSet("picomq-connect redrive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "localhost:9092", "comma-separated seed brokers (a block's bootstrap.servers property overrides it)")
	pluginDir := fs.String("plugin-dir", "dist", "directory a definition's relative path is resolved against")
	hostBin := fs.String("host", "", "picomq-host binary (default: picomq-host in --plugin-dir, next to this executable, or on PATH)")
	openTimeout := fs.Duration("open-timeout", time.Minute, "how long the plugin may answer RETRY at open before the redrive gives up")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	format := fs.String("log-format", "text", "text or json")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: picomq-connect redrive [flags] <definition.toml | directory>...\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	log, err := newLogger(stderr, *level, *format)
	if err != nil {
		fmt.Fprintln(stderr, "picomq-connect redrive:", err)
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	defs, err := definition.Load(fs.Args()...)
	if err != nil {
		for _, e := range leaves(err) {
			log.Error("definition refused", "event", "startup_failed", "err", e)
		}
		return exitUsage
	}
	bin, err := child.FindHost(*hostBin, *pluginDir)
	if err != nil {
		return startupFailed(log, "no plugin host", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for _, d := range defs {
		if !d.Enabled {
			log.Info("sink disabled; not redriven", "sink_key", d.Key, "file", d.File)
			continue
		}
		c := redriveOne(ctx, log, d, bin, *pluginDir, splitList(*brokers), *openTimeout)
		code = max(code, c)
		if c == exitUsage {
			break
		}
	}
	return code
}

// redriveOne redrives one definition in a plugin host of its own.
func redriveOne(ctx context.Context, log *slog.Logger, d *definition.Definition, bin, pluginDir string, brokers []string, openTimeout time.Duration) int {
	log = log.With("sink_key", d.Key)
	if err := d.CheckLibrary(pluginDir); err != nil {
		return startupFailed(log, "plugin library not found", err, "file", d.File)
	}
	decs, err := formats.Decoders(d, os.Getenv)
	if err != nil {
		for _, e := range leaves(err) {
			log.Error("definition refused", "event", "startup_failed", "err", e)
		}
		return exitUsage
	}
	js, err := d.OpenConfig()
	if err != nil {
		return startupFailed(log, "plugin_config cannot be passed to the plugin", err, "file", d.File)
	}
	proc := child.New(bin, d.LibraryPath(pluginDir), child.Options{Workers: 1, Logger: log, Stderr: stderr})
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := proc.Shutdown(sctx); err != nil {
			log.Warn("plugin host exit", "event", "host_close_failed", "err", err)
		}
	}()
	inst := proc.Instance(string(js), log)
	if err := openBounded(ctx, log, inst, openTimeout); err != nil {
		if hostclient.CodeOf(err) == hostclient.StatusBadConfig {
			return startupFailed(log, "plugin refused its configuration", err, "file", d.File)
		}
		log.Error("plugin did not open", "event", "sink_failed", "err", err)
		return exitSinkError
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := inst.CloseContext(cctx); err != nil {
			log.Warn("closing the sink instance", "event", "instance_close_failed", "err", err)
		}
	}()
	if !inst.Redrive() {
		return startupFailed(log, "the plugin cannot take a redrive", fmt.Errorf("%s does not declare \"redrive\" in describe() (ABI 1.4): it would take dead letters for replays of what it already wrote", d.LibraryPath(pluginDir)), "file", d.File)
	}
	rep, err := redrive.Run(ctx, redrive.Config{Def: d, Brokers: brokers, Decoders: decs, Out: inst, Log: log})
	if err != nil {
		log.Error("dead letters not read", "event", "redrive_failed", "err", err)
		return exitSinkError
	}
	fmt.Printf("sink %s (%s)\n", d.Key, d.File)
	if err := rep.Write(os.Stdout); err != nil {
		return exitSinkError
	}
	if !rep.OK() {
		return exitSinkError
	}
	return exitOK
}

// openBounded opens the instance, again after RETRY (or a host that died)
// with the runtime's open backoff, for at most timeout.
func openBounded(ctx context.Context, log *slog.Logger, inst *child.Instance, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := inst.Open(ctx)
		if err == nil {
			return nil
		}
		retry := errors.Is(err, child.ErrExited) || hostclient.CodeOf(err) == hostclient.StatusRetry
		if !retry || ctx.Err() != nil {
			return err
		}
		wait := pipeline.OpenBackoff(attempt)
		log.Warn("plugin not open yet; opening again", "event", "open_retry", "attempt", attempt, "err", err, "backoff_seconds", wait.Seconds())
		if backoff.Sleep(ctx, wait) != nil {
			return fmt.Errorf("gave up opening after %d attempt(s) within --open-timeout %v: %w", attempt, timeout, err)
		}
	}
}
