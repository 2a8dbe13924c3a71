package rsql_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
)

func TestParseType(t *testing.T) {
	tests := []struct {
		typ    string
		fam    rsql.Family
		length int
		ok     bool
	}{
		{"character varying(256)", rsql.FamilyVarchar, 256, true},
		{"character varying(65535)", rsql.FamilyVarchar, 65535, true},
		{"CHARACTER VARYING(512)", rsql.FamilyVarchar, 512, true},
		{"varchar(max)", rsql.FamilyVarchar, 65535, true},
		{"text", rsql.FamilyVarchar, 0, true},
		{"nvarchar(10)", rsql.FamilyVarchar, 10, true},
		{"character varying", rsql.FamilyVarchar, 0, true},
		{"bigint", rsql.FamilyBigint, 0, true},
		{"int8", rsql.FamilyBigint, 0, true},
		{"varbyte(16777216)", rsql.FamilyVarbyte, 16777216, true},
		{"varbyte(64000)", rsql.FamilyVarbyte, 64000, true},
		{"binary varying(1024000)", rsql.FamilyVarbyte, 1024000, true},
		{"varbinary", rsql.FamilyVarbyte, 0, true},
		{"bytea", rsql.FamilyVarbyte, 0, true},
		{"character(10)", "", 0, false}, // CHAR pads with blanks: no family the sink writes
		{"integer", "", 0, false},
		{"timestamp without time zone", "", 0, false},
		{"super", rsql.FamilySuper, 0, true},
		{"jsonb", "", 0, false},
		{"varchar(abc)", "", 0, false},
		{"varbyte(max)", "", 0, false},
	}
	for _, tt := range tests {
		fam, length, ok := rsql.ParseType(tt.typ)
		if fam != tt.fam || length != tt.length || ok != tt.ok {
			t.Errorf("ParseType(%q) = %q, %d, %v; want %q, %d, %v", tt.typ, fam, length, ok, tt.fam, tt.length, tt.ok)
		}
	}
}

// rowsFor are the pg_table_def rows of a table the sink created for o, as
// Redshift spells the types.
func rowsFor(o rsql.Options) []rsql.TableDefRow {
	names := map[string]string{
		"id": "character varying(512)", "pico_offset": "character varying(20)", "pico_timestamp": "character varying(20)",
		"pico_topic": "character varying(256)", "pico_partition": "bigint", "pico_key": "character varying(65535)",
		"created_at": "character varying(256)",
	}
	var rows []rsql.TableDefRow
	for _, c := range rsql.NewLayout(o).Columns {
		typ := names[c.Name]
		if c.Name == "payload" {
			typ = "varbyte(16777216)"
			switch o.Payload {
			case rsql.PayloadText:
				typ = "character varying(65535)"
			case rsql.PayloadSuper:
				typ = "super"
			}
		}
		rows = append(rows, rsql.TableDefRow{Column: c.Name, Type: typ})
	}
	return rows
}

func TestCheckAcceptsWhatTheSinkCreates(t *testing.T) {
	for _, o := range combos() {
		t.Run(optName(o), func(t *testing.T) {
			l := rsql.NewLayout(o)
			lim, err := rsql.Check("t", l, rowsFor(o))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(lim) != fmt.Sprint(l.DefaultLimits()) {
				t.Fatalf("limits %v, want the defaults %v", lim, l.DefaultLimits())
			}
		})
	}
}

func TestCheckEveryConfigAgainstEveryTable(t *testing.T) {
	// A table made under one setting matches exactly the settings that
	// imply the same columns and families.
	for _, made := range combos() {
		for _, used := range combos() {
			_, err := rsql.Check("t", rsql.NewLayout(used), rowsFor(made))
			if (err == nil) != reflect.DeepEqual(made, used) {
				t.Errorf("table for %s checked with %s: %v", optName(made), optName(used), err)
			}
			var me *rsql.MismatchError
			if err != nil && !errors.As(err, &me) {
				t.Errorf("error is %T, want *MismatchError", err)
			}
		}
	}
}

func TestCheckFamilies(t *testing.T) {
	text := rsql.NewLayout(rsql.Options{Payload: rsql.PayloadText})
	varbyte := rsql.NewLayout(rsql.Options{Payload: rsql.PayloadVarbyte})
	base := []rsql.TableDefRow{{"id", "character varying(512)"}, {"created_at", "text"}}
	with := func(payloadType string) []rsql.TableDefRow {
		return append(append([]rsql.TableDefRow(nil), base...), rsql.TableDefRow{Column: "payload", Type: payloadType})
	}
	for _, typ := range []string{"text", "character varying(65535)", "varchar(max)", "character varying(1000)"} {
		if _, err := rsql.Check("t", text, with(typ)); err != nil {
			t.Errorf("text payload %s: %v", typ, err)
		}
		if _, err := rsql.Check("t", varbyte, with(typ)); err == nil {
			t.Errorf("varbyte config accepted payload %s", typ)
		}
	}
	for _, typ := range []string{"bytea", "varbinary(100)", "varbyte(16777216)", "binary varying(64000)"} {
		if _, err := rsql.Check("t", varbyte, with(typ)); err != nil {
			t.Errorf("varbyte payload %s: %v", typ, err)
		}
		if _, err := rsql.Check("t", text, with(typ)); err == nil {
			t.Errorf("text config accepted payload %s", typ)
		}
	}
	for _, typ := range []string{"character(100)", "integer", "super"} {
		if _, err := rsql.Check("t", text, with(typ)); err == nil {
			t.Errorf("payload %s accepted", typ)
		}
	}
	super := rsql.NewLayout(rsql.Options{Payload: rsql.PayloadSuper})
	if _, err := rsql.Check("t", super, with("super")); err != nil {
		t.Errorf("super payload: %v", err)
	}
	for _, typ := range []string{"varbyte(16777216)", "character varying(65535)", "jsonb"} {
		if _, err := rsql.Check("t", super, with(typ)); err == nil || !strings.Contains(err.Error(), `payload_format = "super"`) {
			t.Errorf("super config and payload %s: %v", typ, err)
		}
	}
	// The staging table of a SUPER target keeps a VARBYTE payload.
	if _, err := rsql.Check("staging_t", super.Staging(), with("varbyte(16777216)")); err != nil {
		t.Errorf("staging of super: %v", err)
	}
}

func TestCheckMessages(t *testing.T) {
	all := rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: rsql.PayloadText}
	rows := rowsFor(rsql.Options{IncludeMetadata: false, IncludeKey: true, Payload: rsql.PayloadVarbyte})
	_, err := rsql.Check(`orders"x`, rsql.NewLayout(all), rows)
	want := `Schema mismatch detected in table "orders""x": column pico_offset is missing (include_metadata = true); ` +
		`column pico_timestamp is missing (include_metadata = true); column pico_topic is missing (include_metadata = true); ` +
		`column pico_partition is missing (include_metadata = true); column payload is varbyte(16777216), expected VARCHAR (payload_format = "text"). ` +
		`The table was created under different include_metadata, include_key, payload_format or write_mode and key_columns settings; change the settings or the table, ` +
		`the sink does not alter existing tables`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}

	none := rsql.Options{Payload: rsql.PayloadVarbyte}
	_, err = rsql.Check("t", rsql.NewLayout(none), rowsFor(rsql.Options{IncludeMetadata: true, IncludeKey: true}))
	for _, part := range []string{"Schema mismatch detected", "column pico_offset is present but include_metadata = false", "column pico_key is present but include_key = false"} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("%v does not contain %q", err, part)
		}
	}

	_, err = rsql.Check("t", rsql.NewLayout(none), []rsql.TableDefRow{{"id", "character varying(512)"}, {"payload", "varbyte(10)"}})
	if err == nil || !strings.Contains(err.Error(), "column created_at is missing (it is always written)") {
		t.Errorf("missing created_at: %v", err)
	}

	_, err = rsql.Check("analytics.orders", rsql.NewLayout(none), nil)
	var nf *rsql.NotFoundError
	if !errors.As(err, &nf) || !strings.HasPrefix(err.Error(), "Table 'analytics.orders' was not found or has no visible columns") {
		t.Fatalf("not found: %v", err)
	}
}

func TestCheckAllowsForeignColumnsAndNarrowsLimits(t *testing.T) {
	o := rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: rsql.PayloadText}
	rows := rowsFor(o)
	rows = append(rows, rsql.TableDefRow{Column: "loaded_at", Type: "timestamp without time zone"})
	for i := range rows {
		switch rows[i].Column {
		case "pico_topic":
			rows[i].Type = "character varying(100)"
		case "payload":
			rows[i].Type = "text" // PostgreSQL text: no length, the default stays
		case "pico_key":
			rows[i].Column = "PICO_KEY" // names compare case-insensitively
		}
	}
	l := rsql.NewLayout(o)
	lim, err := rsql.Check("t", l, rows)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(lim), "[512 20 20 100 0 65535 65535 256]"; got != want {
		t.Fatalf("limits %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(rsql.Narrow(lim, rsql.Limits{600, 10, 20, 256, 0, 0, 70000, 30})), "[512 10 20 100 0 65535 65535 30]"; got != want {
		t.Fatalf("Narrow %s, want %s", got, want)
	}
}
