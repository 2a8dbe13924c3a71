package flatbuf

import (
	"strings"
	"testing"
	"time"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/picomq/heavy-sinks/connect/decode/flatbuf/internal/reflection"
)

// A schema file whose objects all share one long field vector (legal
// bytes, never written by flatc) would cost its length squared to load:
// refused by the field budget, quickly.
func TestSharedFieldVectors(t *testing.T) {
	const n = 2000
	b := flatbuffers.NewBuilder(1 << 16)
	fields := make([]flatbuffers.UOffsetT, n)
	for i := range fields {
		name := b.CreateString("f")
		reflection.TypeStart(b)
		reflection.TypeAddBaseType(b, reflection.BaseTypeInt)
		typ := reflection.TypeEnd(b)
		reflection.FieldStart(b)
		reflection.FieldAddName(b, name)
		reflection.FieldAddType(b, typ)
		fields[i] = reflection.FieldEnd(b)
	}
	shared := offsets(b, fields)
	objects := make([]flatbuffers.UOffsetT, n)
	for i := range objects {
		name := b.CreateString("T")
		reflection.ObjectStart(b)
		reflection.ObjectAddName(b, name)
		reflection.ObjectAddFields(b, shared)
		objects[i] = reflection.ObjectEnd(b)
	}
	objs := offsets(b, objects)
	enums := offsets(b, nil)
	reflection.SchemaStart(b)
	reflection.SchemaAddObjects(b, objs)
	reflection.SchemaAddEnums(b, enums)
	b.FinishWithFileIdentifier(reflection.SchemaEnd(b), []byte("BFBS"))

	start := time.Now()
	_, err := loadSchema(b.FinishedBytes(), "T")
	if err == nil || !strings.Contains(err.Error(), "more fields and enum values than the file holds") {
		t.Fatalf("error %v", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("took %v", el)
	}
}

// offsets writes a vector of table offsets.
func offsets(b *flatbuffers.Builder, offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(offs[i])
	}
	return b.EndVector(len(offs))
}

// Struct fields that overlap (a damaged file) are refused: nested, they
// would be written an exponential number of times. Fields laid out apart,
// as flatc does, pass.
func TestOverlappingStructFields(t *testing.T) {
	for _, tc := range []struct {
		size int
		y    int // the second field's offset
		ok   bool
	}{{8, 4, true}, {5, 1, false}} {
		// Objects point into the schema's slice, as loadSchema links them.
		s := &schema{objects: make([]object, 2)}
		a := &s.objects[0]
		*a = object{name: "A", isStruct: true, size: 4}
		for i := range 4 {
			a.fields = append(a.fields, field{name: "b", base: reflection.BaseTypeUByte, slot: i})
		}
		s.objects[1] = object{name: "B", isStruct: true, size: tc.size, fields: []field{
			{name: "x", base: reflection.BaseTypeObj, obj: a, slot: 0},
			{name: "y", base: reflection.BaseTypeObj, obj: a, slot: tc.y},
		}}
		err := s.checkStructs()
		if tc.ok && err != nil || !tc.ok && (err == nil || !strings.Contains(err.Error(), "struct B: fields that overlap")) {
			t.Errorf("size %d, y at %d: error %v", tc.size, tc.y, err)
		}
	}
}
