package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// SinkDefinition is the TOML text of a picomq-connect sink definition: key,
// the library path, one [[topics]] block on topics with schema "json" and
// the keys in block (TOML lines "name = value", see TopicKey), and cfg as
// [plugin_config].
func SinkDefinition(key, path string, topics []string, block []string, cfg map[string]any) string {
	return SinkDefinitionSchema(key, path, topics, "json", block, cfg)
}

// SinkDefinitionSchema is SinkDefinition with another schema (avro,
// proto, ...). The lines of block end the [[topics]] block, so they may
// end with its [[topics.transforms]] tables.
func SinkDefinitionSchema(key, path string, topics []string, schema string, block []string, cfg map[string]any) string {
	var b strings.Builder
	t, _ := json.Marshal(topics)
	fmt.Fprintf(&b, "type = \"sink\"\nkey = %q\npath = %q\n\n[[topics]]\ntopics = %s\nschema = %q\n", key, path, t, schema)
	for _, line := range block {
		b.WriteString(line + "\n")
	}
	b.WriteString("\n[plugin_config]\n")
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		v, _ := json.Marshal(cfg[k])
		fmt.Fprintf(&b, "%s = %s\n", k, v)
	}
	return b.String()
}

// TopicKey turns a -topic-key flag value "name=value" into a [[topics]]
// line. The value is written as it is when it reads as a TOML integer,
// float, boolean, string, array or table (16, 0.5, true, "100ms", [..]),
// and quoted otherwise, so both max_in_flight=16 and poll_interval=50ms
// work.
func TopicKey(kv string) (string, error) {
	name, value, ok := strings.Cut(kv, "=")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" || value == "" {
		return "", fmt.Errorf("topic key %q: want name=value", kv)
	}
	if strings.ContainsAny(name, " \t\"=[]") {
		return "", fmt.Errorf("topic key %q: %q is not a bare key", kv, name)
	}
	raw := value == "true" || value == "false" || strings.ContainsRune(`"[{`, rune(value[0]))
	if _, err := strconv.ParseInt(value, 10, 64); err == nil {
		raw = true
	} else if _, err := strconv.ParseFloat(value, 64); err == nil {
		raw = true
	}
	if !raw {
		value = strconv.Quote(value)
	}
	return name + " = " + value, nil
}

// TopicKeys collects a repeated -topic-key flag (flag.Value).
type TopicKeys []string

func (k *TopicKeys) String() string { return strings.Join(*k, ",") }

// Set adds one name=value, checked by TopicKey.
func (k *TopicKeys) Set(v string) error {
	line, err := TopicKey(v)
	if err != nil {
		return err
	}
	*k = append(*k, line)
	return nil
}

// PromSum is the sum of every sample of metric name in a Prometheus text
// exposition (all its label sets), and whether there was one.
func PromSum(text, name string) (float64, bool) {
	var sum float64
	found := false
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			rest = rest[end+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}
