package delta

import (
	"testing"
	"time"
)

// A writer skips the catch-up read before its put only once no other
// writer's commit was seen for aloneAfter: a commit that went in right
// after our previous one is not enough.
func TestAloneOnlyAfterNoOtherWriterForAWhile(t *testing.T) {
	var tb table
	now := time.Now()
	tb.noteWriters(true, now)
	if !tb.alone {
		t.Fatal("a writer that never saw another is not alone")
	}
	tb.noteWriters(false, now)
	if tb.alone {
		t.Fatal("alone right after another writer's commit was seen")
	}
	tb.noteWriters(true, now.Add(time.Second))
	if tb.alone {
		t.Fatal("alone after one commit that went in right after ours")
	}
	tb.noteWriters(true, now.Add(aloneAfter-time.Millisecond))
	if tb.alone {
		t.Fatal("alone before aloneAfter passed")
	}
	tb.noteWriters(true, now.Add(aloneAfter))
	if !tb.alone {
		t.Fatal("not alone once aloneAfter passed without another writer's commit")
	}
}
