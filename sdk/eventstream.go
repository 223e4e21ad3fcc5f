package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/url"
	"strconv"
)

// StreamEvents streams the events of sandbox sb with a seq above since, replaying the
// log and then following it. It runs until ctx ends or the loop breaks, and ends with
// one non-nil error: ctx's, a non-retryable API error (*Error), or the last failure
// once [Options.MaxRetries] reconnects in a row delivered nothing. A dropped connection
// is resumed after the last seq yielded, so every event is yielded once, in order.
// Each range over the iterator opens a new stream from since.
func (c *Client) StreamEvents(ctx context.Context, sb string, since int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		last := since
		target := func() ([]string, url.Values, string) {
			q := url.Values{}
			id := ""
			if last > 0 {
				q.Set("since", strconv.FormatInt(last, 10))
				id = strconv.FormatInt(last, 10)
			}
			return sbPath(sb, "events", "stream"), q, id
		}
		handle := func(ev sseEvent) (progress, stop bool, err error) {
			e, ok, err := decodeStreamEvent(ev)
			if err != nil || !ok || e.Seq <= last {
				return false, false, err
			}
			last = e.Seq
			return true, !yield(e, nil), nil
		}
		if err := c.followSSE(ctx, "event stream of "+sb, target, handle); err != nil {
			yield(Event{}, err)
		}
	}
}

// decodeStreamEvent reads an event of the event stream. The data line is either the
// event object ({"seq","type","at","data"}) or the event's own data, with the seq in
// the SSE id and the type in the SSE event name; ok is false for events without data
// (such as a bare id).
func decodeStreamEvent(ev sseEvent) (e Event, ok bool, err error) {
	if ev.Data == "" {
		return e, false, nil
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal([]byte(ev.Data), &probe) == nil && probe["seq"] != nil && probe["type"] != nil {
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			return e, false, fmt.Errorf("sdk: bad event in event stream: %w", err)
		}
	} else {
		if !json.Valid([]byte(ev.Data)) {
			return e, false, fmt.Errorf("sdk: event data is not JSON: %.80q", ev.Data)
		}
		e.Data = json.RawMessage(ev.Data)
	}
	if e.Seq == 0 && ev.HasID {
		e.Seq, _ = strconv.ParseInt(ev.ID, 10, 64)
	}
	if e.Type == "" {
		e.Type = ev.Event
	}
	if e.Seq == 0 {
		return e, false, fmt.Errorf("sdk: event without seq in event stream: %.80q", ev.Data)
	}
	return e, true, nil
}
