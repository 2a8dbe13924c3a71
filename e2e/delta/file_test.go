package delta_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltatest"
)

const createOrders = deltatest.CreateOrders

func TestFileTableAppendReadBackByDeltaRS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "orders")
	uri := fileURI(dir)
	py(t, createOrders, uri)
	h := newHarness(t)
	inst := h.open("orders_delta", map[string]any{"table_uri": uri})
	consume(t, inst, jsonBatch("orders.eu", 0,
		`{"id":1,"customer":"ann","amount":9.5,"paid":true,"created_at":"2026-09-03T21:15:04Z","attrs":{"a":1},"address":{"city":"Oslo","zip":150},"tags":["x","y"],"region":"eu"}`,
		`{"id":2,"customer":"bob","amount":1,"paid":false,"created_at":"2026-09-03 21:15:04.5","attrs":"plain","address":null,"tags":[],"region":"us","extra":"ignored"}`,
	))
	consume(t, inst, jsonBatch("orders.eu", 2,
		`{"id":3,"customer":null,"amount":null,"paid":null,"created_at":1788470104000000,"attrs":[1,2],"region":null}`,
	))
	rows := readRows(t, uri, "id")
	got, _ := json.Marshal(rows)
	want := `[{"address":{"city":"Oslo","zip":150},"amount":9.5,"attrs":"{\"a\":1}","created_at":"2026-09-03T21:15:04+00:00","customer":"ann","id":1,"paid":true,"region":"eu","tags":["x","y"]},` +
		`{"address":null,"amount":1,"attrs":"plain","created_at":"2026-09-03T21:15:04.500000+00:00","customer":"bob","id":2,"paid":false,"region":"us","tags":[]},` +
		`{"address":null,"amount":null,"attrs":"[1,2]","created_at":"2026-09-03T21:15:04+00:00","customer":null,"id":3,"paid":null,"region":null,"tags":null}]`
	if string(got) != want {
		t.Fatalf("rows\n got %s\nwant %s", got, want)
	}
	hist := history(t, uri)
	if len(hist) != 3 || hist[0]["version"] != 2.0 || hist[0]["operation"] != "WRITE" {
		t.Fatalf("history %v", hist)
	}
}
