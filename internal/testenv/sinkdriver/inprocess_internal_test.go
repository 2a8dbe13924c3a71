package sinkdriver

import (
	"errors"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// The in-process batch is the one the C host would build: an absent key
// stays nil, an empty one stays empty, headers and the delivery fields
// carry over.
func TestToSDK(t *testing.T) {
	b := Batch{Attempt: 2, Partition: 7, Topic: "orders", Schema: "raw", AcceptRejections: true, Records: []Record{
		{Offset: 5, TimestampMs: 1000, Key: nil, Payload: []byte("a")},
		{Offset: 6, TimestampMs: 1001, Key: []byte{}, Payload: []byte{},
			Headers: []hostclient.Header{{Key: "h", Value: []byte("v")}}},
	}}
	got := toSDK(b)
	if got.Attempt != 2 || got.Partition != 7 || got.Topic != "orders" || got.Schema != "raw" || !got.CanReject() || len(got.Records) != 2 {
		t.Fatalf("batch %+v", got)
	}
	r0, r1 := got.Records[0], got.Records[1]
	if r0.Key != nil || r0.Offset != 5 || r0.Timestamp != 1000 || string(r0.Payload) != "a" {
		t.Errorf("record 0 %+v", r0)
	}
	if r1.Key == nil || len(r1.Key) != 0 || r1.Payload == nil || len(r1.Headers) != 1 ||
		string(r1.Headers[0].Key) != "h" || string(r1.Headers[0].Value) != "v" {
		t.Errorf("record 1 %+v", r1)
	}
	if toSDK(Batch{}).CanReject() {
		t.Error("a batch that does not accept rejections can reject")
	}
}

// An SDK error becomes the *hostclient.StatusError the C host reports.
func TestStatus(t *testing.T) {
	if status("consume", nil) != nil {
		t.Fatal("nil error")
	}
	var se *hostclient.StatusError
	if err := status("consume", sdk.Fatalf("column payload is not valid UTF-8")); !errors.As(err, &se) ||
		se.Op != "consume" || se.Code != hostclient.StatusFatal || se.Message != "column payload is not valid UTF-8" {
		t.Fatalf("%#v", err)
	}
	if hostclient.CodeOf(status("open", sdk.BadConfigf("x"))) != hostclient.StatusBadConfig {
		t.Error("BAD_CONFIG")
	}
}
