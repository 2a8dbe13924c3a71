package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/proccpu"
)

// The floor: an estimate of the CPU per record of the Kafka client alone,
// reading the topic the runtime just consumed. franz-go with its defaults,
// as an application would use it: no consumer group, no commits, nothing
// done with a record but reading its value's length; the runtime's GC
// target (400). Whatever picomq-connect does costs about this much at
// least; the rest of its figure is the runtime. (The runtime's client also
// pools its records and derives its fetch sizes, which makes it a little
// cheaper than this one.)
var (
	floorTopic   = flag.String("floor-consume", "", "internal (what the bench runs in a child process for the floor figure): read this topic from its start with a bare franz-go client until -floor-records records, print its CPU")
	floorRecords = flag.Int("floor-records", 0, "internal: see -floor-consume")
)

const floorPrefix = "floor-cpu-ns "

// floor runs this binary with -floor-consume on topic and returns the
// child's CPU from its first record to its last, as the child read it.
func floor(brokers []string, topic string, records int) (time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, self, "-brokers", strings.Join(brokers, ","),
		"-floor-consume", topic, "-floor-records", strconv.Itoa(records))
	cmd.Env = append(os.Environ(), "GOGC=400") // picomq-connect's default
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("floor consumer: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	return parseFloor(out.String())
}

// parseFloor reads the child's one line of output.
func parseFloor(out string) (time.Duration, error) {
	_, ns, ok := strings.Cut(strings.TrimSpace(out), floorPrefix)
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || n <= 0 {
		return 0, fmt.Errorf("floor consumer printed %q", out)
	}
	return time.Duration(n), nil
}

// floorConsume is the child: -floor-consume. The clock starts at the
// first record, so the client's start and its first fetch's wait are not
// counted (the runtime's figure has its own start and waits in it too, but
// spread over its whole run).
func floorConsume() error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokersFlag, ",")...),
		kgo.ConsumeTopics(*floorTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var start time.Duration
	var n, size int
	for n < *floorRecords {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%d of %d records read: %w", n, *floorRecords, err)
		}
		if err := fs.Err(); err != nil {
			return err
		}
		if n == 0 && fs.NumRecords() > 0 {
			if start, err = proccpu.Self(); err != nil {
				return err
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			size += len(r.Value)
		})
	}
	end, err := proccpu.Self()
	if err != nil {
		return err
	}
	if size == 0 {
		return errors.New("no record held a byte")
	}
	fmt.Printf("%s%d\n", floorPrefix, int64(end-start))
	return nil
}
