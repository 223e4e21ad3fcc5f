package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/url"
	"strconv"
)

// OutputEventType is the kind of an [OutputEvent].
type OutputEventType string

// The events of a process output stream.
const (
	// OutputData carries output bytes.
	OutputData OutputEventType = "output"
	// OutputGap reports bytes that left the ring buffer before they could be sent.
	OutputGap OutputEventType = "gap"
	// OutputExit is the last event: the process exited.
	OutputExit OutputEventType = "exit"
)

// OutputEvent is one event of a process's output stream.
type OutputEvent struct {
	Type OutputEventType
	// Stream is "stdout", "stderr" or "pty" (OutputData).
	Stream string
	// Offset is the offset of Data's first byte (OutputData).
	Offset int64
	// Data are the output bytes (OutputData).
	Data []byte
	// From and To are the missing byte range (OutputGap).
	From, To int64
	// ExitCode and Signal are how the process ended (OutputExit); either may be nil.
	ExitCode *int
	Signal   *Signal
}

// ProcessOutput streams a process's output from byte offset (negative: the server's
// default), replaying what is buffered and following live output until the process
// exits. The iterator ends after the [OutputExit] event, or with one non-nil error:
// ctx's, a non-retryable API error (*Error), or the last failure once
// [Options.MaxRetries] reconnects in a row delivered nothing.
//
// Offsets count the bytes of all the process's streams together (one ring buffer per
// process). A dropped connection is resumed transparently from the offset reached, so every
// output byte is yielded once, in order; bytes lost to the ring buffer are reported as
// an [OutputGap] event. Breaking out of the loop closes the stream. Each range over the
// iterator opens a new stream from offset; one range must not be shared by goroutines.
func (c *Client) ProcessOutput(ctx context.Context, sb, proc string, offset int64) iter.Seq2[OutputEvent, error] {
	return func(yield func(OutputEvent, error) bool) {
		next := offset
		target := func() ([]string, url.Values, string) {
			q := url.Values{}
			id := ""
			if next >= 0 {
				q.Set("offset", strconv.FormatInt(next, 10))
				id = strconv.FormatInt(next, 10)
			}
			return sbPath(sb, "processes", proc, "output"), q, id
		}
		handle := func(ev sseEvent) (progress, stop bool, err error) {
			out, ok, err := decodeOutputEvent(ev)
			if err != nil || !ok {
				return false, false, err
			}
			switch out.Type {
			case OutputData:
				end := out.Offset + int64(len(out.Data))
				if next >= 0 && out.Offset < next {
					if end <= next {
						return false, false, nil // already yielded before a reconnect
					}
					out.Data = out.Data[next-out.Offset:]
					out.Offset = next
				}
				next = end
			case OutputGap:
				next = max(next, out.To)
			case OutputExit:
				yield(out, nil)
				return true, true, nil
			}
			return true, !yield(out, nil), nil
		}
		what := fmt.Sprintf("output of process %s/%s", sb, proc)
		if err := c.followSSE(ctx, what, target, handle); err != nil {
			yield(OutputEvent{}, err)
		}
	}
}

// decodeOutputEvent turns an SSE event of the output stream into an OutputEvent; ok is
// false for events of other types, which are skipped.
func decodeOutputEvent(ev sseEvent) (out OutputEvent, ok bool, err error) {
	out.Type = OutputEventType(ev.Event)
	switch out.Type {
	case OutputData:
		var p struct {
			Stream string `json:"stream"`
			Offset int64  `json:"offset"`
			Data   []byte `json:"data"`
		}
		err = json.Unmarshal([]byte(ev.Data), &p)
		out.Stream, out.Offset, out.Data = p.Stream, p.Offset, p.Data
	case OutputGap:
		var p struct {
			From int64 `json:"from"`
			To   int64 `json:"to"`
		}
		err = json.Unmarshal([]byte(ev.Data), &p)
		out.From, out.To = p.From, p.To
	case OutputExit:
		var p struct {
			ExitCode *int    `json:"exit_code"`
			Signal   *Signal `json:"signal"`
		}
		err = json.Unmarshal([]byte(ev.Data), &p)
		out.ExitCode, out.Signal = p.ExitCode, p.Signal
	default:
		return out, false, nil
	}
	if err != nil {
		return out, false, fmt.Errorf("sdk: bad %q event in output stream: %w", ev.Event, err)
	}
	return out, true, nil
}
