package protodec

import (
	"math"
	"strconv"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// The fast path: the common record read straight from its wire bytes with
// the official runtime's own primitives (protowire), without building a
// dynamic message, which is three quarters of the reference path's cost
// (docs/decode.md "Cost"). It takes only what it can read exactly as the
// reference (dynamicpb's unmarshalling, then the JSON writer) reads it, and
// hands everything else back: a record it does not take is decoded by the
// reference path, so it changes no output and no error. It never fails a
// record itself: the reference path says what is wrong. FuzzFastPath
// (fast_test.go) holds it to that, byte for byte.
//
// Handed back (the whole record, not the field):
//   - a field number the message does not declare (an unknown field, an
//     extension), a wire type that is not the field's (the reference drops
//     such a field), a group;
//   - a map entry with another field than key and value, or one of them
//     twice, a key in two entries, more than fastMaxEntries entries;
//   - a non-repeated field given twice (the reference keeps the last scalar
//     and merges messages), two members of one oneof;
//   - bytes that do not parse, a string that is not UTF-8, a closed enum's
//     unnamed number;
//   - a message type with a proto2 required field, more than fastMaxFields
//     fields, more than 64 oneofs, a field number above fastMaxNumber, the
//     message-set wire format; a well-known type other than Timestamp and
//     the wrappers; nesting deeper than fastMaxDepth.
//
// Unset fields are written as the reference writes them (worked out once
// per type, by the writer itself, from an empty dynamic message). Set
// values become the protoreflect.Value the runtime would have stored
// (decode_gen.go's conversions: int32(v), DecodeZigZag, Float32frombits...)
// and are written by the reference writer's own value method.

const (
	fastMaxFields  = 64      // the position array lives on the stack
	fastMaxDepth   = 32      // nested messages
	fastMaxNumber  = 1 << 12 // field numbers indexed by a slice
	fastMaxEntries = 32      // entries of one map, sorted on the stack
)

// fastMsg is the fast path's plan of one message type, next to its msgPlan.
type fastMsg struct {
	ok     bool          // false: every record of the type takes the reference path
	wk     fastWellKnown // how the message is written
	byNum  []int8        // field number -> index in fields, -1 for none
	fields []fastField   // msgPlan.fields' order
	wkNums [2]int8       // wkTimestamp: seconds, nanos; wkWrapper: value
}

type fastWellKnown uint8

const (
	wkNone fastWellKnown = iota
	wkTimestamp
	wkWrapper
)

type fastField struct {
	num         protowire.Number
	wire        protowire.Type // the wire type of one value (of an element, for lists)
	repeated    bool           // a list or a map: may come any number of times
	mapping     bool
	packable    bool   // a list of scalars: also read packed, as the runtime does
	unsupported bool   // a group: the reference path reads it
	closed      bool   // a closed enum: an unnamed number is the reference path's
	oneof       int8   // index among the message's real oneofs, -1 for none
	absent      string // the field's JSON when the bytes do not hold it

	// A map's entries: key (field 1) and value (field 2, of wire type
	// entryWire; the value's plan is the fieldPlan's val).
	entryWire  protowire.Type
	keyWire    protowire.Type
	keyKind    protoreflect.Kind
	key        *valuePlan // writes a string key
	keyDefault protoreflect.Value
	keyOrder   func(x, y protoreflect.MapKey) int // the reference writer's order
}

// mapEntry is one entry of a map, read by fastMap.
type mapEntry struct {
	key    protoreflect.Value
	val    []byte // from the value's first byte on
	hasVal bool
}

// fast appends the JSON of payload, a message of md, and reports whether
// it did; when it did not, the reference path must decode payload (dst is
// then returned as given, its spare capacity possibly written).
func (e *encoder) fast(dst []byte, md protoreflect.MessageDescriptor, payload []byte) (out []byte, ok bool) {
	if len(payload) >= math.MaxInt32 {
		return dst, false
	}
	// No panic is known here (FuzzFastPath looks for them); were there
	// one, the reference path would still decide the record, as it does
	// for a panic of the planning (plans.of).
	defer func() {
		if recover() != nil {
			out, ok = dst, false
		}
	}()
	if out, ok = e.fastMessage(dst, e.plans.of(md), payload, 0); !ok {
		return dst, false
	}
	return out, true
}

// fastMessage appends data, a message of p. pos holds, per field, the
// offset+1 of its first tag (0: absent), of its value for a field that is
// not repeated, found by one pass over the bytes that checks every tag and
// length before anything is written.
func (e *encoder) fastMessage(b []byte, p *msgPlan, data []byte, depth int) ([]byte, bool) {
	fm := p.fast
	if fm == nil || !fm.ok || depth > fastMaxDepth {
		return b, false
	}
	var at [fastMaxFields]int32
	pos := at[:len(fm.fields)]
	if !fm.scan(data, pos) {
		return b, false
	}
	switch fm.wk {
	case wkTimestamp:
		secs, ok := fm.singular(p, pos, data, fm.wkNums[0])
		if !ok {
			return b, false
		}
		nanos, ok := fm.singular(p, pos, data, fm.wkNums[1])
		if !ok {
			return b, false
		}
		b, err := appendTimestampValue(b, secs.Int(), nanos.Int())
		return b, err == nil
	case wkWrapper:
		i := fm.wkNums[0]
		if pos[i] == 0 {
			return append(b, fm.fields[i].absent...), true
		}
		return e.fastField(b, p, pos, data, int(i), depth)
	}
	b = append(b, '{')
	var ok bool
	for i := range p.fields {
		b = append(b, p.fields[i].key...)
		if pos[i] == 0 {
			b = append(b, fm.fields[i].absent...)
			continue
		}
		if b, ok = e.fastField(b, p, pos, data, i, depth); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// scan finds each field's first tag in data. It refuses (false) what the
// fast path does not take: see the list at the top of the file.
func (fm *fastMsg) scan(data []byte, pos []int32) bool {
	var oneofs uint64
	for i := 0; i < len(data); {
		num, typ, n := consumeTag(data[i:])
		if n < 0 || int(num) >= len(fm.byNum) {
			return false
		}
		k := fm.byNum[num]
		if k < 0 {
			return false
		}
		f := &fm.fields[k]
		if f.unsupported || typ != f.wire && !(f.packable && typ == protowire.BytesType) {
			return false
		}
		m := skipValue(num, typ, data[i+n:])
		if m < 0 {
			return false
		}
		switch {
		case pos[k] == 0 && f.repeated:
			pos[k] = int32(i + 1)
		case pos[k] == 0:
			pos[k] = int32(i + n + 1) // its value: read once, no tag to skip again
		case !f.repeated:
			return false
		}
		if f.oneof >= 0 {
			bit := uint64(1) << f.oneof
			if oneofs&bit != 0 {
				return false
			}
			oneofs |= bit
		}
		i += n + m
	}
	return true
}

// consumeTag is protowire.ConsumeTag, a one-byte tag (field numbers 1 to
// 15, most of a record's) read inline: scan's cost is mostly its tags.
func consumeTag(data []byte) (protowire.Number, protowire.Type, int) {
	if len(data) > 0 && data[0] < 0x80 && data[0] >= 1<<3 {
		return protowire.Number(data[0] >> 3), protowire.Type(data[0] & 7), 1
	}
	return protowire.ConsumeTag(data)
}

// skipValue is protowire.ConsumeFieldValue (the length of the value of
// wire type typ at the start of data, negative when it is not whole), a
// one-byte varint and the fixed widths read inline.
func skipValue(num protowire.Number, typ protowire.Type, data []byte) int {
	switch typ {
	case protowire.VarintType:
		if len(data) > 0 && data[0] < 0x80 {
			return 1
		}
	case protowire.Fixed64Type:
		if len(data) >= 8 {
			return 8
		}
	case protowire.Fixed32Type:
		if len(data) >= 4 {
			return 4
		}
	case protowire.BytesType:
		if len(data) > 0 && data[0] < 0x80 && int(data[0]) < len(data) {
			return 1 + int(data[0])
		}
	}
	return protowire.ConsumeFieldValue(num, typ, data)
}

// singular returns the value of field i, not a list, as the runtime would
// hold it: its default when absent.
func (fm *fastMsg) singular(p *msgPlan, pos []int32, data []byte, i int8) (protoreflect.Value, bool) {
	if pos[i] == 0 {
		return p.fields[i].fd.Default(), true
	}
	v, _, ok := scalar(p.fields[i].val.kind, data[pos[i]-1:])
	return v, ok
}

// fastField appends the value of field i, found by scan, not its key.
func (e *encoder) fastField(b []byte, p *msgPlan, pos []int32, data []byte, i int, depth int) ([]byte, bool) {
	f, ff := &p.fields[i], &p.fast.fields[i]
	data = data[pos[i]-1:]
	if ff.mapping {
		return e.fastMap(b, f, ff, data, depth)
	}
	if !ff.repeated {
		b, _, ok := e.fastValue(b, &f.val, ff, data, depth)
		return b, ok
	}
	// Every occurrence of the field from its first one on, in wire order,
	// each one element or a packed run of them: the runtime appends them so.
	b = append(b, '[')
	first, ok := true, true
	for len(data) > 0 {
		num, typ, n := consumeTag(data) // all checked by scan
		m := skipValue(num, typ, data[n:])
		if num == ff.num {
			run, k := data[n:], 0
			if typ == protowire.BytesType && ff.packable {
				run, _ = protowire.ConsumeBytes(run)
			}
			for len(run) > 0 {
				if !first {
					b = append(b, ',')
				}
				first = false
				if b, k, ok = e.fastValue(b, &f.val, ff, run, depth); !ok {
					return b, false
				}
				if typ != protowire.BytesType || !ff.packable {
					break // one element
				}
				run = run[k:]
			}
		}
		data = data[n+m:]
	}
	return append(b, ']'), true
}

// fastMap appends the entries of map field f, from its first entry in
// data on, as the reference writer does: an object, keys as strings in
// its order. Handed back: an entry with a field other than key and value,
// one of them twice or of another wire type (the runtime skips it, keeps
// the last, merges), a key in two entries (the runtime keeps the last),
// more than fastMaxEntries entries.
func (e *encoder) fastMap(b []byte, f *fieldPlan, ff *fastField, data []byte, depth int) ([]byte, bool) {
	var entries [fastMaxEntries]mapEntry
	n := 0
	for len(data) > 0 {
		num, typ, k := protowire.ConsumeTag(data) // all checked by scan
		m := protowire.ConsumeFieldValue(num, typ, data[k:])
		if num == ff.num {
			if n == len(entries) {
				return b, false
			}
			entry, _ := protowire.ConsumeBytes(data[k:])
			me := &entries[n]
			*me = mapEntry{key: ff.keyDefault}
			haveKey := false
			for len(entry) > 0 {
				num, typ, t := protowire.ConsumeTag(entry)
				if t < 0 {
					return b, false
				}
				entry = entry[t:]
				var l int
				switch {
				case num == 1 && typ == ff.keyWire && !haveKey:
					var ok bool
					if me.key, l, ok = scalar(ff.keyKind, entry); !ok {
						return b, false
					}
					haveKey = true
				case num == 2 && typ == ff.entryWire && !me.hasVal:
					if l = protowire.ConsumeFieldValue(num, typ, entry); l < 0 {
						return b, false
					}
					me.val, me.hasVal = entry[:l], true
				default:
					return b, false
				}
				entry = entry[l:]
			}
			// Insertion sort: a few entries, no allocation.
			for j := n; j > 0; j-- {
				c := ff.keyOrder(entries[j-1].key.MapKey(), entries[j].key.MapKey())
				if c == 0 {
					return b, false
				}
				if c < 0 {
					break
				}
				entries[j-1], entries[j] = entries[j], entries[j-1]
			}
			n++
		}
		data = data[k+m:]
	}
	b = append(b, '{')
	var ok bool
	for i := range entries[:n] {
		me := &entries[i]
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = e.fastMapKey(b, ff, me.key); !ok {
			return b, false
		}
		b = append(b, ':')
		switch {
		case me.hasVal:
			b, _, ok = e.fastValue(b, &f.val, ff, me.val, depth)
		case f.val.kind == protoreflect.MessageKind:
			b, ok = e.fastMessage(b, f.val.msg, nil, depth+1) // the runtime's empty message
		default:
			var err error
			b, err = e.value(b, &f.val, f.val.fd.Default())
			ok = err == nil
		}
		if !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// fastMapKey appends a map key as the reference writer does: the
// string, the decimal number, true or false, as a JSON string (digits,
// '-' and letters need no escaping).
func (e *encoder) fastMapKey(b []byte, ff *fastField, key protoreflect.Value) ([]byte, bool) {
	switch ff.keyKind {
	case protoreflect.StringKind:
		b, err := e.value(b, ff.key, key) // refuses invalid UTF-8
		return b, err == nil
	case protoreflect.BoolKind:
		b = strconv.AppendBool(append(b, '"'), key.Bool())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		b = strconv.AppendUint(append(b, '"'), key.Uint(), 10)
	default:
		b = strconv.AppendInt(append(b, '"'), key.Int(), 10)
	}
	return append(b, '"'), true
}

// fastValue appends the one value at the start of data (of the field's
// element wire type) and returns the bytes it took.
func (e *encoder) fastValue(b []byte, vp *valuePlan, ff *fastField, data []byte, depth int) ([]byte, int, bool) {
	if vp.kind == protoreflect.MessageKind {
		v, n := protowire.ConsumeBytes(data)
		if n < 0 {
			return b, 0, false
		}
		b, ok := e.fastMessage(b, vp.msg, v, depth+1)
		return b, n, ok
	}
	// The workload's common kinds written straight from the wire bytes,
	// each exactly as scalar then the writer's value method write it.
	switch vp.kind {
	case protoreflect.StringKind:
		v, n := protowire.ConsumeBytes(data)
		if n < 0 {
			return b, 0, false
		}
		b, ok := jsonw.AppendString(b, v) // false: invalid UTF-8, the reference's error
		return b, n, ok
	case protoreflect.Int64Kind, protoreflect.Int32Kind, protoreflect.BoolKind:
		v, n := protowire.ConsumeVarint(data)
		if n < 0 {
			return b, 0, false
		}
		switch vp.kind {
		case protoreflect.Int64Kind:
			return strconv.AppendInt(b, int64(v), 10), n, true
		case protoreflect.Int32Kind:
			return strconv.AppendInt(b, int64(int32(v)), 10), n, true
		}
		return strconv.AppendBool(b, protowire.DecodeBool(v)), n, true
	case protoreflect.DoubleKind:
		v, n := protowire.ConsumeFixed64(data)
		if n < 0 {
			return b, 0, false
		}
		return jsonw.AppendFloat(b, math.Float64frombits(v), 64), n, true
	}
	v, n, ok := scalar(vp.kind, data)
	if !ok {
		return b, 0, false
	}
	if ff.closed {
		if _, named := vp.enum.name(v.Enum()); !named {
			return b, 0, false
		}
	}
	b, err := e.value(b, vp, v) // the reference writer's own; refuses invalid UTF-8
	return b, n, err == nil
}

// scalar reads one value of kind k at the start of data, converted as the
// runtime converts it (google.golang.org/protobuf/proto/decode_gen.go,
// unmarshalScalar). Strings and bytes alias data: the writer only reads
// them.
func scalar(k protoreflect.Kind, data []byte) (protoreflect.Value, int, bool) {
	switch k {
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind,
		protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		v, n := protowire.ConsumeVarint(data)
		if n < 0 {
			return protoreflect.Value{}, 0, false
		}
		switch k {
		case protoreflect.BoolKind:
			return protoreflect.ValueOfBool(protowire.DecodeBool(v)), n, true
		case protoreflect.EnumKind:
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(v)), n, true
		case protoreflect.Int32Kind:
			return protoreflect.ValueOfInt32(int32(v)), n, true
		case protoreflect.Sint32Kind:
			return protoreflect.ValueOfInt32(int32(protowire.DecodeZigZag(v & math.MaxUint32))), n, true
		case protoreflect.Uint32Kind:
			return protoreflect.ValueOfUint32(uint32(v)), n, true
		case protoreflect.Int64Kind:
			return protoreflect.ValueOfInt64(int64(v)), n, true
		case protoreflect.Sint64Kind:
			return protoreflect.ValueOfInt64(protowire.DecodeZigZag(v)), n, true
		default:
			return protoreflect.ValueOfUint64(v), n, true
		}
	case protoreflect.Sfixed32Kind, protoreflect.Fixed32Kind, protoreflect.FloatKind:
		v, n := protowire.ConsumeFixed32(data)
		if n < 0 {
			return protoreflect.Value{}, 0, false
		}
		switch k {
		case protoreflect.Sfixed32Kind:
			return protoreflect.ValueOfInt32(int32(v)), n, true
		case protoreflect.Fixed32Kind:
			return protoreflect.ValueOfUint32(v), n, true
		default:
			return protoreflect.ValueOfFloat32(math.Float32frombits(v)), n, true
		}
	case protoreflect.Sfixed64Kind, protoreflect.Fixed64Kind, protoreflect.DoubleKind:
		v, n := protowire.ConsumeFixed64(data)
		if n < 0 {
			return protoreflect.Value{}, 0, false
		}
		switch k {
		case protoreflect.Sfixed64Kind:
			return protoreflect.ValueOfInt64(int64(v)), n, true
		case protoreflect.Fixed64Kind:
			return protoreflect.ValueOfUint64(v), n, true
		default:
			return protoreflect.ValueOfFloat64(math.Float64frombits(v)), n, true
		}
	case protoreflect.StringKind, protoreflect.BytesKind:
		v, n := protowire.ConsumeBytes(data)
		if n < 0 {
			return protoreflect.Value{}, 0, false
		}
		if k == protoreflect.BytesKind {
			return protoreflect.ValueOfBytes(v), n, true
		}
		return protoreflect.ValueOfString(unsafe.String(unsafe.SliceData(v), len(v))), n, true
	}
	return protoreflect.Value{}, 0, false
}

// planFast works out the fast path's plan of p and of every message type
// it reaches; seen ends the recursion of recursive types.
func planFast(p *msgPlan, seen map[*msgPlan]*fastMsg) *fastMsg {
	if fm, ok := seen[p]; ok {
		return fm
	}
	fm := &fastMsg{}
	seen[p] = fm
	p.fast = fm
	md := p.desc
	switch name := md.FullName(); {
	case name == "google.protobuf.Timestamp":
		fm.wk = wkTimestamp
	case isWrapper(name):
		fm.wk = wkWrapper
	case p.wk != nil:
		return fm // written by protojson or from a oneof: the reference path's
	}
	if len(p.fields) > fastMaxFields {
		return fm
	}
	if opts, _ := md.Options().(*descriptorpb.MessageOptions); opts.GetMessageSetWireFormat() {
		return fm
	}
	oneofIndex := map[protoreflect.OneofDescriptor]int8{}
	for i, ods := 0, md.Oneofs(); i < ods.Len(); i++ {
		if od := ods.Get(i); !od.IsSynthetic() {
			if len(oneofIndex) == 64 {
				return fm
			}
			oneofIndex[od] = int8(len(oneofIndex))
		}
	}
	maxNum := protowire.Number(0)
	for i := range p.fields {
		maxNum = max(maxNum, p.fields[i].fd.Number())
	}
	if maxNum >= fastMaxNumber {
		return fm
	}
	fm.byNum = make([]int8, maxNum+1)
	for i := range fm.byNum {
		fm.byNum[i] = -1
	}
	empty := dynamicpb.NewMessage(md)
	fm.fields = make([]fastField, len(p.fields))
	for i := range p.fields {
		f, ff := &p.fields[i], &fm.fields[i]
		fd := f.fd
		fm.byNum[fd.Number()] = int8(i)
		ff.num = fd.Number()
		ff.oneof = -1
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			ff.oneof = oneofIndex[od]
		}
		ff.wire, ff.packable = wireOf(f.val.kind)
		ff.packable = ff.packable && f.shape == list
		ff.repeated = f.shape == list || f.shape == mapping
		ff.unsupported = f.val.kind == protoreflect.GroupKind
		if f.shape == mapping {
			ff.mapping = true
			ff.entryWire = ff.wire
			ff.wire = protowire.BytesType
			kd := fd.MapKey()
			ff.keyWire, _ = wireOf(kd.Kind())
			ff.key = &valuePlan{fd: kd, kind: protoreflect.StringKind}
			ff.keyKind = kd.Kind()
			ff.keyDefault = kd.Default()
			ff.keyOrder = keyOrder(kd.Kind())
		}
		ff.closed = f.val.kind == protoreflect.EnumKind && f.val.fd.Enum().IsClosed() && !f.val.enum.null
		switch f.shape {
		case required:
			return fm
		case list:
			ff.absent = "[]"
		case mapping:
			ff.absent = "{}"
		case optional:
			ff.absent = "null"
		default:
			if f.val.kind == protoreflect.MessageKind || f.val.kind == protoreflect.GroupKind {
				return fm // no such field (messages have presence); kept out all the same
			}
			absent, err := (*encoder)(nil).value(nil, &f.val, empty.Get(fd))
			if err != nil {
				return fm
			}
			ff.absent = string(absent)
		}
		if f.val.kind == protoreflect.MessageKind {
			planFast(f.val.msg, seen)
		}
	}
	switch fm.wk {
	case wkTimestamp:
		if !fm.hasField(p, 1, protoreflect.Int64Kind) || !fm.hasField(p, 2, protoreflect.Int32Kind) {
			return fm
		}
		fm.wkNums = [2]int8{fm.byNum[1], fm.byNum[2]}
	case wkWrapper:
		if int(maxNum) < 1 || fm.byNum[1] < 0 || p.fields[fm.byNum[1]].shape != singular {
			return fm
		}
		fm.wkNums[0] = fm.byNum[1]
	}
	fm.ok = true
	return fm
}

// hasField reports whether field number n is a singular field of kind k.
func (fm *fastMsg) hasField(p *msgPlan, n protowire.Number, k protoreflect.Kind) bool {
	if int(n) >= len(fm.byNum) || fm.byNum[n] < 0 {
		return false
	}
	f := &p.fields[fm.byNum[n]]
	return f.shape == singular && f.val.kind == k
}

// wireOf returns the wire type of one value of kind k, and whether a list
// of k may also come packed.
func wireOf(k protoreflect.Kind) (protowire.Type, bool) {
	switch k {
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind,
		protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return protowire.VarintType, true
	case protoreflect.Sfixed32Kind, protoreflect.Fixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type, true
	case protoreflect.Sfixed64Kind, protoreflect.Fixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type, true
	case protoreflect.GroupKind:
		return protowire.StartGroupType, false
	}
	return protowire.BytesType, false // string, bytes, message
}
