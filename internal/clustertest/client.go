package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// maxBody bounds a response body Do reads.
const maxBody = 16 << 20

// Response is an API answer read whole by Node.Do.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the response headers (Retry-After, say).
	Header http.Header
	// Body is the whole body, up to 16 MiB.
	Body []byte
}

// JSON decodes the body into v when the status is want, and otherwise returns an
// error naming the status and the body.
func (r *Response) JSON(want int, v any) error {
	if r.Status != want {
		return fmt.Errorf("status %d, want %d: %s", r.Status, want, r.Body)
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("failed to decode %s: %w", r.Body, err)
	}
	return nil
}

// Do sends an API request to n with the cluster's token and reads the answer whole.
// body nil sends none; a []byte or string is sent as it is; anything else as JSON.
// The error is a transport error (connection refused, ctx done): any HTTP status is a
// Response. Each request has a connection of its own, so an error wrapping
// syscall.ECONNREFUSED means the request reached no server.
func (n *Node) Do(ctx context.Context, method, path string, body any) (*Response, error) {
	resp, err := n.Open(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("failed to read %s %s from %s: %w", method, path, n.ID, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// Open sends an API request to n with the cluster's token and returns the response
// with its body unread, for streams (SSE); the caller closes the body. body is as
// for Do.
func (n *Node) Open(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = bytes.NewReader([]byte(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("failed to encode the body of %s %s: %w", method, path, err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.URL()+path, r)
	if err != nil {
		return nil, fmt.Errorf("failed to make %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+n.c.Token)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := n.c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to send %s %s to %s: %w", method, path, n.ID, err)
	}
	return resp, nil
}
