package delta

import (
	"fmt"

	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

// truncated counts the committed timestamps that lost digits beyond the
// microsecond (Delta's precision) and warns once per topic and column: a
// producer sending nanoseconds (Java's Instant does) sends them in every
// record, and a line per record would drown the log. Nothing is refused.
func (t *table) truncated(cols []encode.TruncatedTimestamps, topic string) {
	st := t.env.stats
	for _, c := range cols {
		st.truncated.Add(int64(c.Count))
		first, last := st.truncatedNames.first(topic + "\x00" + c.Column)
		if !first {
			continue
		}
		if last {
			t.env.log.Warn(fmt.Sprintf("%d columns with truncated timestamps logged; further ones are only counted in timestamps_truncated", maxOnceNames),
				"table", t.uri)
		}
		t.env.log.Warn("timestamps with digits beyond the microsecond were truncated to microseconds, the precision of Delta timestamps; counted in timestamps_truncated, logged once per topic and column",
			"table", t.uri, "topic", topic, "column", c.Column, "offset", c.FirstOffset, "values", c.Count)
	}
}
