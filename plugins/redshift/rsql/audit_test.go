package rsql_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
)

// The audit's query quotes the table as one identifier and each topic as
// a literal, and orders by topic, partition and offset.
func TestAuditIDs(t *testing.T) {
	got := rsql.AuditIDs(`we"ird.table`, []string{"orders.eu", "o'x"})
	want := `SELECT SPLIT_PART(id, ':', 1) AS topic, CAST(SPLIT_PART(id, ':', 2) AS INTEGER) AS part, CAST(SPLIT_PART(id, ':', 3) AS BIGINT) AS off FROM "we""ird.table" WHERE SPLIT_PART(id, ':', 1) IN ('orders.eu', 'o''x') ORDER BY 1, 2, 3`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// An upsert target's audit reads its offsets table, topics as literals.
func TestAuditApplied(t *testing.T) {
	got := rsql.AuditApplied(rsql.Offsets(`we"ird`), []string{"orders.eu", "o'x"})
	want := `SELECT topic, CAST(partition_id AS INTEGER), applied_offset FROM "offsets_we""ird" WHERE topic IN ('orders.eu', 'o''x') ORDER BY 1, 2`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
