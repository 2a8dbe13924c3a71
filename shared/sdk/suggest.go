package sdk

import (
	"fmt"
	"strings"
)

// The messages for a plugin_config key or an environment override that the
// schema does not declare. They name the nearest declared key, since the
// usual cause is a typo; when no key is near, they list them all.

// unknownKey is the refusal of plugin_config key k.
func unknownKey(fields []Field, k string) string {
	msg := fmt.Sprintf("plugin_config key %q is not known to this plugin", k)
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.Key
	}
	if i := nearest(k, keys); i >= 0 {
		return fmt.Sprintf("%s; did you mean %q?", msg, keys[i])
	}
	return msg + "; " + knownKeys(fields)
}

// unknownOverride is the refusal of the variable prefix+rest, whose rest
// matches no declared key.
func unknownOverride(fields []Field, prefix, rest string) string {
	msg := fmt.Sprintf("environment override %s names no plugin_config key of this plugin", prefix+rest)
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = envName(f.Key)
	}
	if i := nearest(rest, names); i >= 0 {
		return fmt.Sprintf("%s; did you mean %s (key %q)?", msg, prefix+names[i], fields[i].Key)
	}
	return msg + "; " + knownKeys(fields)
}

func knownKeys(fields []Field) string {
	if len(fields) == 0 {
		return "it declares no keys"
	}
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.Key
	}
	return "known keys: " + strings.Join(keys, ", ")
}

// fieldByEnvName returns the index of the field whose override name is
// name, or -1.
func fieldByEnvName(fields []Field, name string) int {
	for i := range fields {
		if envName(fields[i].Key) == name {
			return i
		}
	}
	return -1
}

// nearest returns the index of the candidate closest to word by edit
// distance, or -1 when none is close enough to be the likely intent: at
// most a third of the word's length, and at least 2, away (a swapped pair
// of letters costs 2).
func nearest(word string, candidates []string) int {
	best, bestDist := -1, max(2, len(word)/3)+1
	for i, c := range candidates {
		if d := editDistance(strings.ToLower(word), strings.ToLower(c)); d < bestDist {
			best, bestDist = i, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
