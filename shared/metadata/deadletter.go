package metadata

// Headers the runtime adds to a record it produces to a dead-letter topic
// (errors_tolerance = "all"), next to the record's own key, value and
// headers. Values are UTF-8 text; numbers in decimal.
const (
	// DeadLetterTopic is the topic the record was consumed from.
	DeadLetterTopic = "pico_source_topic"
	// DeadLetterPartition is its partition.
	DeadLetterPartition = "pico_source_partition"
	// DeadLetterOffset is its offset.
	DeadLetterOffset = "pico_source_offset"
	// DeadLetterTimestamp is its timestamp, epoch milliseconds.
	DeadLetterTimestamp = "pico_source_timestamp"
	// DeadLetterClass is why it was rejected: value, size or encoding (the
	// ABI's picomq_reject_reason), unknown(N) for a reason this runtime
	// does not know.
	DeadLetterClass = "pico_error_class"
	// DeadLetterMessage is the plugin's (or the runtime's) message.
	DeadLetterMessage = "pico_error_message"
	// RedriveAttempts is how many redrives (picomq-connect redrive) put
	// the record back and saw it rejected again; absent on a record
	// dead-lettered by the loop, which counts as 0.
	RedriveAttempts = "pico_redrive_attempts"
)

// DeadLetterHeaders are the headers the runtime adds to a dead letter: a
// redrive removes them to give the record its own headers back.
var DeadLetterHeaders = []string{DeadLetterTopic, DeadLetterPartition, DeadLetterOffset, DeadLetterTimestamp,
	DeadLetterClass, DeadLetterMessage, RedriveAttempts}
