// Package template resolves destination-name templates such as
// "orders_{topic_segment[-1]}" against a topic name.
//
// A sink parses its template once, when it opens, so that a typo fails the
// configuration rather than the first batch, and then resolves it once per
// topic (usually caching the result). Use IsStatic to decide whether the
// destination can be prepared at open time.
//
// # Syntax
//
// Two placeholders are recognised:
//
//	{topic}              the whole topic name
//	{topic_segment[n]}   segment n of the topic split on "."
//
// n is a decimal integer with an optional leading minus: 0 is the first
// segment, -1 the last, -2 the second last. Segments are those of
// strings.Split(topic, "."), so empty segments count: "a..b" has three.
//
// "{" and "}" are always syntax. There is no escape for a literal brace,
// because no destination these sinks write to (table names, URLs, object
// keys) needs one, and an escape rule would be one more thing to get wrong.
//
// The resolved name is used verbatim: nothing is sanitised or quoted, as
// the sink specifications require. Quoting is the caller's business.
//
// A destination that is a path or a URL (a Delta table_uri) is resolved
// with ResolvePath instead of Resolve: it refuses a topic whose values
// would climb out of, or re-root, the directory the template's own text
// names ("../other", "%2e%2e/other", an empty segment, a "?" or "#").
// A destination that is an identifier (a Redshift table name) has no path
// to leave and uses Resolve.
package template
