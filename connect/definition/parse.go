package definition

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/picomq/heavy-sinks/connect/transform"
)

// Error is a definition refused at start: the file, the position of the
// key when known (Line 0 when not), the key and what is wrong with it.
type Error struct {
	File      string
	Line, Col int
	Key       string // dotted, with the block: topics[2].batch_length
	Msg       string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	if e.Key != "" {
		b.WriteString(": " + e.Key)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// Parse decodes and checks one definition. file names it in errors.
func Parse(file string, data []byte) (*Definition, error) {
	var raw rawDefinition
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, decodeError(file, err)
	}
	p := &parsed{file: file, pos: positions(data)}
	d := p.check(&raw)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return d, nil
}

// decodeError turns go-toml's errors into Errors with positions; a strict
// mode error lists every unknown key.
func decodeError(file string, err error) error {
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) {
		var errs []error
		for i := range sm.Errors {
			errs = append(errs, positioned(file, &sm.Errors[i], "unknown key"))
		}
		return errors.Join(errs...)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		return positioned(file, de, strings.TrimPrefix(de.Error(), "toml: "))
	}
	return &Error{File: file, Msg: err.Error()}
}

func positioned(file string, de *toml.DecodeError, msg string) *Error {
	line, col := de.Position()
	return &Error{File: file, Line: line, Col: col, Key: strings.Join(de.Key(), "."), Msg: msg}
}

type parsed struct {
	file string
	pos  map[string]unstable.Position
	errs []error
}

// errorf records a problem with key (a path as positions() spells it).
func (p *parsed) errorf(key, format string, args ...any) {
	e := &Error{File: p.file, Key: key, Msg: fmt.Sprintf(format, args...)}
	// The nearest enclosing key that is written down: an inline table's
	// entries and a missing key's table have no line of their own.
	for k := key; k != ""; {
		if pos, ok := p.pos[k]; ok {
			e.Line, e.Col = pos.Line, pos.Column
			break
		}
		// An entry of an array of inline tables (fields[2]): the array's key.
		if j := strings.LastIndexByte(k, '['); j > 0 && strings.HasSuffix(k, "]") && strings.Contains(k[:j], ".") {
			if pos, ok := p.pos[k[:j]]; ok {
				e.Line, e.Col = pos.Line, pos.Column
				break
			}
		}
		i := strings.LastIndexByte(strings.TrimSuffix(k, "."), '.')
		if i < 0 {
			break
		}
		k = k[:i+1]
		if _, ok := p.pos[k]; !ok {
			k = strings.TrimSuffix(k, ".")
		}
	}
	p.errs = append(p.errs, e)
}

func (p *parsed) check(raw *rawDefinition) *Definition {
	d := &Definition{File: p.file, Key: raw.Key, Version: raw.Version, Name: raw.Name, Path: raw.Path, PluginConfig: raw.PluginConfig}
	p.apply(definitionKeys, raw, func(k string) string { return k }, map[string]func(report){
		"key": func(errorf report) {
			if !keyRE.MatchString(raw.Key) {
				errorf("%q: want 1 to 200 of [A-Za-z0-9_.-], starting with a letter or digit", raw.Key)
			}
		},
		"enabled": func(report) { d.Enabled = *raw.Enabled },
		"path": func(report) {
			if pos, ok := p.pos["path"]; ok {
				d.pathLine, d.pathCol = pos.Line, pos.Column
			}
		},
	})
	groups := map[string]int{}
	for i := range raw.Topics {
		t := p.topic(raw.Key, i, &raw.Topics[i])
		if prev, dup := groups[t.ConsumerGroup]; dup {
			p.errorf(blockKey(i, "consumer_group"),
				"%q is the group of [[topics]] block %d too: two consumers in one group split its partitions", t.ConsumerGroup, prev)
		}
		groups[t.ConsumerGroup] = t.Index
		d.Topics = append(d.Topics, t)
	}
	return d
}

func blockKey(i int, key string) string {
	return "topics[" + strconv.Itoa(i+1) + "]." + key
}

// topic checks a [[topics]] block: the declared keys (keys.go), then how
// they relate.
func (p *parsed) topic(sinkKey string, i int, r *rawTopic) Topic {
	k := func(key string) string { return blockKey(i, key) }
	t := Topic{Index: i + 1, Topics: r.Topics, ConsumerGroup: GroupPrefix + sinkKey, ErrorsTolerance: ToleranceNone}
	// Each block is its own group; the spec's name goes to the first, and
	// the others get their block number, so that blocks never share one.
	if i > 0 {
		t.ConsumerGroup += "-" + strconv.Itoa(i+1)
	}
	checks := schemaChecks(r, &t)
	maps.Copy(checks, map[string]func(report){
		"topics": func(errorf report) {
			seen := map[string]bool{}
			for _, name := range r.Topics {
				switch {
				case name == "":
					errorf("an empty topic name")
				case seen[name]:
					errorf("%q is listed twice", name)
				}
				seen[name] = true
			}
		},
		"pattern": func(errorf report) {
			if r.Pattern != nil {
				t.Pattern = anchor(*r.Pattern)
				if *r.Pattern == "" {
					errorf("empty")
				} else if _, err := regexp.Compile(t.Pattern); err != nil {
					errorf("%v", err)
				}
			}
			if len(r.Topics) == 0 && r.Pattern == nil {
				p.errorf(blockKey(i, ""), "[[topics]] block %d names neither topics nor pattern", i+1)
			}
		},
		"batch_length":  func(report) { t.BatchLength = int(*r.BatchLength) },
		"poll_interval": func(report) { t.PollInterval = time.Duration(*r.PollInterval) },
		"max_batch_latency": func(report) {
			if r.MaxBatchLatency != nil {
				t.MaxBatchLatency = time.Duration(*r.MaxBatchLatency)
			}
		},
		"max_in_flight": func(report) { t.MaxInFlight = int(*r.MaxInFlight) },
		"max_in_flight_per_partition": func(errorf report) {
			// Checked after max_in_flight, which keys.go declares first.
			t.MaxInFlightPerPartition = int(*r.MaxInFlightPerPartition)
			if t.MaxInFlightPerPartition > t.MaxInFlight {
				errorf("%d is above max_in_flight (%d): a partition's batches in flight are some of the block's", t.MaxInFlightPerPartition, t.MaxInFlight)
			}
		},
		"auto_offset_reset": func(report) { t.OffsetReset = OffsetReset(*r.AutoOffsetReset) },
		"errors_tolerance":  func(report) { t.ErrorsTolerance = Tolerance(*r.ErrorsTolerance) },
		"consumer_group": func(errorf report) {
			switch {
			case r.ConsumerGroup == nil:
			case *r.ConsumerGroup == "":
				errorf("empty: leave it out for %s%s", GroupPrefix, sinkKey)
			default:
				t.ConsumerGroup = *r.ConsumerGroup
			}
		},
		"dead_letter_topic": func(errorf report) {
			if r.DeadLetterTopic == nil {
				return
			}
			switch name := *r.DeadLetterTopic; {
			case t.ErrorsTolerance != ToleranceAll:
				errorf(`applies only with errors_tolerance = "all"`)
			case !topicRE.MatchString(name):
				errorf("%q is not a Kafka topic name (1-249 of [A-Za-z0-9._-])", name)
			case t.Consumes(name):
				errorf("%q is consumed by this block: its dead letters would come back to it", name)
			default:
				t.DeadLetterTopic = name
			}
		},
		"properties": func(report) { t.Client = p.client(i, r.Properties) },
		"transforms": func(errorf report) {
			if len(r.Transforms) == 0 {
				return
			}
			if t.Schema == SchemaRaw || t.Schema == SchemaText {
				errorf("transforms act on JSON objects; schema = %q payloads are not decoded to JSON", t.Schema)
				return
			}
			t.Transforms = p.transforms(i, r.Transforms)
		},
	})
	p.apply(topicKeys, r, k, checks)
	return t
}

// transforms checks a block's [[topics.transforms]] tables and compiles
// them into one chain; nil when one of them is refused (reported).
func (p *parsed) transforms(block int, raws []rawTransform) *transform.Chain {
	var specs []transform.Spec
	for j := range raws {
		r := &raws[j]
		k := func(key string) string { return blockKey(block, fmt.Sprintf("transforms[%d].%s", j+1, key)) }
		before := len(p.errs)
		p.apply(transformKeys, r, k, nil)
		sp := transform.Spec{Type: transform.Type(deref(r.Type)), Paths: r.Paths, Field: deref(r.Field), RenameTo: deref(r.RenameTo),
			Value: r.Value, HasValue: r.Value != nil, IfMissing: deref(r.IfMissing), Equals: r.Equals, HasEquals: r.Equals != nil,
			In: r.In, Present: r.Present, Action: deref(r.Action), OnNull: deref(r.OnNull)}
		if r.Fields != nil {
			sp.Fields = []transform.Field{}
		}
		for n := range r.Fields {
			f := &r.Fields[n]
			p.apply(fieldKeys, f, func(key string) string { return k(fmt.Sprintf("fields[%d].%s", n+1, key)) }, nil)
			sp.Fields = append(sp.Fields, transform.Field{Name: f.Name, Value: f.Value, HasValue: f.Value != nil,
				Compute: deref(f.Compute), Header: deref(f.Header)})
		}
		if len(p.errs) > before {
			continue
		}
		specs = append(specs, sp)
		if _, _, err := transform.Compile([]transform.Spec{sp}); err != nil {
			var se *transform.SpecError
			if errors.As(err, &se) {
				p.errorf(k(se.Key), "%s", se.Msg)
			} else {
				p.errorf(k(""), "%v", err)
			}
		}
	}
	c, _, err := transform.Compile(specs)
	if err != nil || len(specs) < len(raws) {
		return nil // each problem is reported above
	}
	return c
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// topicRE is what Kafka accepts as a topic name ("." and ".." aside).
var topicRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

// positions maps each key of the document to where it is written, keyed as
// errorf spells them: "key", "topics[2].batch_length",
// "topics[1].properties.client.id", and "topics[2]." for the header of the
// second block.
func positions(data []byte) map[string]unstable.Position {
	pos := map[string]unstable.Position{}
	var prs unstable.Parser
	prs.Reset(data)
	counts := map[string]int{}
	prefix := ""
	for prs.NextExpression() {
		e := prs.Expression()
		var parts []string
		var first *unstable.Node
		for it := e.Key(); it.Next(); {
			if first == nil {
				first = it.Node()
			}
			parts = append(parts, string(it.Node().Data))
		}
		name := strings.Join(parts, ".")
		at := func() unstable.Position {
			if first == nil {
				return unstable.Position{}
			}
			return prs.Shape(first.Raw).Start
		}
		switch e.Kind {
		case unstable.Table:
			prefix = name + "."
			prefix = indexed(prefix, counts)
			pos[strings.TrimSuffix(prefix, ".")] = at()
		case unstable.ArrayTable:
			// [[topics.transforms]] belongs to the last [[topics]] block.
			if n := counts["topics"]; n > 0 && strings.HasPrefix(name, "topics.") {
				name = "topics[" + strconv.Itoa(n) + "]." + strings.TrimPrefix(name, "topics.")
			}
			counts[name]++
			prefix = name + "[" + strconv.Itoa(counts[name]) + "]."
			pos[prefix] = at()
			if counts[name] == 1 && strings.Contains(name, ".") {
				pos[name] = at() // a block's array as a whole: where it starts
			}
		case unstable.KeyValue:
			if _, dup := pos[prefix+name]; !dup {
				pos[prefix+name] = at()
			}
		}
	}
	return pos
}

// indexed rewrites a table header under the last [[topics]] block, such as
// "topics.properties.", to "topics[N].properties.".
func indexed(prefix string, counts map[string]int) string {
	if n := counts["topics"]; n > 0 && strings.HasPrefix(prefix, "topics.") {
		return "topics[" + strconv.Itoa(n) + "]." + strings.TrimPrefix(prefix, "topics.")
	}
	return prefix
}
