package sdk

import (
	"strings"
	"testing"
)

// A redrive batch reaches only a sink that declared Plugin.Redrive, and
// only with one strictly increasing dead-letter offset per record: the
// Delta sink's txn version is the last of them.
func TestCheckRedrive(t *testing.T) {
	recs := []Record{{Offset: 5}, {Offset: 3}}
	for _, c := range []struct {
		name    string
		redrive *Redrive
		accepts bool
		want    string
	}{
		{"ordinary batch", nil, false, ""},
		{"declared", &Redrive{Topic: "d", Offsets: []uint64{10, 11}}, true, ""},
		{"not declared", &Redrive{Topic: "d", Offsets: []uint64{10, 11}}, false, "does not declare redrive"},
		{"count", &Redrive{Topic: "d", Offsets: []uint64{10}}, true, "1 dead-letter offsets for 2 records"},
		{"order", &Redrive{Topic: "d", Offsets: []uint64{11, 11}}, true, "not strictly increasing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &Batch{Topic: "t", Records: recs, Redrive: c.redrive}
			err := b.checkRedrive(c.accepts)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || StatusOf(err) != StatusFatal {
				t.Fatalf("err = %v, want FATAL containing %q", err, c.want)
			}
		})
	}
	b := &Batch{Records: recs, Redrive: &Redrive{Offsets: []uint64{10, 11}}}
	if b.SeqOffset(1) != 11 {
		t.Errorf("SeqOffset(1) = %d in a redrive batch, want the dead-letter offset 11", b.SeqOffset(1))
	}
	b.Redrive = nil
	if b.SeqOffset(1) != 3 {
		t.Errorf("SeqOffset(1) = %d, want the record's offset 3", b.SeqOffset(1))
	}
}
