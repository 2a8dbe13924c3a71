package protodec

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// fastTarget is one message type the differential tests decode, with the
// encoder of its schema.
type fastTarget struct {
	enc *encoder
	md  protoreflect.MessageDescriptor
}

// checkFast decodes payload by the fast path and by the reference path
// (dynamicpb, then the writer) and fails t unless the fast path handed the
// record back or wrote what the reference writes, byte for byte (and never
// where the reference refuses the record). It reports whether the fast
// path took the record.
func checkFast(t testing.TB, tg fastTarget, payload []byte) bool {
	t.Helper()
	got, ok := tg.enc.fast([]byte("x"), tg.md, payload)
	want, err := tg.enc.reference([]byte("x"), tg.md, payload)
	if !ok {
		if string(got) != "x" {
			t.Fatalf("%s %x: handed back, dst changed to %q", tg.md.FullName(), payload, got)
		}
		return false
	}
	if err != nil {
		t.Fatalf("%s %x: fast path wrote %s, the reference refuses it: %v", tg.md.FullName(), payload, got, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s %x:\nfast:      %s\nreference: %s", tg.md.FullName(), payload, got, want)
	}
	return true
}

// fastTargets returns every message type of every schema in testdata (the
// shop descriptor set with the well-known types it imports, the proto2
// and editions schemas of testdata/fast) and of the other tests' inline
// schemas, map entries and nested types included.
func fastTargets(t testing.TB) []fastTarget {
	t.Helper()
	raw, err := os.ReadFile("testdata/shop.binpb")
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatal(err)
	}
	var out []fastTarget
	shop := newEncoder(files)
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		out = appendMessages(out, shop, fd.Messages())
		return true
	})
	schemas := []string{
		readFile(t, "testdata/fast/proto2.proto"),
		readFile(t, "testdata/fast/edition.proto"),
		// builtin_test.go: google.type and confluent.type.Decimal fields
		// (the decimal is written by its own writer: the reference path's).
		readFile(t, "testdata/known/row.proto"),
		// errors_test.go, wkt_test.go
		`syntax = "proto2"; message P { optional string s = 1; required int32 n = 2; }`,
		`syntax = "proto3"; package p; import "google/protobuf/any.proto";
message A { google.protobuf.Any x = 1; } message B { int64 n = 1; }`,
		`syntax = "proto3"; import "google/protobuf/timestamp.proto"; message T { google.protobuf.Timestamp t = 1; }`,
		// The pipelinebench workload's record (tools/pipelinebench/testdata/workload.proto).
		readFile(t, "../../../tools/pipelinebench/testdata/workload.proto"),
	}
	for _, text := range schemas {
		s, err := FromSchema(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = appendMessages(out, s.enc, s.file.Messages())
	}
	return out
}

func appendMessages(out []fastTarget, enc *encoder, mds protoreflect.MessageDescriptors) []fastTarget {
	for i := 0; i < mds.Len(); i++ {
		out = append(out, fastTarget{enc, mds.Get(i)})
		out = appendMessages(out, enc, mds.Get(i).Messages())
	}
	return out
}

func readFile(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

type fastVector struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Payload []byte `json:"payload"`
}

// fastSeeds returns FuzzFastPath's inputs (a byte choosing the target,
// then the payload): every vector of vectors.json and registry.json, the
// committed corpus of FuzzAppendJSON (registry payloads: the message
// indexes choose the target), and for every target a few random messages
// encoded by the runtime, each also twice in a row (every field repeated:
// the merge cases).
func fastSeeds(t testing.TB, targets []fastTarget) [][]byte {
	t.Helper()
	byName := func(name string) byte {
		for i, tg := range targets {
			if string(tg.md.FullName()) == name {
				return byte(i)
			}
		}
		t.Fatalf("no target %s", name)
		return 0
	}
	var seeds [][]byte
	var vectors []fastVector
	unmarshalFile(t, "testdata/vectors.json", &vectors)
	for _, v := range vectors {
		seeds = append(seeds, append([]byte{byName(v.Message)}, v.Payload...))
	}
	var reg registryVectors
	unmarshalFile(t, "testdata/registry.json", &reg)
	s, err := FromSchema(reg.Schema, reg.Refs)
	if err != nil {
		t.Fatal(err)
	}
	registryPayloads := [][]byte{}
	for _, v := range reg.Vectors {
		registryPayloads = append(registryPayloads, v.Payload)
	}
	corpus, _ := filepath.Glob("testdata/fuzz/FuzzAppendJSON/*")
	for _, name := range corpus {
		lines := strings.Split(strings.TrimSpace(readFile(t, name)), "\n")
		quoted := strings.TrimSuffix(strings.TrimPrefix(lines[len(lines)-1], "[]byte("), ")")
		p, err := strconv.Unquote(quoted)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		registryPayloads = append(registryPayloads, []byte(p))
	}
	for _, p := range registryPayloads {
		md, rest, err := messageAt(s.file, p)
		if err != nil {
			continue
		}
		seeds = append(seeds, append([]byte{byName(string(md.FullName()))}, rest...))
	}
	rnd := rand.New(rand.NewPCG(24, 1))
	for i, tg := range targets {
		for range 3 {
			m := dynamicpb.NewMessage(tg.md)
			fill(rnd, m, 0)
			p, err := proto.MarshalOptions{AllowPartial: true, Deterministic: true}.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, append([]byte{byte(i)}, p...), append(append([]byte{byte(i)}, p...), p...))
		}
	}
	return seeds
}

func unmarshalFile(t testing.TB, name string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(readFile(t, name)), v); err != nil {
		t.Fatal(err)
	}
}

// fill sets about half of m's fields to random values (extreme ones
// included), lists and maps to a few elements.
func fill(rnd *rand.Rand, m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if rnd.IntN(2) == 0 || depth > 3 && fd.Message() != nil {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range rnd.IntN(3) {
				k := randomValue(rnd, fd.MapKey(), nil, depth)
				mp.Set(k.MapKey(), randomValue(rnd, fd.MapValue(), func() protoreflect.Value { return mp.NewValue() }, depth))
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range rnd.IntN(4) {
				l.Append(randomValue(rnd, fd, l.NewElement, depth))
			}
		default:
			m.Set(fd, randomValue(rnd, fd, func() protoreflect.Value { return m.NewField(fd) }, depth))
		}
	}
}

func randomValue(rnd *rand.Rand, fd protoreflect.FieldDescriptor, newMsg func() protoreflect.Value, depth int) protoreflect.Value {
	u := rnd.Uint64() >> rnd.IntN(64)
	if rnd.IntN(4) == 0 {
		u = -u
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(u&1 == 1)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if rnd.IntN(5) == 0 {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(int32(u)))
		}
		return protoreflect.ValueOfEnum(vals.Get(rnd.IntN(vals.Len())).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(u))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(u))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(u))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(u)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(math.Float32frombits(uint32(u)))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(math.Float64frombits(u))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString([]string{"", "a", "ü\"\\\n\x01😀", strconv.FormatUint(u, 36)}[rnd.IntN(4)])
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(strconv.FormatUint(u, 2)))
	}
	v := newMsg()
	if name := fd.Message().FullName(); name == "google.protobuf.Timestamp" {
		v.Message().Set(fd.Message().Fields().ByNumber(1), protoreflect.ValueOfInt64(int64(u%253402300799)))
		v.Message().Set(fd.Message().Fields().ByNumber(2), protoreflect.ValueOfInt32(int32(u%1e9)))
	} else if name != "google.protobuf.Any" {
		fill(rnd, v.Message(), depth+1)
	}
	return v
}

// FuzzFastPath is the fast path's proof: on every message type of every
// test schema, for any bytes, the fast path hands the record back or
// writes exactly what the reference path writes, and never takes a record
// the reference refuses.
func FuzzFastPath(f *testing.F) {
	targets := fastTargets(f)
	for _, s := range fastSeeds(f, targets) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		tg := targets[int(in[0])%len(targets)]
		checkFast(t, tg, in[1:])
		// The same message as the runtime encodes it: most mutated
		// inputs are handed back (an unknown field, a field twice), their
		// canonical form much less often.
		if c, ok := canonical(tg.md, in[1:]); ok {
			checkFast(t, tg, c)
		}
	})
}

// canonical returns payload as the runtime encodes the message it holds.
func canonical(md protoreflect.MessageDescriptor, payload []byte) (c []byte, ok bool) {
	defer func() {
		if recover() != nil { // the runtime's known panic: see codec.go
			ok = false
		}
	}()
	m := dynamicpb.NewMessage(md)
	if unmarshal.Unmarshal(payload, m) != nil {
		return nil, false
	}
	c, err := proto.MarshalOptions{AllowPartial: true, Deterministic: true}.Marshal(m)
	return c, err == nil
}

// The committed vectors are plain records: the fast path takes those it
// supports (all but Duration and Struct: the two named here), writes what
// the reference writes, and allocates nothing.
func TestFastPathTakesVectors(t *testing.T) {
	targets := fastTargets(t)
	var vectors []fastVector
	unmarshalFile(t, "testdata/vectors.json", &vectors)
	handedBack := map[string]bool{"wkt": true, "wkt_edges": true}
	taken := 0
	for _, v := range vectors {
		var tg fastTarget
		for _, x := range targets {
			if string(x.md.FullName()) == v.Message {
				tg = x
				break
			}
		}
		if checkFast(t, tg, v.Payload) == handedBack[v.Name] {
			t.Errorf("%s: taken %v, want %v", v.Name, !handedBack[v.Name], handedBack[v.Name])
		}
		if !handedBack[v.Name] {
			taken++
			dst := make([]byte, 0, 4096)
			if n := testing.AllocsPerRun(100, func() { tg.enc.fast(dst, tg.md, v.Payload) }); n != 0 {
				t.Errorf("%s: %v allocations per record", v.Name, n)
			}
		}
	}
	t.Logf("fast path: %d of %d vectors", taken, len(vectors))

	// registry.json: Order (max), Line, Refund (a map), PageView, Reason.
	var reg registryVectors
	unmarshalFile(t, "testdata/registry.json", &reg)
	s, err := FromSchema(reg.Schema, reg.Refs)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range reg.Vectors {
		md, rest, err := messageAt(s.file, v.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if !checkFast(t, fastTarget{s.enc, md}, rest) {
			t.Errorf("registry %s: handed back", v.Name)
		}
	}
}

type registryVectors struct {
	Schema  string            `json:"schema"`
	Refs    map[string]string `json:"refs"`
	Vectors []fastVector      `json:"vectors"`
}

// The edges of what the fast path takes, one defect or case per payload,
// each checked against the reference as well.
func TestFastPathEdges(t *testing.T) {
	targets := fastTargets(t)
	target := func(name string) fastTarget {
		for _, tg := range targets {
			if string(tg.md.FullName()) == name {
				return tg
			}
		}
		t.Fatalf("no %s", name)
		return fastTarget{}
	}
	for _, tc := range []struct {
		name, message string
		payload       []byte
		taken         bool
	}{
		{"empty", "shop.v1.Order", nil, true},
		{"scalar twice (last wins)", "shop.v1.Order", []byte{0x10, 0x01, 0x10, 0x02}, false},
		{"message twice (merged)", "shop.v1.Order", []byte{0xaa, 0x01, 0x02, 0x10, 0x01, 0xaa, 0x01, 0x02, 0x18, 0x01}, false},
		{"two oneof members", "shop.v1.Order", []byte{0xc2, 0x01, 0x01, 'v', 0xc8, 0x01, 0x01}, false},
		{"wrong wire type", "shop.v1.Order", []byte{0x11, 0, 0, 0, 0, 0, 0, 0, 0}, false},
		{"unknown field", "shop.v1.Order", []byte{0xa0, 0x06, 0x01}, false},
		{"invalid UTF-8", "shop.v1.Order", []byte{0x0a, 0x01, 0xff}, false},
		{"truncated", "shop.v1.Order", []byte{0x0a, 0x05, 'a'}, false},
		// counts (19): map<string, int64>; by_id (20): map<int32, Money>.
		{"map entry", "shop.v1.Order", []byte{0x9a, 0x01, 0x05, 0x0a, 0x01, 'a', 0x10, 0x01}, true},
		{"map entry, value first", "shop.v1.Order", []byte{0x9a, 0x01, 0x05, 0x10, 0x01, 0x0a, 0x01, 'a'}, true},
		{"map entry, no key", "shop.v1.Order", []byte{0x9a, 0x01, 0x02, 0x10, 0x01}, true},
		{"map entry, no value", "shop.v1.Order", []byte{0x9a, 0x01, 0x03, 0x0a, 0x01, 'a'}, true},
		{"map entry, empty", "shop.v1.Order", []byte{0x9a, 0x01, 0x00}, true},
		{"map entry, no message value", "shop.v1.Order", []byte{0xa2, 0x01, 0x02, 0x08, 0x7d}, true},
		{"map entries out of order", "shop.v1.Order", []byte{0xa2, 0x01, 0x02, 0x08, 0x0a, 0xa2, 0x01, 0x0b, 0x08, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, true},
		{"map key twice in an entry", "shop.v1.Order", []byte{0x9a, 0x01, 0x06, 0x0a, 0x01, 'a', 0x0a, 0x01, 'b'}, false},
		{"map key twice, wrong wire type", "shop.v1.Order", []byte{0x9a, 0x01, 0x05, 0x0a, 0x01, '0', 0x08, '0'}, false},
		{"map entry, unknown field", "shop.v1.Order", []byte{0x9a, 0x01, 0x05, 0x0a, 0x01, 'a', 0x18, 0x01}, false},
		{"map key in two entries", "shop.v1.Order", []byte{0x9a, 0x01, 0x03, 0x0a, 0x01, 'a', 0x9a, 0x01, 0x05, 0x0a, 0x01, 'a', 0x10, 0x02}, false},
		{"map of more entries than fastMaxEntries", "shop.v1.Order", entries(fastMaxEntries + 1), false},
		{"map of fastMaxEntries entries", "shop.v1.Order", entries(fastMaxEntries), true},
		{"map, closed enum values", "p2.Plain", []byte{0xaa, 0x01, 0x04, 0x08, 0x03, 0x10, 0x07}, true},
		{"map, closed enum value unnamed", "p2.Plain", []byte{0xaa, 0x01, 0x04, 0x08, 0x03, 0x10, 0x05}, false},
		{"packed and unpacked in one list", "shop.v1.Order", []byte{0x90, 0x01, 0x01, 0x92, 0x01, 0x02, 0x02, 0x03, 0x90, 0x01, 0x04}, true},
		{"packed fixed32 of 3 bytes", "p2.Plain", []byte{0x32, 0x03, 1, 2, 3}, false},
		{"closed enum, named", "p2.Plain", []byte{0x18, 0x07}, true},
		{"closed enum, unnamed", "p2.Plain", []byte{0x18, 0x05}, false},
		{"open enum, unnamed", "shop.v1.Order", []byte{0x80, 0x01, 0x05}, true},
		{"proto2 defaults", "p2.Plain", nil, true},
		{"required field in a nested message", "p2.Plain", []byte{0x92, 0x01, 0x00}, false},
		{"group", "p2.Plain", []byte{0x9b, 0x01, 0x9c, 0x01}, false},
		{"extension", "p2.Plain", []byte{0xa0, 0x06, 0x01}, false},
		{"timestamp", "T", []byte{0x0a, 0x04, 0x08, 0x01, 0x10, 0x02}, true},
		{"timestamp out of range", "T", []byte{0x0a, 0x07, 0x08, 0x80, 0x83, 0xd1, 0xff, 0xaf, 0x07}, false},
		{"wrapper", "p2.Plain", []byte{0x62, 0x02, 0x08, 0x05}, true},
		{"empty wrapper", "p2.Plain", []byte{0x62, 0x00}, true},
		{"unvalidated string, invalid", "ed.NoRequired", []byte{0x0a, 0x01, 0xff}, false},
		{"legacy required", "ed.E", []byte{0x48, 0x01}, false},
		{"recursion", "p2.Inner", nested(fastMaxDepth + 5), false},
		{"recursion within the limit", "p2.Inner", nested(fastMaxDepth - 1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkFast(t, target(tc.message), tc.payload); got != tc.taken {
				t.Fatalf("taken %v, want %v", got, tc.taken)
			}
		})
	}
}

// entries returns shop.v1.Order counts with n entries, keys in reverse
// order.
func entries(n int) []byte {
	var p []byte
	for i := n; i > 0; i-- {
		entry := protowire.AppendTag(nil, 1, protowire.BytesType)
		entry = protowire.AppendString(entry, strconv.Itoa(i))
		p = protowire.AppendTag(p, 19, protowire.BytesType)
		p = protowire.AppendBytes(p, entry)
	}
	return p
}

// nested returns a p2.Inner nested n deep through field 3.
func nested(n int) []byte {
	p := []byte{0x08, 0x01}
	for range n {
		p = protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), p)
	}
	return p
}

// BenchmarkPageViewReference is BenchmarkPageView/plain by the reference
// path: what a record the fast path hands back costs (plus the fast
// path's attempt).
func BenchmarkPageViewReference(b *testing.B) {
	var vectors []fastVector
	unmarshalFile(b, "testdata/vectors.json", &vectors)
	var payload []byte
	for _, v := range vectors {
		if v.Name == "pageview" {
			payload = v.Payload
		}
	}
	var tg fastTarget
	for _, x := range fastTargets(b) {
		if x.md.FullName() == "shop.v1.PageView" {
			tg = x
		}
	}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	var dst []byte
	var err error
	for b.Loop() {
		if dst, err = tg.enc.reference(dst[:0], tg.md, payload); err != nil {
			b.Fatal(err)
		}
	}
}

// The pipelinebench workload's record (picomq.bench.v1.Event: strings,
// int64, int32, doubles, bools, two Timestamps) takes the fast path, as
// the benchmark's figures assume, writes what the reference writes, and
// allocates nothing.
func TestFastPathTakesWorkload(t *testing.T) {
	var tg fastTarget
	for _, x := range fastTargets(t) {
		if x.md.FullName() == "picomq.bench.v1.Event" {
			tg = x
		}
	}
	if tg.md == nil {
		t.Fatal("no picomq.bench.v1.Event among the targets")
	}
	m := dynamicpb.NewMessage(tg.md)
	fields := tg.md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		var v protoreflect.Value
		switch f.Kind() {
		case protoreflect.StringKind:
			v = protoreflect.ValueOfString("héllo \"" + string(f.Name()) + "\"")
		case protoreflect.Int64Kind:
			v = protoreflect.ValueOfInt64(-1 << 40)
		case protoreflect.Int32Kind:
			v = protoreflect.ValueOfInt32(-7)
		case protoreflect.DoubleKind:
			v = protoreflect.ValueOfFloat64(123.456)
		case protoreflect.BoolKind:
			v = protoreflect.ValueOfBool(true)
		case protoreflect.MessageKind: // google.protobuf.Timestamp
			ts := dynamicpb.NewMessage(f.Message())
			ts.Set(f.Message().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1788470104))
			ts.Set(f.Message().Fields().ByName("nanos"), protoreflect.ValueOfInt32(123000000))
			v = protoreflect.ValueOfMessage(ts)
		default:
			t.Fatalf("field %s: kind %v not set by this test", f.Name(), f.Kind())
		}
		m.Set(f, v)
	}
	payload, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !checkFast(t, tg, payload) {
		t.Fatal("the workload's record was handed back to the reference path")
	}
	dst := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { tg.enc.fast(dst, tg.md, payload) }); n != 0 {
		t.Errorf("%v allocations per record", n)
	}
}
