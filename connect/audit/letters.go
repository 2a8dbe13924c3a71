package audit

import "slices"

// Letters counts one partition's dead letters by source offset, per
// pico_redrive_attempts. A redrive that sees a record rejected again
// writes a newer letter (one more attempt) and leaves the older one in
// the dead-letter topic, so only the newest stand for the record: the
// rule connect/redrive's Plan follows when it picks the letters to put
// back.
type Letters struct{ by map[int]*Count }

// Add counts one dead letter of source offset o written after attempts
// redrives.
func (l *Letters) Add(o int64, attempts int) {
	if l.by == nil {
		l.by = map[int]*Count{}
	}
	c := l.by[attempts]
	if c == nil {
		c = &Count{}
		l.by[attempts] = c
	}
	c.Add(o, o+1)
}

// Newest collapses the letters to the newest of each source offset: Once
// holds every offset with a letter, Extra those with two letters or more
// at their most attempts (a letter produced twice: a duplicate; Copies
// is not kept). Older letters (superseded) are not counted.
func (l *Letters) Newest() *Count {
	out := &Count{}
	if l == nil {
		return out
	}
	levels := make([]int, 0, len(l.by))
	for a := range l.by {
		levels = append(levels, a)
	}
	slices.Sort(levels)
	var covered Set // offsets with a letter of more attempts
	for i := len(levels) - 1; i >= 0; i-- {
		c := l.by[levels[i]]
		for _, r := range c.Once.Ranges() {
			covered.Missing(r.From, r.To, func(m Range) { out.Once.Add(m.From, m.To, nil) })
		}
		for _, r := range c.Extra.Ranges() {
			covered.Missing(r.From, r.To, func(m Range) { out.Extra.Add(m.From, m.To, nil) })
		}
		covered.AddSet(&c.Once, nil)
	}
	return out
}
