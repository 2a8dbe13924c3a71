package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/connect/audit/source"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/plugins/redshift"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// stdout receives the audit's report; tests replace it.
var stdout io.Writer = os.Stdout

// Exit codes of audit: exitOK when clean, exitSinkError (1) when an
// offset is missing or held twice, exitUsage for bad flags, definitions,
// a plugin it cannot audit, or a source it could not read, and
// exitNotAudited (3) when nothing else is wrong but a topic or partition
// that had something to check was not audited (a complete report says
// which).
const (
	exitNotClean   = exitSinkError
	exitNotAudited = 3
)

// runAudit is `picomq-connect audit <definition>`: every topic-partition
// of the definitions' [[topics]] blocks reconciled against the broker,
// the destination and the dead-letter topic (docs/runtime.md, Audit).
// Read-only: it joins no group, commits nothing and writes nowhere.
func runAudit(args []string) int {
	fs := flag.NewFlagSet("picomq-connect audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "localhost:9092", "comma-separated seed brokers (a block's bootstrap.servers property overrides it)")
	format := fs.String("format", "text", "text or json")
	only := fs.String("sink", "", "audit only the definition with this key")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: picomq-connect audit [flags] <definition.toml | directory>...\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "picomq-connect audit: --format %q: want text or json\n", *format)
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	defs, err := definition.Load(fs.Args()...)
	if err != nil {
		for _, e := range leaves(err) {
			fmt.Fprintln(stderr, "picomq-connect audit:", e)
		}
		return exitUsage
	}
	all := slices.Clone(defs)
	if *only != "" {
		defs = slices.DeleteFunc(defs, func(d *definition.Definition) bool { return !strings.EqualFold(d.Key, *only) })
		if len(defs) == 0 {
			fmt.Fprintf(stderr, "picomq-connect audit: --sink %q: no definition has this key\n", *only)
			return exitUsage
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var rep audit.Report
	for _, d := range defs {
		sr, err := auditSink(ctx, d, all, splitList(*brokers))
		if err != nil {
			fmt.Fprintf(stderr, "picomq-connect audit: sink %s (%s): %v\n", d.Key, d.File, err)
			return exitUsage
		}
		rep.Sinks = append(rep.Sinks, sr)
	}
	rep.Finish()
	if *format == "json" {
		err = audit.WriteJSON(stdout, &rep)
	} else {
		err = audit.WriteText(stdout, &rep)
	}
	if err != nil {
		fmt.Fprintln(stderr, "picomq-connect audit:", err)
		return exitUsage
	}
	switch {
	case rep.Missing > 0 || rep.Duplicated > 0:
		return exitNotClean
	case rep.Unaudited > 0:
		return exitNotAudited
	}
	return exitOK
}

// Which plugin a definition loads, by its library's name.
const (
	pluginDelta    = "delta"
	pluginRedshift = "redshift"
)

func pluginOf(d *definition.Definition) string {
	base := strings.TrimSuffix(filepath.Base(d.Path), ".so")
	switch {
	case strings.HasSuffix(base, "delta_sink"):
		return pluginDelta
	case strings.HasSuffix(base, "redshift_sink"):
		return pluginRedshift
	}
	return ""
}

// auditSink reads one definition's broker, destination and dead letters.
func auditSink(ctx context.Context, d *definition.Definition, all []*definition.Definition, brokers []string) (audit.SinkReport, error) {
	s := audit.Sink{Key: d.Key, File: d.File, Plugin: pluginOf(d)}
	raw, err := json.Marshal(d.PluginConfig)
	if err != nil {
		return audit.SinkReport{}, fmt.Errorf("[plugin_config]: %w", err)
	}
	env := sdk.EnvFrom(os.Environ())
	skipEmpty := false
	switch s.Plugin {
	case pluginDelta:
		cfg, err := delta.NewAudit(ctx, raw, d.Key, env)
		if err != nil {
			return audit.SinkReport{}, err
		}
		skipEmpty = cfg.SkipEmptyPayloads()
		s.Dest = &source.Delta{Key: d.Key, Cfg: cfg}
	case pluginRedshift:
		cfg, err := redshift.NewAudit(ctx, raw, d.Key, env)
		if err != nil {
			return audit.SinkReport{}, err
		}
		defer cfg.Close()
		s.Dest = &source.Redshift{Cfg: cfg}
	default:
		return audit.SinkReport{}, fmt.Errorf("path %q: the audit reads the Delta and Redshift sinks' destinations only", d.Path)
	}
	for i := range d.Topics {
		t := &d.Topics[i]
		opts, err := pipeline.ConnOpts(brokers, *t)
		if err != nil {
			return audit.SinkReport{}, fmt.Errorf("[[topics]] block %d: %w", t.Index, err)
		}
		k, err := source.NewKafka(opts)
		if err != nil {
			return audit.SinkReport{}, fmt.Errorf("[[topics]] block %d: %w", t.Index, err)
		}
		defer k.Close()
		topics := slices.Clone(t.Topics)
		if t.Pattern != "" {
			all, err := k.Topics(ctx)
			if err != nil {
				return audit.SinkReport{}, fmt.Errorf("[[topics]] block %d: listing topics: %w", t.Index, err)
			}
			for _, name := range all {
				if t.Consumes(name) && !slices.Contains(topics, name) {
					topics = append(topics, name)
				}
			}
		}
		slices.Sort(topics)
		blk := audit.Block{Broker: k, Group: t.ConsumerGroup, Topics: topics}
		if t.ErrorsTolerance == definition.ToleranceAll {
			blk.DeadLetters = t.DeadLetterFor
			s.Unaudited = append(s.Unaudited, sharedDeadLetters(d, t, topics, all)...)
		}
		var ok bool
		if blk.Skip, ok = audit.NewSkipper(t, skipEmpty); !ok {
			s.Notes = append(s.Notes, fmt.Sprintf("[[topics]] block %d: its transforms run on decoded %s records, which the audit does not decode: records they dropped count as missing", t.Index, t.Schema))
		}
		s.Blocks = append(s.Blocks, blk)
	}
	rep, err := audit.Run(ctx, s)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return rep, fmt.Errorf("interrupted: %w", err)
	}
	return rep, err
}

// sharedDeadLetters says which of topics block t of d sends to a
// dead-letter topic that a block of another loaded definition also sends
// the same topic's letters to. The letters carry only their source
// record's coordinates, so each sink's audit would take the other's
// letters for its own (a record one sink lost would look dead-lettered):
// d's dead letters prove nothing then.
func sharedDeadLetters(d *definition.Definition, t *definition.Topic, topics []string, all []*definition.Definition) []string {
	var out []string
	for _, o := range all {
		if o == d {
			continue
		}
		for i := range o.Topics {
			ot := &o.Topics[i]
			if ot.ErrorsTolerance != definition.ToleranceAll {
				continue
			}
			for _, topic := range topics {
				if dlq := t.DeadLetterFor(topic); ot.Consumes(topic) && ot.DeadLetterFor(topic) == dlq {
					out = append(out, fmt.Sprintf("[[topics]] block %d: dead-letter topic %s is also where sink %s (%s) sends the letters of topic %s: each audit takes the other's letters for its own; give each sink its own dead_letter_topic", t.Index, dlq, o.Key, o.File, topic))
				}
			}
		}
	}
	return out
}
