package audit

import (
	"slices"
	"sort"
)

// Range is the offsets From ≤ o < To of one partition.
type Range struct{ From, To int64 }

// Len is the number of offsets in r.
func (r Range) Len() int64 { return r.To - r.From }

// Set is a set of offsets kept as sorted, disjoint, non-adjacent ranges:
// a partition whose rows are all there is one range however many rows it
// has, so memory grows with the number of holes, not of rows. The zero
// value is empty.
type Set struct{ r []Range }

// Ranges returns the set's ranges in order; the caller must not modify
// them.
func (s *Set) Ranges() []Range { return s.r }

// Len is the number of offsets in the set.
func (s *Set) Len() int64 {
	var n int64
	for _, r := range s.r {
		n += r.Len()
	}
	return n
}

// Contains reports whether o is in the set.
func (s *Set) Contains(o int64) bool {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].To > o })
	return i < len(s.r) && s.r[i].From <= o
}

// Add adds [from, to) and calls twice, when not nil, with each part of it
// that was in the set already, in order.
func (s *Set) Add(from, to int64, twice func(Range)) {
	if from >= to {
		return
	}
	// Rows mostly arrive in offset order: at or past the end is an
	// extension or an append, without a search.
	if n := len(s.r); n > 0 && s.r[n-1].To <= from {
		if s.r[n-1].To == from {
			s.r[n-1].To = to
		} else {
			s.r = append(s.r, Range{from, to})
		}
		return
	}
	// i: the first range that ends at or after from (touching or
	// overlapping); j: one past the last that starts at or before to.
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].To >= from })
	j := i
	lo, hi := from, to
	for j < len(s.r) && s.r[j].From <= to {
		r := s.r[j]
		if twice != nil {
			if a, b := max(r.From, from), min(r.To, to); a < b {
				twice(Range{a, b})
			}
		}
		lo, hi = min(lo, r.From), max(hi, r.To)
		j++
	}
	if i == j {
		// Nothing touched: the common case of appending past the end
		// is an append.
		s.r = slices.Insert(s.r, i, Range{lo, hi})
		return
	}
	s.r[i] = Range{lo, hi}
	s.r = slices.Delete(s.r, i+1, j)
}

// AddSet adds every range of o, calling twice as Add does.
func (s *Set) AddSet(o *Set, twice func(Range)) {
	for _, r := range o.r {
		s.Add(r.From, r.To, twice)
	}
}

// Intersect calls fn with each part of [from, to) in the set, in order.
func (s *Set) Intersect(from, to int64, fn func(Range)) {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].To > from })
	for ; i < len(s.r) && s.r[i].From < to; i++ {
		if a, b := max(s.r[i].From, from), min(s.r[i].To, to); a < b {
			fn(Range{a, b})
		}
	}
}

// Missing calls fn with each part of [from, to) not in the set, in order.
func (s *Set) Missing(from, to int64, fn func(Range)) {
	at := from
	s.Intersect(from, to, func(r Range) {
		if r.From > at {
			fn(Range{at, r.From})
		}
		at = r.To
	})
	if at < to {
		fn(Range{at, to})
	}
}

// Count is a Set whose offsets may be there several times: the offsets of
// rows a destination holds, where a second row of one offset is a
// duplicate. Once holds each offset seen, Extra each one seen again (the
// offsets) and Copies how many rows were seen more than once in all.
type Count struct {
	Once   Set
	Extra  Set
	Copies int64
}

// Add counts the offsets [from, to) once more.
func (c *Count) Add(from, to int64) {
	c.Once.Add(from, to, func(r Range) {
		c.Copies += r.Len()
		c.Extra.Add(r.From, r.To, nil)
	})
}

// Rows is how many rows were counted: each offset once plus the copies.
func (c *Count) Rows() int64 { return c.Once.Len() + c.Copies }
