package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Version is the SDK version sent in the default User-Agent.
const Version = "0.1.0"

// Options configures a [Client]. The zero value, or a nil *Options, means defaults.
type Options struct {
	// HTTPClient sends every request, WebSocket handshakes included. Default: a client
	// without a timeout (streams are long-lived; bound calls with their ctx instead).
	HTTPClient *http.Client
	// UserAgent is sent on every request. Default: "sandgate-sdk/<Version>".
	UserAgent string
	// MaxRetries bounds how many reconnects in a row a stream ([Client.ProcessOutput],
	// [Client.StreamEvents], [Attachment]) makes after its connection drops before it
	// gives up; the count resets whenever a connection delivers data. Default 5; a
	// negative value disables reconnecting.
	MaxRetries int
	// RetryBackoff is the wait before the first reconnect; it doubles on each further
	// attempt, up to 5 s. A Retry-After from the server takes precedence. Default 200 ms.
	RetryBackoff time.Duration
	// Endpoints are more base URLs of the same cluster (other members' addresses), in
	// the order to try them after New's baseURL. A request that cannot connect to the
	// endpoint in use goes at once to the next, and the client stays on the one that
	// answered; streams reconnect the same way, so they outlive their node's stop.
	// A request that reached a node is never sent to another (see endpoints.go).
	// Default: none.
	Endpoints []string
}

// Client talks to one gateway, or to the members of one cluster in turn (see
// [Options.Endpoints]). It is safe for concurrent use by multiple goroutines; it
// holds no per-call state.
type Client struct {
	eps     *endpoints
	baseErr error
	token   string
	hc      *http.Client
	ua      string
	retries int
	backoff time.Duration
}

// New returns a client for the gateway at baseURL (such as "http://127.0.0.1:7070";
// a path prefix is kept) that authenticates with token (empty: no Authorization
// header). opts may be nil. The caller's opts is not modified. A malformed baseURL
// (or endpoint) is reported by every call.
func New(baseURL, token string, opts *Options) *Client {
	var o Options
	if opts != nil {
		o = *opts
	}
	c := &Client{token: token, hc: o.HTTPClient, ua: o.UserAgent, retries: o.MaxRetries, backoff: o.RetryBackoff}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	if c.ua == "" {
		c.ua = "sandgate-sdk/" + Version
	}
	switch {
	case opts == nil || o.MaxRetries == 0:
		c.retries = 5
	case o.MaxRetries < 0:
		c.retries = 0
	}
	if c.backoff <= 0 {
		c.backoff = 200 * time.Millisecond
	}
	c.eps, c.baseErr = parseEndpoints(baseURL, o.Endpoints)
	return c
}

// endpoint builds the absolute URL of an API path made of escaped segments, on the
// endpoint in use, and returns that endpoint's index.
func (c *Client) endpoint(query url.Values, segs ...string) (string, int, error) {
	if c.baseErr != nil {
		return "", 0, c.baseErr
	}
	i, base := c.eps.current()
	var b strings.Builder
	b.WriteString(strings.TrimRight(base.String(), "/"))
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	if len(query) > 0 {
		b.WriteByte('?')
		b.WriteString(query.Encode())
	}
	return b.String(), i, nil
}

// header returns the headers every request carries.
func (c *Client) header() http.Header {
	h := http.Header{}
	h.Set("User-Agent", c.ua)
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	return h
}

// request describes one call for do.
type request struct {
	method string
	path   []string
	query  url.Values
	body   any       // JSON-encoded when non-nil
	raw    io.Reader // sent as is when non-nil (files)
	header http.Header
	// once marks a GET that must not run twice (a take of messages): see noReplay.
	once bool
}

// noReplay is the empty body of a GET that must not run twice. Go's transport sends
// a GET again by itself when a kept-alive connection breaks before any answer, which
// is also what a server looks like that ran the request and went down before its
// answer left; a second take would then hide messages nobody received. A request
// with a body the transport cannot rewind (no GetBody) is never sent again: the
// caller gets the error, an outcome it cannot know, as for any broken connection.
// The transport finds the body empty when it probes it and sends none.
type noReplay struct{}

func (noReplay) Read([]byte) (int, error) { return 0, io.EOF }

// send performs r and returns the response when its status is below 400; otherwise it
// returns the decoded *Error. The caller closes the body. A request that cannot
// connect is sent to the next endpoint, each at most once (endpoints.go).
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	var payload []byte
	if r.raw == nil && r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, fmt.Errorf("sdk: failed to encode %s %s: %w", r.method, strings.Join(r.path, "/"), err)
		}
		payload = b
	}
	for attempt := 1; ; attempt++ {
		u, i, err := c.endpoint(r.query, r.path...)
		if err != nil {
			return nil, err
		}
		var body io.Reader
		h := c.header()
		switch {
		case r.raw != nil:
			body = r.raw
			h.Set("Content-Type", "application/octet-stream")
		case payload != nil:
			body = bytes.NewReader(payload)
			h.Set("Content-Type", "application/json")
		case r.once:
			body = noReplay{}
		}
		for k, v := range r.header {
			h[k] = v
		}
		req, err := http.NewRequestWithContext(ctx, r.method, u, body)
		if err != nil {
			return nil, fmt.Errorf("sdk: failed to build request: %w", err)
		}
		req.Header = h
		resp, err := c.hc.Do(req)
		if err != nil {
			if ctx.Err() == nil && unreachable(err) {
				c.eps.failed(i)
				if attempt < len(c.eps.urls) && r.raw == nil {
					continue
				}
			}
			return nil, fmt.Errorf("sdk: %w", err)
		}
		if resp.StatusCode >= 400 {
			defer resp.Body.Close()
			return nil, decodeError(resp)
		}
		return resp, nil
	}
}

// do performs r and decodes a JSON response into out (when out is non-nil). It returns
// the response status.
func (c *Client) do(ctx context.Context, r request, out any) (int, error) {
	resp, err := c.send(ctx, r)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("sdk: failed to decode %s %s response: %w", r.method, resp.Request.URL.Path, err)
	}
	return resp.StatusCode, nil
}

// sbPath returns the path segments under one sandbox.
func sbPath(sb string, rest ...string) []string {
	return append([]string{"v1", "sandboxes", sb}, rest...)
}
