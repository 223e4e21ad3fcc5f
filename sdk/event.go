package sdk

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Event is one entry of a sandbox's event log.
type Event struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	At   time.Time       `json:"at"`
	Data json.RawMessage `json:"data,omitempty"`
}

// ListEventsOptions tunes [Client.ListEvents].
type ListEventsOptions struct {
	// Since keeps the events with a seq above it.
	Since int64
	// Limit caps how many events are returned; 0 is the server default.
	Limit int
}

// ListEvents returns events oldest first. opts may be nil.
func (c *Client) ListEvents(ctx context.Context, sb string, opts *ListEventsOptions) ([]Event, error) {
	q := url.Values{}
	if opts != nil {
		if opts.Since > 0 {
			q.Set("since", strconv.FormatInt(opts.Since, 10))
		}
		if opts.Limit > 0 {
			q.Set("limit", strconv.Itoa(opts.Limit))
		}
	}
	var out struct {
		Events []Event `json:"events"`
	}
	_, err := c.do(ctx, request{method: http.MethodGet, path: sbPath(sb, "events"), query: q}, &out)
	return out.Events, err
}

// PostEvent appends an event of type typ, which must start with "agent.", carrying
// data: a value that encodes as a JSON object (a map or a struct), or nil for {}.
// Anything else (a string, a number, an array) is refused with invalid_argument. It
// returns the event's seq.
func (c *Client) PostEvent(ctx context.Context, sb, typ string, data any) (int64, error) {
	body := struct {
		Type string `json:"type"`
		Data any    `json:"data,omitempty"`
	}{typ, data}
	var out struct {
		Seq int64 `json:"seq"`
	}
	_, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "events"), body: body}, &out)
	return out.Seq, err
}

// Message is a message queued for a sandbox's worker. Messages are delivered at least
// once: a taken message that is not acknowledged ([Client.AckMessage],
// [Client.AckMessages]) within its visibility time is taken again, with Attempts grown.
type Message struct {
	ID   string          `json:"id"`
	Data json.RawMessage `json:"data"`
	// Attempts is how many takes have returned the message, this one included.
	Attempts int `json:"attempts"`
	// PostedAt is when the message was queued.
	PostedAt time.Time `json:"posted_at"`
}

// TakeMessagesOptions tunes [Client.TakeMessages].
type TakeMessagesOptions struct {
	// WaitMS long-polls up to this long when no message is visible.
	WaitMS int64
	// Max caps how many messages are taken (1 to 1000); 0 is the server default, 100.
	Max int
	// VisibilityMS is how long taken messages stay hidden before they are returned
	// again unless acknowledged; 0 is the server default, 30000.
	VisibilityMS int64
}

// PostMessage queues a message carrying data, a value that encodes as a JSON object
// (a map or a struct), or nil for {}; anything else is refused with invalid_argument.
// It returns the message's id.
func (c *Client) PostMessage(ctx context.Context, sb string, data any) (string, error) {
	body := struct {
		Data any `json:"data"`
	}{data}
	var out struct {
		ID string `json:"id"`
	}
	_, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "messages"), body: body}, &out)
	return out.ID, err
}

// TakeMessages takes visible queued messages, oldest first, hiding them for their
// visibility time; acknowledge each once handled, or it is returned again. opts may be
// nil. A take is never sent twice: after a connection that broke before the answer
// the error is returned, and what that take hid comes back after its visibility time.
func (c *Client) TakeMessages(ctx context.Context, sb string, opts *TakeMessagesOptions) ([]Message, error) {
	q := url.Values{}
	if opts != nil {
		if opts.WaitMS > 0 {
			q.Set("wait_ms", strconv.FormatInt(opts.WaitMS, 10))
		}
		if opts.Max > 0 {
			q.Set("max", strconv.Itoa(opts.Max))
		}
		if opts.VisibilityMS > 0 {
			q.Set("visibility_ms", strconv.FormatInt(opts.VisibilityMS, 10))
		}
	}
	var out struct {
		Messages []Message `json:"messages"`
	}
	_, err := c.do(ctx, request{method: http.MethodGet, path: sbPath(sb, "messages"), query: q, once: true}, &out)
	return out.Messages, err
}

// AckMessage acknowledges (removes) a taken message so it is not returned again. An
// unknown or already removed id is an *Error with code "not_found".
func (c *Client) AckMessage(ctx context.Context, sb, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: sbPath(sb, "messages", id)}, nil)
	return err
}

// AckMessages acknowledges several messages (at most 1000 ids) and returns how many
// were removed; unknown or already removed ids count nothing.
func (c *Client) AckMessages(ctx context.Context, sb string, ids []string) (int, error) {
	if ids == nil {
		ids = []string{}
	}
	body := struct {
		IDs []string `json:"ids"`
	}{ids}
	var out struct {
		Acked int `json:"acked"`
	}
	_, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "messages", "ack"), body: body}, &out)
	return out.Acked, err
}
