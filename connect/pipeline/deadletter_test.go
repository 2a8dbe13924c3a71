package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// readTopic reads every record of topic (partition 0) from the start.
func readTopic(t *testing.T, addrs []string, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(out) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return "<absent>"
}

// errors_tolerance = "all": of a batch of 10, the two records the plugin
// rejects (ABI 1.1) and the one the runtime cannot decode go to
// <topic>.dlq with their key, value and headers plus the pico_* headers;
// the other 7 are written; the offset moves past the batch once the
// broker acknowledged the dead letters.
func TestDeadLetters(t *testing.T) {
	both(t, func() *fakeplugin.Plugin { return rejecting(`{"bad"`) }, "reject_prefix = '{\"bad\"'\n", testDeadLetters)
}

func testDeadLetters(t *testing.T, p plug) {
	kf := cluster(t, "orders", "orders.dlq")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"orders\"]\nschema = \"json\"\nbatch_length = 10\nerrors_tolerance = \"all\"\n", p)
	payloads := jsonPayloads(0, 10)
	payloads[2], payloads[5], payloads[7] = `{"bad":2}`, `{"n":`, `{"bad":7}`
	produce(t, kf, "orders", payloads...)
	h.start()
	poll.Until(t, 15*time.Second, "commit at 10", func() bool { return committed(t, kf, group, "orders")["orders"] == 10 })
	if got := offsets(h.lines(), "orders"); !slices.Equal(got, []uint64{0, 1, 3, 4, 6, 8, 9}) {
		t.Fatalf("written offsets %v", got)
	}
	dlq := readTopic(t, kf.ListenAddrs(), "orders.dlq", 3)
	if len(dlq) != 3 {
		t.Fatalf("%d dead letters, want 3", len(dlq))
	}
	want := []struct{ offset, class, msg, value string }{
		{"2", "value", `test plugin: record at topic "orders" offset 2 starts with "{\"bad\""`, `{"bad":2}`},
		{"5", "encoding", `topic "orders" partition 0 record at offset 5 is not valid JSON (schema = "json")`, `{"n":`},
		{"7", "value", `test plugin: record at topic "orders" offset 7 starts with "{\"bad\""`, `{"bad":7}`},
	}
	for i, w := range want {
		r := dlq[i]
		if header(r, metadata.DeadLetterOffset) != w.offset || header(r, metadata.DeadLetterClass) != w.class ||
			header(r, metadata.DeadLetterMessage) != w.msg || string(r.Value) != w.value || string(r.Key) != "k" ||
			header(r, "h") != "v" || header(r, metadata.DeadLetterTopic) != "orders" || header(r, metadata.DeadLetterPartition) != "0" ||
			!strings.HasPrefix(header(r, metadata.DeadLetterTimestamp), "1") {
			t.Errorf("dead letter %d: key %q value %q headers %v", i, r.Key, r.Value, r.Headers)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	// The Observer saw the dead letters, per class.
	var counted map[string]int
	for _, d := range h.seen.d {
		if d.DeadLetters != nil {
			counted = d.DeadLetters
		}
	}
	if counted["value"] != 2 || counted["encoding"] != 1 {
		t.Errorf("observed dead letters %v", counted)
	}
}

// errors_tolerance = "none" (the default): the plugin is not offered
// rejections and fails the batch FATAL, as the spec says; nothing commits.
func TestToleranceNoneStopsOnABadRecord(t *testing.T) {
	kf := cluster(t, "orders", "orders.dlq")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"orders\"]\nschema = \"json\"\nbatch_length = 3\n", fake(rejecting(`{"bad"`)))
	produce(t, kf, "orders", `{"n":0}`, `{"bad":1}`, `{"n":2}`)
	h.start()
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Outcome != pipeline.Fatal || !strings.Contains(err.Error(), `offset 1 starts with`) {
		t.Fatalf("Run = %v, want a FATAL stop", err)
	}
	if got := committed(t, kf, group, "orders")["orders"]; got != -1 {
		t.Errorf("committed %d", got)
	}
	if n := len(h.lines()); n != 0 {
		t.Errorf("%d batches written", n)
	}
}

// A pattern block with errors_tolerance = "all" and the default
// "<topic>.dlq" naming never consumes its own dead letters, although
// 'orders\..*' matches orders.eu.dlq: the dead letter lands once, the sink
// keeps running, and the plugin never sees it.
func TestPatternDoesNotConsumeItsDeadLetters(t *testing.T) {
	kf := cluster(t, "orders.eu", "orders.eu.dlq")
	h := newHarness(t, kf, "[[topics]]\npattern = 'orders\\..*'\nschema = \"json\"\nbatch_length = 3\npoll_interval = \"50ms\"\nerrors_tolerance = \"all\"\n", fake(rejecting(`{"bad"`)))
	produce(t, kf, "orders.eu", `{"n":0}`, `{"bad":1}`, `{"n":2}`)
	h.start()
	poll.Until(t, 15*time.Second, "commit at 3", func() bool { return committed(t, kf, group, "orders.eu")["orders.eu"] == 3 })
	produce(t, kf, "orders.eu", `{"n":3}`)
	poll.Until(t, 15*time.Second, "commit at 4", func() bool { return committed(t, kf, group, "orders.eu")["orders.eu"] == 4 })
	if dlq := readTopic(t, kf.ListenAddrs(), "orders.eu.dlq", 1); len(dlq) != 1 || string(dlq[0].Value) != `{"bad":1}` {
		t.Fatalf("dead letters %d, want the one bad record", len(dlq))
	}
	for _, l := range h.lines() {
		if l.Topic != "orders.eu" {
			t.Errorf("the plugin got a batch of %s", l.Topic)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatalf("the sink stopped: %v", err)
	}
}

// A tombstone (an empty value) on a schema = "json" topic is not malformed
// JSON to the runtime: it reaches the plugin, which decides what a
// tombstone gets. The test plugin relies on the SDK's payload check, which
// refuses it (FATAL from the plugin); before, the runtime refused it itself
// (Invalid) and no sink could choose (Delta's skip_empty_payloads, Redshift
// storing an empty value).
func TestTombstonesReachThePlugin(t *testing.T) {
	both(t, func() *fakeplugin.Plugin {
		// The SDK's check, as the test plugin answers a batch with a
		// tombstone.
		return &fakeplugin.Plugin{Decide: func(b hostclient.Batch, _ int) fakeplugin.Result {
			for _, r := range b.Records {
				if len(r.Payload) == 0 {
					return fakeplugin.Fatal(fmt.Sprintf("topic %q offset %d: payload is not a JSON value", b.Topic, r.Offset))
				}
			}
			return fakeplugin.Result{}
		}}
	}, "", testTombstonesReachThePlugin)
}

func testTombstonesReachThePlugin(t *testing.T, p plug) {
	kf := cluster(t, "orders")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"orders\"]\nschema = \"json\"\nbatch_length = 3\n", p)
	produce(t, kf, "orders", `{"n":0}`, ``, `{"n":2}`)
	h.start()
	err := h.wait(30 * time.Second)
	var se *pipeline.StopError
	if !errors.As(err, &se) || se.Outcome != pipeline.Fatal || !strings.Contains(err.Error(), `topic "orders" offset 1: payload is not a JSON value`) {
		t.Fatalf("Run = %v, want the plugin's FATAL for the tombstone at offset 1", err)
	}
}

// topicExists asks the broker (without auto-creating) whether topic exists.
func topicExists(t *testing.T, opts []kgo.Opt, topic string) bool {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return td.Has(topic) && td[topic].Err == nil
}

// Without auto-creation (kfake's default, like the Kafka of services.sh),
// a missing dead-letter topic is created with the broker's defaults when
// the block starts, before any record is consumed, so the first bad record
// is dead-lettered; before, producing it failed and stopped the consumer.
func TestDeadLetterTopicCreatedAtStart(t *testing.T) {
	kf := cluster(t, "orders")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"orders\"]\nschema = \"json\"\nbatch_length = 3\nerrors_tolerance = \"all\"\n", fake(rejecting(`{"bad"`)))
	addrs := []kgo.Opt{kgo.SeedBrokers(kf.ListenAddrs()...)}
	if topicExists(t, addrs, "orders.dlq") {
		t.Fatal("orders.dlq exists before the sink starts")
	}
	h.start()
	poll.Until(t, 15*time.Second, "orders.dlq created", func() bool { return topicExists(t, addrs, "orders.dlq") })
	if !h.logged("event=dead_letter_topic_created") {
		t.Error("no dead_letter_topic_created line")
	}
	produce(t, kf, "orders", `{"n":0}`, `{"bad":1}`, `{"n":2}`)
	poll.Until(t, 15*time.Second, "commit at 3", func() bool { return committed(t, kf, group, "orders")["orders"] == 3 })
	if dlq := readTopic(t, kf.ListenAddrs(), "orders.dlq", 1); len(dlq) != 1 || string(dlq[0].Value) != `{"bad":1}` {
		t.Fatalf("%d dead letters, want the bad record", len(dlq))
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}

// aclCluster is a broker with ACLs: the test's clients are the superuser
// admin; the sink's principal "sink" may read and write every topic and
// group but create only topics whose names start with "orders.eu".
func aclCluster(t *testing.T, topics ...string) (*kfake.Cluster, []kgo.Opt) {
	t.Helper()
	allow := func(res kmsg.ACLResourceType, name string, pat kmsg.ACLResourcePatternType, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: res, Name: name, Pattern: pat, Operation: op, Allow: true}
	}
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", "admin", "admin"),
		kfake.User("PLAIN", "sink", "sink-pw",
			allow(kmsg.ACLResourceTypeTopic, "*", lit, kmsg.ACLOperationRead),
			allow(kmsg.ACLResourceTypeTopic, "*", lit, kmsg.ACLOperationWrite),
			allow(kmsg.ACLResourceTypeGroup, "*", lit, kmsg.ACLOperationRead),
			allow(kmsg.ACLResourceTypeTopic, "orders.eu", pre, kmsg.ACLOperationCreate)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	return kf, []kgo.Opt{kgo.SeedBrokers(kf.ListenAddrs()...), kgo.SASL(plain.Auth{User: "admin", Pass: "admin"}.AsMechanism())}
}

// sinkLogin is a block's properties for aclCluster's sink principal.
const sinkLogin = "[topics.properties]\n\"security.protocol\" = \"SASL_PLAINTEXT\"\n\"sasl.mechanism\" = \"PLAIN\"\n" +
	"\"sasl.username\" = \"sink\"\n\"sasl.password\" = \"sink-pw\"\n"

// adminProduce produces payloads to topic as the superuser.
func adminProduce(t *testing.T, opts []kgo.Opt, topic string, payloads ...string) {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, p := range payloads {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte(p)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// adminCommitted is the group's committed offset of topic partition 0 (-1
// when none), asked as the superuser.
func adminCommitted(t *testing.T, opts []kgo.Opt, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := resp.Lookup(topic, 0); ok {
		return o.At
	}
	return -1
}

// A dead-letter topic that is missing and that the block's principal may
// not create stops the consumer before it consumes anything, with an error
// naming the topic and the block. Before, the batch was written and the
// consumer stopped only when its bad record could not be produced.
func TestDeadLetterTopicThatCannotBeCreated(t *testing.T) {
	kf, admin := aclCluster(t, "orders")
	adminProduce(t, admin, "orders", `{"n":0}`, `{"bad":1}`, `{"n":2}`)
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"orders\"]\nschema = \"json\"\nbatch_length = 3\nerrors_tolerance = \"all\"\n"+sinkLogin, fake(rejecting(`{"bad"`)))
	h.start()
	err := h.wait(30 * time.Second)
	var dte *pipeline.DeadLetterTopicError
	if !errors.As(err, &dte) || dte.Topic != "orders.dlq" || dte.Block != 1 || !errors.Is(err, kerr.TopicAuthorizationFailed) ||
		!strings.Contains(err.Error(), `[[topics]] block 1: dead-letter topic "orders.dlq" (of topic "orders"): does not exist and the broker refused to create it`) {
		t.Fatalf("Run = %v, want a refusal naming orders.dlq and block 1", err)
	}
	if n := len(h.lines()); n != 0 {
		t.Errorf("%d batches delivered", n)
	}
	if got := adminCommitted(t, admin, "orders"); got != -1 {
		t.Errorf("committed %d", got)
	}
	if st, _ := h.sink.State(); st != pipeline.StateError {
		t.Errorf("state %s", st)
	}
}

// A pattern block checks the dead-letter topic of each topic it is
// assigned before the topic's first record is consumed: orders.eu's is
// created at the first assignment; orders.us, created later, gets a
// dead-letter topic the principal may not create, and the consumer stops
// naming it before any record of orders.us reaches the plugin.
func TestDeadLetterTopicOfAPatternTopic(t *testing.T) {
	kf, admin := aclCluster(t, "orders.eu")
	h := newHarness(t, kf, "[[topics]]\npattern = 'orders\\..*'\nschema = \"json\"\nbatch_length = 1\nerrors_tolerance = \"all\"\n"+sinkLogin, fake(&fakeplugin.Plugin{}))
	h.start()
	poll.Until(t, 15*time.Second, "orders.eu.dlq created", func() bool { return topicExists(t, admin, "orders.eu.dlq") })
	adminProduce(t, admin, "orders.eu", `{"n":0}`)
	poll.Until(t, 15*time.Second, "orders.eu committed", func() bool { return adminCommitted(t, admin, "orders.eu") == 1 })
	cl, err := kgo.NewClient(admin...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, nil, "orders.us"); err != nil {
		t.Fatal(err)
	}
	adminProduce(t, admin, "orders.us", `{"n":0}`)
	err = h.wait(30 * time.Second)
	var dte *pipeline.DeadLetterTopicError
	if !errors.As(err, &dte) || dte.Topic != "orders.us.dlq" || dte.Source != "orders.us" || dte.Block != 1 {
		t.Fatalf("Run = %v, want a refusal naming orders.us.dlq", err)
	}
	if got := offsets(h.lines(), "orders.us"); len(got) != 0 {
		t.Errorf("orders.us offsets %v delivered", got)
	}
	if got := adminCommitted(t, admin, "orders.us"); got != -1 {
		t.Errorf("orders.us committed %d", got)
	}
}

// A broker that does not answer when the block starts is waited for, with
// a line per attempt, as for any broker operation: not a refusal. Once it
// is up the dead-letter topic is created and the sink consumes.
func TestDeadLetterCheckWaitsForTheBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	h := newHarness(t, nil, "[[topics]]\ntopics = [\"orders\"]\nschema = \"json\"\nbatch_length = 3\nerrors_tolerance = \"all\"\n", fake(rejecting(`{"bad"`)))
	h.brokers = []string{fmt.Sprintf("127.0.0.1:%d", port)}
	h.start()
	poll.Until(t, 45*time.Second, "a retry logged", func() bool { return h.logged("event=dead_letter_check_retry") })
	select {
	case err := <-h.done:
		t.Fatalf("Run returned %v while the broker was down", err)
	default:
	}
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	produce(t, kf, "orders", `{"n":0}`, `{"bad":1}`, `{"n":2}`)
	poll.Until(t, 45*time.Second, "commit at 3", func() bool { return committed(t, kf, group, "orders")["orders"] == 3 })
	if dlq := readTopic(t, kf.ListenAddrs(), "orders.dlq", 1); len(dlq) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dlq))
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}
