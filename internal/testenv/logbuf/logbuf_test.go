package logbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Lines written from several goroutines all arrive whole, and WaitJSON
// finds the JSON line it is asked for among lines that are not JSON.
func TestConcurrentWritesAndWaitJSON(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				fmt.Fprintf(&b, "{\"g\":%d,\"i\":%d}\nnot json\n", g, i)
			}
		}()
	}
	m := b.WaitJSON(t, "g=3 i=99", func(m map[string]any) bool { return m["g"] == 3.0 && m["i"] == 99.0 })
	wg.Wait()
	if m["g"] != 3.0 {
		t.Errorf("WaitJSON returned %v", m)
	}
	if n := strings.Count(b.String(), "not json\n"); n != 400 {
		t.Errorf("%d of 400 lines", n)
	}
}
