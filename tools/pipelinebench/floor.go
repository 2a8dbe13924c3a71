package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The floor: the CPU per record of the Kafka client alone, reading the
// topic the runtime just consumed. franz-go with its defaults, as an
// application would use it: no consumer group, no commits, nothing done
// with a record but reading its value's length. Whatever picomq-connect
// does costs at least this; the rest of its figure is the runtime.
var (
	floorTopic   = flag.String("floor-consume", "", "internal (what the bench runs in a child process for the floor figure): read this topic from its start with a bare franz-go client until -floor-records records, print its CPU")
	floorRecords = flag.Int("floor-records", 0, "internal: see -floor-consume")
)

const floorPrefix = "floor-cpu-ns "

// floor runs this binary with -floor-consume on topic and returns the
// child's CPU (user+sys, read by the child itself from its first to its
// last record, so without the process start).
func floor(brokers []string, topic string, records int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, os.Args[0], "-brokers", strings.Join(brokers, ","),
		"-floor-consume", topic, "-floor-records", strconv.Itoa(records))
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("floor consumer: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	_, ns, ok := strings.Cut(strings.TrimSpace(out.String()), floorPrefix)
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("floor consumer printed %q", out.String())
	}
	return time.Duration(n), nil
}

// floorConsume is the child: -floor-consume.
func floorConsume() error {
	start := processCPU()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokersFlag, ",")...),
		kgo.ConsumeTopics(*floorTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var n, bytes int
	for n < *floorRecords {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%d of %d records read: %w", n, *floorRecords, err)
		}
		if err := fs.Err(); err != nil {
			return err
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			bytes += len(r.Value)
		})
	}
	if bytes == 0 {
		return fmt.Errorf("%d records without a byte", n)
	}
	fmt.Printf("%s%d\n", floorPrefix, int64(processCPU()-start))
	return nil
}

// processCPU is this process's user+sys CPU so far: getrusage, to the
// microsecond, rather than /proc's 10 ms ticks (bench.ReadProcStat, for
// other processes), since the floor is a tenth of a second or so.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
