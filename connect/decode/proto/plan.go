package protodec

import (
	"sync"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// msgPlan is what the JSON writer needs of one message type, worked out
// once per Codec instead of per record: each field's key already quoted,
// its shape, its enum's names. Walking descriptors through protoreflect's
// interfaces for every field of every record was a third of the writer's
// time.
type msgPlan struct {
	desc   protoreflect.MessageDescriptor
	wk     wellKnownFunc // set for the well-known types protojson writes specially
	fields []fieldPlan   // declaration order
	fast   *fastMsg      // the wire fast path's plan (fast.go)
}

type fieldPlan struct {
	fd     protoreflect.FieldDescriptor
	key    string // `"name":`, after a ',' unless the first field
	shape  fieldShape
	val    valuePlan         // the value; for a list its elements, for a map its values
	mapKey protoreflect.Kind // a map's key kind
}

// field returns the plan of the field numbered n.
func (p *msgPlan) field(n protoreflect.FieldNumber) *fieldPlan {
	return &p.fields[p.desc.Fields().ByNumber(n).Index()]
}

// fieldShape says how a field is written.
type fieldShape uint8

const (
	singular fieldShape = iota // no presence: always written
	optional                   // presence: null when unset
	required                   // proto2 required: an error when unset
	list
	mapping
)

// valuePlan writes one singular value of a field (an element, for lists
// and maps).
type valuePlan struct {
	fd   protoreflect.FieldDescriptor // for errors
	kind protoreflect.Kind
	enum *enumPlan // enum fields
	msg  *msgPlan  // message and group fields
}

// enumPlan holds an enum's value names, quoted, by number: a slice when
// the numbers are 0..n-1 (the common case), else a map.
type enumPlan struct {
	null   bool // google.protobuf.NullValue: always null
	dense  []string
	sparse map[protoreflect.EnumNumber]string
}

func (p *enumPlan) name(n protoreflect.EnumNumber) (string, bool) {
	if p.dense != nil {
		if n >= 0 && int(n) < len(p.dense) {
			return p.dense[n], true
		}
		return "", false
	}
	s, ok := p.sparse[n]
	return s, ok
}

// plans caches each message type's plan: a registry schema's codec sees
// several message types, each planned the first time a payload of it comes.
type plans struct {
	mu    sync.Mutex
	cache sync.Map // protoreflect.MessageDescriptor -> *msgPlan
}

func (ps *plans) of(md protoreflect.MessageDescriptor) *msgPlan {
	if p, ok := ps.cache.Load(md); ok {
		return p.(*msgPlan)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.cache.Load(md); ok {
		return p.(*msgPlan)
	}
	p := planMessage(md, map[protoreflect.MessageDescriptor]*msgPlan{})
	planFast(p, map[*msgPlan]*fastMsg{})
	ps.cache.Store(md, p)
	return p
}

// planMessage plans md and every message type it reaches; seen ends the
// recursion of recursive types (google.protobuf.Struct and Value, a tree
// node).
func planMessage(md protoreflect.MessageDescriptor, seen map[protoreflect.MessageDescriptor]*msgPlan) *msgPlan {
	if p, ok := seen[md]; ok {
		return p
	}
	p := &msgPlan{desc: md, wk: wellKnown[md.FullName()]}
	seen[md] = p
	fields := md.Fields()
	p.fields = make([]fieldPlan, fields.Len())
	for i := range p.fields {
		fd := fields.Get(i)
		f := &p.fields[i]
		f.fd = fd
		f.key = string(jsonw.AppendStringLossy(nil, fd.Name())) + ":"
		if i > 0 {
			f.key = "," + f.key
		}
		switch {
		case fd.IsMap():
			f.shape = mapping
			f.mapKey = fd.MapKey().Kind()
			f.val = planValue(fd.MapValue(), seen)
		case fd.IsList():
			f.shape = list
			f.val = planValue(fd, seen)
		case fd.Cardinality() == protoreflect.Required:
			f.shape = required
			f.val = planValue(fd, seen)
		case fd.HasPresence():
			f.shape = optional
			f.val = planValue(fd, seen)
		default:
			f.val = planValue(fd, seen)
		}
	}
	return p
}

func planValue(fd protoreflect.FieldDescriptor, seen map[protoreflect.MessageDescriptor]*msgPlan) valuePlan {
	v := valuePlan{fd: fd, kind: fd.Kind()}
	switch v.kind {
	case protoreflect.EnumKind:
		v.enum = planEnum(fd.Enum())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		v.msg = planMessage(fd.Message(), seen)
	}
	return v
}

func planEnum(ed protoreflect.EnumDescriptor) *enumPlan {
	if ed.FullName() == "google.protobuf.NullValue" {
		return &enumPlan{null: true}
	}
	values := ed.Values()
	p := &enumPlan{dense: make([]string, values.Len())}
	for i := range p.dense {
		ev := values.ByNumber(protoreflect.EnumNumber(i))
		if ev == nil { // not 0..n-1
			p.dense = nil
			break
		}
		p.dense[i] = string(jsonw.AppendStringLossy(nil, ev.Name()))
	}
	if p.dense == nil {
		p.sparse = make(map[protoreflect.EnumNumber]string, values.Len())
		for i := values.Len() - 1; i >= 0; i-- { // the first name of an alias wins, as ByNumber has it
			ev := values.Get(i)
			p.sparse[ev.Number()] = string(jsonw.AppendStringLossy(nil, ev.Name()))
		}
	}
	return p
}
