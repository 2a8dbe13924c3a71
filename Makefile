# PicoMQ heavy sink bundle. `make test` is what CI runs (see .ci/run).
SHELL := /bin/bash
GO ?= go
# Packages without cgo-heavy process spawning run under the race detector. The
# runtime's (connect/...) run against a scripted plugin (connect/internal/fakeplugin)
# and kfake; their cases through the built C host and test plugin skip without
# PICOMQ_DIST, which unit clears, and run in e2e.
UNIT_PKGS := ./shared/... ./plugins/... ./connect/... ./internal/... ./deploy/...

.PHONY: all build release release-check image test unit e2e demo demo-delta bench bench-delta bench-redshift bench-upsert bench-redshift-upsert bench-pipeline bench-formats bench-partitions services services-stop pyenv fmt-check vet generate-flatbuf clean

all: build

build:
	buildscripts/build.sh

# Release tarballs in dist/, linux/amd64 and linux/arm64 (buildscripts/release.sh says what is in
# them): make release VERSION=1.2.3. Prints each arch's glibc floor. Reproducible: see release-check.
release:
	@[ -n "$(VERSION)" ] || { echo "usage: make release VERSION=x.y.z" >&2; exit 2; }
	VERSION=$(VERSION) buildscripts/release.sh

# Builds the release twice, both arches, from two clones of HEAD at different paths (the second with
# an empty Go build cache) and fails unless the tarballs are the same bytes; then checks and runs
# them (arm64 under qemu-aarch64-static when installed). Slow (four full builds), so not in `make
# test`; e2e/release's TestReleaseTarball checks one amd64 release there.
release-check: pyenv
	PICOMQ_RELEASE_CHECK=1 $(GO) test -count=1 -timeout 120m -run TestReleaseReproducible -v ./e2e/release

# The container image of the linux/amd64 release, built without a container engine or registry
# (buildscripts/image.sh, docs/deploy.md): dist/picomq-heavy-sinks-<v>-image-linux-amd64/ (OCI
# layout) and .tar (docker load). make image VERSION=1.2.3; default 0.0.0-dev. e2e/release's
# TestImage builds it twice from the release TestReleaseTarball checks and reads it back (make test).
image:
	VERSION=$(or $(VERSION),0.0.0-dev) buildscripts/image.sh

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Unit and integration tests of the Go packages, under the race detector.
# Some (the Redshift sink against the emulator, pyarrow readers) need the
# services and the Python env.
unit: services pyenv
	set -a; source .services.env; set +a; \
	PICOMQ_DIST= $(GO) test -race -count=1 -timeout 20m $(UNIT_PKGS)

# Starts PostgreSQL, MinIO, Azurite, fake-gcs-server, Kafka and the Schema Registry (installing them when missing) and writes .services.env.
services:
	buildscripts/services.sh start

services-stop:
	buildscripts/services.sh stop

# End-to-end: the real libraries in the C host, PostgreSQL, MinIO and Kafka
# from services.sh, delta-rs and pyarrow from the venv buildscripts/pyenv.sh
# makes. Packages run in parallel: e2e/connect's chaos test restarts MinIO
# and PostgreSQL instances of its own (services.StartPrivate), never these.
e2e: build services pyenv
	set -a; source .services.env; set +a; \
	PICOMQ_DIST=$(CURDIR)/dist $(GO) test -count=1 -timeout 25m ./e2e/... ./connect/... ./cmd/... ./tools/...

pyenv:
	buildscripts/pyenv.sh >/dev/null

test: fmt-check vet unit e2e

# The whole pipeline: an in-process broker (kfake), a sample producer, picomq-connect running
# examples/definitions/, the Delta tables read back by delta-rs. The Redshift half runs when
# `make services` is up (PostgreSQL + MinIO; the emulator starts in-process). Under a minute.
demo: build pyenv
	$(GO) run ./tools/pipelinedemo

# The Delta sink alone in the C host, batch by batch, including a replay.
demo-delta: build pyenv
	$(GO) run ./tools/deltademo

bench: bench-delta bench-redshift

# Where the benchmarks' file:// tables go (-dir): default $TMPDIR. Point it at the disk your tables
# live on: the kernel's cost of creating and syncing files is most of the sink's system CPU.
BENCH_DIR ?=
# FILE_SYNC=filesystem benches the file target with file_sync = "filesystem" (one syncfs per batch).
FILE_SYNC ?=

# records/s, MB/s, consume() p50/p99 and peak RSS, file:// and MinIO, and the ratio to delta-rs.
bench-delta: build services pyenv
	$(GO) run ./tools/deltabench -batches 200 $(if $(BENCH_DIR),-dir $(BENCH_DIR)) $(if $(FILE_SYNC),-file-sync $(FILE_SYNC))

# records/s, p99 produce-to-commit latency, runtime and child CPU per record vs the plugin alone,
# lag at a fixed rate: the Delta sink through picomq-connect, file:// and MinIO. Broker:
# $PICOMQ_KAFKA_BROKERS (a real Kafka, from services.sh) or else an in-process kfake.
bench-pipeline: build services pyenv
	set -a; source .services.env; set +a; \
	$(GO) run ./tools/pipelinebench -batches 100 $(if $(BENCH_DIR),-dir $(BENCH_DIR))

# The same records as JSON, plain Avro and plain protobuf, and as JSON through a three-transform chain, each
# through picomq-connect in every repeat of ONE run (so the ratios are comparable): one table per target of
# records/s, runtime and child CPU/record, the runtime's share of the plugin-only CPU and its difference to
# the JSON run (docs/runtime.md, "Formats and transforms"). BENCH_FORMATS picks the variants.
BENCH_FORMATS ?= json,avro,proto,json+transforms
bench-formats: build services pyenv
	set -a; source .services.env; set +a; \
	$(GO) run ./tools/pipelinebench -batches 300 -steady 0 -formats $(BENCH_FORMATS) $(if $(BENCH_DIR),-dir $(BENCH_DIR))

# Many partitions through picomq-connect, real Kafka: a 48-partition topic at 3,000 records/s for 20 s into one
# Delta table (file:// and MinIO), first with the spec's defaults, then with batches in flight, group commits
# and a latency bound: records/s, produce-to-commit p50/p95/p99, table versions/s, lag, runtime and host
# CPU/record, peak RSS, lost commit races. More flags in PARTITIONBENCH, e.g. the three-process drain:
# PARTITIONBENCH="-processes 3 -partitions 12 -backlog 500000 -batch-length 100", with pipelined batches and
# spaced commits: add -topic-key max_in_flight=64 -topic-key max_in_flight_per_partition=16
# -plugin-key group_commit_linger=500ms (docs/delta.md, Many writers of one table); or -targets redshift
# -copy-latency 1s -commit-latency 600ms.
PARTITIONBENCH ?=
bench-partitions: build services pyenv
	set -a; source .services.env; set +a; \
	$(GO) run ./tools/partitionbench -targets file,s3 $(if $(BENCH_DIR),-dir $(BENCH_DIR)) $(PARTITIONBENCH) && \
	$(GO) run ./tools/partitionbench -targets file,s3 -max-batch-latency 500ms -topic-key max_in_flight=48 \
		$(if $(BENCH_DIR),-dir $(BENCH_DIR)) $(PARTITIONBENCH)

# rows/s through the emulator for batch_size 100/1000/10000, CPU per row, SQL round trips, statements and S3 requests per chunk, peak RSS.
# write_mode = "upsert" on a 1M-row table: 1 %, 10 %, 50 % updates per batch, file:// and MinIO: records/s,
# host CPU/record, files rewritten per commit; delta-rs merge of the same changes in the same run.
bench-upsert: build services pyenv
	set -a; source .services.env; set +a; \
	$(GO) run ./tools/upsertbench $(if $(BENCH_DIR),-dir $(BENCH_DIR))

bench-redshift: build services
	$(GO) run ./tools/rsbench

# write_mode = "upsert" into a target of 1M keys: records/s and host CPU per record at 1 %, 10 % and 50 % updates.
bench-redshift-upsert: build services
	$(GO) run ./tools/rsbench -upsert-rows 1000000 -update-pcts 1,10,50 -batches 5

# Regenerates connect/decode/flatbuf's flatc output: the Go accessors of reflection.fbs and the tests'
# .bfbs schemas and buffers (buildscripts/flatbuf.sh; installs Debian's flatc 2.0.8 when missing).
# The build and the tests use the committed files: neither needs flatc.
generate-flatbuf:
	buildscripts/flatbuf.sh

clean:
	rm -rf dist
