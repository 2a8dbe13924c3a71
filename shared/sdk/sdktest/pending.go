package sdktest

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

// NewPending returns an unanswered sdk.Pending for the batch of topic,
// partition through offset rangeLast, and the func that answers it (ok or
// not; once). A pipelined sink's test sets it as sdk.Batch.Pred to play
// the batch a pipelined batch follows, answered when the test says.
//
// sdk.Pending is made only by the SDK's sequencer, and answering it is the
// SDK's alone, so this sets its unexported fields by reflection; it panics
// naming the field should they change (TestNewPending checks them).
func NewPending(topic string, partition uint32, rangeLast uint64) (*sdk.Pending, func(ok bool)) {
	p := &sdk.Pending{Topic: topic, Partition: partition, RangeLast: rangeLast}
	done := make(chan struct{})
	pendingField(p, "done").Set(reflect.ValueOf(done))
	var once sync.Once
	return p, func(ok bool) {
		once.Do(func() {
			pendingField(p, "ok").SetBool(ok) // before done closes, as the SDK does
			close(done)
		})
	}
}

func pendingField(p *sdk.Pending, name string) reflect.Value {
	f := reflect.ValueOf(p).Elem().FieldByName(name)
	if !f.IsValid() {
		panic(fmt.Sprintf("sdktest.NewPending: sdk.Pending has no field %q any more", name))
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}
