package audit_test

import (
	"slices"
	"testing"

	"github.com/picomq/heavy-sinks/connect/audit"
)

// model is the naive reference: a count per offset.
type model map[int64]int

// check compares c with m: the same offsets once, the same offsets seen
// again, the same number of extra copies, ranges sorted, disjoint and not
// adjacent.
func check(t *testing.T, c *audit.Count, m model) {
	t.Helper()
	var once, extra []int64
	var copies int64
	for o, n := range m {
		once = append(once, o)
		if n > 1 {
			extra = append(extra, o)
			copies += int64(n - 1)
		}
	}
	slices.Sort(once)
	slices.Sort(extra)
	if got := expand(t, &c.Once); !slices.Equal(got, once) {
		t.Fatalf("once = %v, want %v", got, once)
	}
	if got := expand(t, &c.Extra); !slices.Equal(got, extra) {
		t.Fatalf("extra = %v, want %v", got, extra)
	}
	if c.Copies != copies {
		t.Fatalf("copies = %d, want %d", c.Copies, copies)
	}
	if c.Rows() != int64(len(once))+copies {
		t.Fatalf("rows = %d", c.Rows())
	}
	for o := int64(-2); o < 80; o++ {
		if c.Once.Contains(o) != (m[o] > 0) {
			t.Fatalf("Contains(%d) = %v", o, !(m[o] > 0))
		}
	}
}

func expand(t *testing.T, s *audit.Set) []int64 {
	t.Helper()
	var out []int64
	rs := s.Ranges()
	for i, r := range rs {
		if r.From >= r.To {
			t.Fatalf("empty range %v in %v", r, rs)
		}
		if i > 0 && rs[i-1].To >= r.From {
			t.Fatalf("ranges %v and %v overlap or touch", rs[i-1], r)
		}
		for o := r.From; o < r.To; o++ {
			out = append(out, o)
		}
	}
	if int64(len(out)) != s.Len() {
		t.Fatalf("Len = %d, want %d", s.Len(), len(out))
	}
	return out
}

func TestCountCases(t *testing.T) {
	cases := []struct {
		name string
		adds [][2]int64
	}{
		{"empty", nil},
		{"append", [][2]int64{{0, 5}, {5, 10}, {10, 11}}},
		{"reverse", [][2]int64{{10, 11}, {5, 10}, {0, 5}}},
		{"hole filled", [][2]int64{{0, 3}, {6, 9}, {3, 6}}},
		{"overlap both", [][2]int64{{0, 3}, {6, 9}, {2, 7}}},
		{"inside", [][2]int64{{0, 10}, {3, 4}, {3, 4}}},
		{"spanning", [][2]int64{{2, 3}, {5, 6}, {8, 9}, {0, 20}}},
		{"empty add", [][2]int64{{4, 4}, {5, 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cnt audit.Count
			m := model{}
			for _, a := range c.adds {
				cnt.Add(a[0], a[1])
				for o := a[0]; o < a[1]; o++ {
					m[o]++
				}
			}
			check(t, &cnt, m)
		})
	}
}

// FuzzCount drives Count (and so Set.Add) with random ranges and compares
// every step with the naive model; Missing and Intersect are checked
// against it too.
func FuzzCount(f *testing.F) {
	f.Add([]byte{0, 5, 3, 4, 10, 2, 1, 30})
	f.Add([]byte{7, 1, 7, 1, 6, 3, 0, 60})
	f.Fuzz(func(t *testing.T, data []byte) {
		var c audit.Count
		m := model{}
		for len(data) >= 2 {
			from, n := int64(data[0]%64), int64(data[1]%8)
			data = data[2:]
			c.Add(from, from+n)
			for o := from; o < from+n; o++ {
				m[o]++
			}
			check(t, &c, m)
		}
		{
			// An odd trailing byte picks where the window starts.
			lo, hi := int64(0), int64(70)
			if len(data) > 0 {
				lo = int64(data[0] % 70)
			}
			var in, out []int64
			c.Once.Intersect(lo, hi, func(r audit.Range) {
				for o := r.From; o < r.To; o++ {
					in = append(in, o)
				}
			})
			c.Once.Missing(lo, hi, func(r audit.Range) {
				for o := r.From; o < r.To; o++ {
					out = append(out, o)
				}
			})
			var wantIn, wantOut []int64
			for o := lo; o < hi; o++ {
				if m[o] > 0 {
					wantIn = append(wantIn, o)
				} else {
					wantOut = append(wantOut, o)
				}
			}
			if !slices.Equal(in, wantIn) || !slices.Equal(out, wantOut) {
				t.Fatalf("[%d,%d): intersect %v missing %v, want %v and %v", lo, hi, in, out, wantIn, wantOut)
			}
		}
	})
}

// BenchmarkCountRows counts rows arriving in offset order, as a Redshift
// scan streams them (and a Delta file holds them): one range however many
// rows, so the heap does not grow with b.N.
func BenchmarkCountRows(b *testing.B) {
	var c audit.Count
	b.ReportAllocs()
	for i := range b.N {
		c.Add(int64(i), int64(i)+1)
	}
	if len(c.Once.Ranges()) > 1 {
		b.Fatalf("%d ranges", len(c.Once.Ranges()))
	}
}
