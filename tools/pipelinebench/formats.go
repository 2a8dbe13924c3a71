package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// The workload's record as an Avro schema and as a protobuf message
// (testdata/workload.proto compiled by testdata/gen_proto.py).
var (
	//go:embed testdata/workload.avsc
	avroSchema string
	//go:embed testdata/workload.binpb
	protoDescriptorSet []byte
)

const protoMessage = "picomq.bench.v1.Event"

// variant is one way the workload reaches picomq-connect: the payloads'
// format, and whether the block runs the three-transform chain.
type variant struct {
	format     string // json, avro, proto: the definition's schema
	transforms bool
}

// parseVariants reads -formats: a comma-separated list of json, avro,
// proto, each optionally "+transforms". json must be one of them: it is
// the baseline the others are compared with.
func parseVariants(list string) ([]variant, error) {
	var vs []variant
	seen := map[variant]bool{}
	hasJSON := false
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		format, suffix, _ := strings.Cut(s, "+")
		v := variant{format: format, transforms: suffix == "transforms"}
		if (format != "json" && format != "avro" && format != "proto") || (suffix != "" && !v.transforms) {
			return nil, fmt.Errorf("-formats: %q: want json, avro or proto, each optionally +transforms", s)
		}
		if seen[v] {
			return nil, fmt.Errorf("-formats: %q twice", s)
		}
		seen[v] = true
		hasJSON = hasJSON || v == variant{format: "json"}
		vs = append(vs, v)
	}
	if !hasJSON {
		return nil, fmt.Errorf("-formats %q: json must be one of them (the baseline)", list)
	}
	return vs, nil
}

func (v variant) String() string {
	if v.transforms {
		return v.format + "+transforms"
	}
	return v.format
}

// slug names the variant's tables and topics: "" for plain json (the
// names the bench always used), else "_avro", "_json_transforms", ...
func (v variant) slug() string {
	if v == (variant{format: "json"}) {
		return ""
	}
	return "_" + strings.ReplaceAll(v.String(), "+", "_")
}

// transformChain is the chain of the +transforms variants, one transform
// of each kind the issue names: a computed field, a deleted one, a rename.
// Each result lands in a column of the workload's table, so the plugin
// writes as many values as without the chain (a field the table lacks
// would be skipped, with a warning): updated_at is replaced in place by
// the time of the transform (timestamp_rfc3339), note is deleted and
// referrer renamed to note (the table's referrer column is null).
var transformChain = []string{
	"",
	"[[topics.transforms]]",
	`type = "add_fields"`,
	`fields = [{ name = "updated_at", compute = "timestamp_rfc3339" }]`,
	"",
	"[[topics.transforms]]",
	`type = "delete_fields"`,
	`paths = ["note"]`,
	"",
	"[[topics.transforms]]",
	`type = "update_fields"`,
	`field = "referrer"`,
	`rename_to = "note"`,
}

// block is the variant's [[topics]] keys after schema (the transforms
// last: their tables end the block). The schema files are written into
// work, where the definition names them.
func (v variant) block(work string) ([]string, error) {
	var lines []string
	switch v.format {
	case "avro":
		path := filepath.Join(work, "workload.avsc")
		if err := os.WriteFile(path, []byte(avroSchema), 0o644); err != nil {
			return nil, err
		}
		lines = append(lines, "avro_schema_path = "+strconv.Quote(path))
	case "proto":
		path := filepath.Join(work, "workload.binpb")
		if err := os.WriteFile(path, protoDescriptorSet, 0o644); err != nil {
			return nil, err
		}
		lines = append(lines, "proto_descriptor_set_path = "+strconv.Quote(path), "proto_message = "+strconv.Quote(protoMessage))
	}
	if v.transforms {
		lines = append(lines, transformChain...)
	}
	return lines, nil
}

// event is the workload's record (workload.Delta's JSON), with its two
// timestamps parsed for the binary formats.
type event struct {
	EventID    int64     `json:"event_id" avro:"event_id"`
	UserID     int64     `json:"user_id" avro:"user_id"`
	Session    string    `json:"session" avro:"session"`
	Event      string    `json:"event" avro:"event"`
	Page       string    `json:"page" avro:"page"`
	Referrer   string    `json:"referrer" avro:"referrer"`
	Country    string    `json:"country" avro:"country"`
	Device     string    `json:"device" avro:"device"`
	Browser    string    `json:"browser" avro:"browser"`
	Amount     float64   `json:"amount" avro:"amount"`
	Discount   float64   `json:"discount" avro:"discount"`
	Score      float64   `json:"score" avro:"score"`
	Quantity   int32     `json:"quantity" avro:"quantity"`
	Items      int32     `json:"items" avro:"items"`
	IsNew      bool      `json:"is_new" avro:"is_new"`
	IsPaid     bool      `json:"is_paid" avro:"is_paid"`
	CreatedRaw string    `json:"created_at"`
	UpdatedRaw string    `json:"updated_at"`
	CreatedAt  time.Time `json:"-" avro:"created_at"`
	UpdatedAt  time.Time `json:"-" avro:"updated_at"`
	Note       string    `json:"note" avro:"note"`
	Region     string    `json:"region" avro:"region"`
}

// parseEvent reads one workload payload: created_at is RFC 3339,
// updated_at "2006-01-02 15:04:05.000" in UTC (the form the sink coerces).
func parseEvent(payload []byte) (event, error) {
	var e event
	err := json.Unmarshal(payload, &e)
	if err == nil {
		e.CreatedAt, err = time.Parse(time.RFC3339Nano, e.CreatedRaw)
	}
	if err == nil {
		e.UpdatedAt, err = time.Parse("2006-01-02 15:04:05.000", e.UpdatedRaw)
	}
	return e, err
}

// encoder turns one workload record into the variant's payload.
type encoder func(event) ([]byte, error)

func newEncoder(format string) (encoder, error) {
	switch format {
	case "avro":
		schema, err := avro.Parse(avroSchema)
		if err != nil {
			return nil, err
		}
		return func(e event) ([]byte, error) { return avro.Marshal(schema, e) }, nil
	case "proto":
		return newProtoEncoder()
	}
	return nil, fmt.Errorf("no encoder for %q", format)
}

// newProtoEncoder encodes with dynamicpb over the committed descriptor
// set: the message the runtime decodes, no generated Go code.
func newProtoEncoder() (encoder, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(protoDescriptorSet, &set); err != nil {
		return nil, err
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, err
	}
	d, err := files.FindDescriptorByName(protoMessage)
	if err != nil {
		return nil, err
	}
	md := d.(protoreflect.MessageDescriptor)
	field := func(name string) protoreflect.FieldDescriptor { return md.Fields().ByName(protoreflect.Name(name)) }
	timestamp := func(name string, t time.Time) protoreflect.Value {
		f := field(name)
		ts := dynamicpb.NewMessage(f.Message())
		ts.Set(f.Message().Fields().ByName("seconds"), protoreflect.ValueOfInt64(t.Unix()))
		ts.Set(f.Message().Fields().ByName("nanos"), protoreflect.ValueOfInt32(int32(t.Nanosecond())))
		return protoreflect.ValueOfMessage(ts)
	}
	return func(e event) ([]byte, error) {
		m := dynamicpb.NewMessage(md)
		for name, v := range map[string]protoreflect.Value{
			"event_id": protoreflect.ValueOfInt64(e.EventID), "user_id": protoreflect.ValueOfInt64(e.UserID),
			"session": protoreflect.ValueOfString(e.Session), "event": protoreflect.ValueOfString(e.Event),
			"page": protoreflect.ValueOfString(e.Page), "referrer": protoreflect.ValueOfString(e.Referrer),
			"country": protoreflect.ValueOfString(e.Country), "device": protoreflect.ValueOfString(e.Device),
			"browser": protoreflect.ValueOfString(e.Browser), "amount": protoreflect.ValueOfFloat64(e.Amount),
			"discount": protoreflect.ValueOfFloat64(e.Discount), "score": protoreflect.ValueOfFloat64(e.Score),
			"quantity": protoreflect.ValueOfInt32(e.Quantity), "items": protoreflect.ValueOfInt32(e.Items),
			"is_new": protoreflect.ValueOfBool(e.IsNew), "is_paid": protoreflect.ValueOfBool(e.IsPaid),
			"created_at": timestamp("created_at", e.CreatedAt), "updated_at": timestamp("updated_at", e.UpdatedAt),
			"note": protoreflect.ValueOfString(e.Note), "region": protoreflect.ValueOfString(e.Region),
		} {
			m.Set(field(name), v)
		}
		return proto.MarshalOptions{Deterministic: true}.Marshal(m)
	}, nil
}

// encodeWorkload returns data with every payload in format (json: data
// itself): the same records, offsets and timestamps.
func encodeWorkload(data [][]hostclient.Record, format string) ([][]hostclient.Record, error) {
	if format == "json" {
		return data, nil
	}
	enc, err := newEncoder(format)
	if err != nil {
		return nil, err
	}
	out := make([][]hostclient.Record, len(data))
	for b, recs := range data {
		out[b] = make([]hostclient.Record, len(recs))
		for i, rec := range recs {
			e, err := parseEvent(rec.Payload)
			if err == nil {
				rec.Payload, err = enc(e)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: record %d: %w", format, rec.Offset, err)
			}
			out[b][i] = rec
		}
	}
	return out, nil
}

// printVariants prints the per-format table of one target: each figure's
// median over the repeats, with its range.
func printVariants(variants []variant, payloads map[string][][]hostclient.Record, f figures) {
	fmt.Println("  per format, the same records (medians (range) over the repeats):")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  format\tbytes/record\trecords/s\truntime µs/record\tchild µs/record\truntime share %\truntime vs json µs/record\t")
	for _, v := range variants {
		n := v.String()
		fmt.Fprintf(w, "  %s\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", n, payloadBytes(payloads[v.format]), f.get(n+" /s", 0),
			f.get(n+" runtime µs", 2), f.get(n+" child µs", 2), f.get(n+" share %", 1), f.get(n+" vs json µs", 2))
	}
	w.Flush()
	fmt.Println("  runtime share: the run's runtime CPU per record over the same repeat's plugin-only CPU per record (target ≤ 15 %);")
	fmt.Println("  runtime vs json: the run's runtime CPU per record minus the json run's of the same repeat (the issue's target for decoding: ≤ 1 µs).")
}

// payloadBytes is the mean payload size of data.
func payloadBytes(data [][]hostclient.Record) float64 {
	total, n := 0, 0
	for _, recs := range data {
		for _, r := range recs {
			total += len(r.Payload)
			n++
		}
	}
	return float64(total) / float64(max(n, 1))
}
