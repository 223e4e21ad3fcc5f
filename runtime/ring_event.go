package runtime

// Stream names the output stream a chunk of output came from.
type Stream string

// Streams of process output.
const (
	// StreamStdout is standard output of a process started with pipes.
	StreamStdout Stream = "stdout"
	// StreamStderr is standard error of a process started with pipes.
	StreamStderr Stream = "stderr"
	// StreamPTY is the merged output of a process on a PTY.
	StreamPTY Stream = "pty"
)

// EventKind says what an Event carries.
type EventKind int

// Kinds of Event.
const (
	// EventOutput carries output bytes: Stream, Offset and Data are set.
	EventOutput EventKind = iota + 1
	// EventGap reports bytes [From, To) that left the ring before the subscriber read them.
	EventGap
	// EventExit is the last event: the process exited with Exit and all its output was
	// delivered.
	EventExit
)

// String returns "output", "gap" or "exit".
func (k EventKind) String() string {
	switch k {
	case EventOutput:
		return "output"
	case EventGap:
		return "gap"
	case EventExit:
		return "exit"
	}
	return "unknown"
}

// Event is one item of a Subscription: output, a gap or the exit.
type Event struct {
	Kind   EventKind
	Stream Stream // EventOutput: the stream Data came from
	Offset int64  // EventOutput: absolute offset of Data[0]
	Data   []byte // EventOutput: the bytes; owned by the receiver
	From   int64  // EventGap: first skipped offset
	To     int64  // EventGap: offset after the last skipped byte
	Exit   ExitStatus
}
