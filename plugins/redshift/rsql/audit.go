package rsql

import "strings"

// AuditIDs is the query `picomq-connect audit` streams a table's record ids
// with: topic, partition and offset of every row of the topics named, cut
// from the id column (topic:partition:offset; a Kafka topic name has no
// colon), ordered by partition and offset so that each partition's offsets
// arrive ascending and duplicates next to each other. topics must pass
// CheckLiteral.
func AuditIDs(table string, topics []string) string {
	quoted := make([]string, len(topics))
	for i, t := range topics {
		quoted[i] = Literal(t)
	}
	return "SELECT SPLIT_PART(id, ':', 1) AS topic, CAST(SPLIT_PART(id, ':', 2) AS INTEGER) AS part, CAST(SPLIT_PART(id, ':', 3) AS BIGINT) AS off FROM " +
		Ident(table) + " WHERE SPLIT_PART(id, ':', 1) IN (" + strings.Join(quoted, ", ") + ") ORDER BY 1, 2, 3"
}

// AuditApplied is the query `picomq-connect audit` reads an upsert target's
// applied offsets with (write_mode = "upsert": the target keeps each key's
// last change only, so its ids cannot show what was written): topic,
// partition and applied offset of every row of offsets, the target's
// offsets table, whose topic is one of topics. topics must pass
// CheckLiteral.
func AuditApplied(offsets string, topics []string) string {
	quoted := make([]string, len(topics))
	for i, t := range topics {
		quoted[i] = Literal(t)
	}
	return "SELECT " + offTopic + ", CAST(" + offPartition + " AS INTEGER), " + offApplied + " FROM " + Ident(offsets) +
		" WHERE " + offTopic + " IN (" + strings.Join(quoted, ", ") + ") ORDER BY 1, 2"
}
