package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

func TestHeartbeatFrames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body []byte
	}{
		{"request", hbRequest{seq: 1 << 40, node: "node-a"}.encode()},
		{"response", hbResponse{seq: 3, verdict: verdictGranted, index: 99}.encode()},
		{"empty", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := writeFrame(&buf, tt.body); err != nil {
				t.Fatal(err)
			}
			got, err := readFrame(bufio.NewReader(&buf))
			if err != nil || !bytes.Equal(got, tt.body) {
				t.Fatalf("readFrame = %x, %v", got, err)
			}
		})
	}
	q, err := decodeRequest(hbRequest{seq: 9, node: "n"}.encode())
	if err != nil || q != (hbRequest{seq: 9, node: "n"}) {
		t.Fatalf("request round trip: %+v, %v", q, err)
	}
	r, err := decodeResponse(hbResponse{seq: 9, verdict: verdictRetry, index: 4}.encode())
	if err != nil || r != (hbResponse{seq: 9, verdict: verdictRetry, index: 4}) {
		t.Fatalf("response round trip: %+v, %v", r, err)
	}
	var big bytes.Buffer
	_ = writeFrame(&big, make([]byte, maxFrame+1))
	if _, err := readFrame(bufio.NewReader(&big)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("oversized frame: %v", err)
	}
}

func FuzzHeartbeatDecode(f *testing.F) {
	f.Add(hbRequest{seq: 1, node: "node-a"}.encode())
	f.Add(hbResponse{seq: 1, verdict: verdictGranted, index: 1 << 33}.encode())
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if q, err := decodeRequest(b); err == nil {
			if q2, err := decodeRequest(q.encode()); err != nil || q2 != q {
				t.Fatalf("request re-decode: %+v, %v", q2, err)
			}
		}
		if r, err := decodeResponse(b); err == nil {
			if r2, err := decodeResponse(r.encode()); err != nil || r2 != r {
				t.Fatalf("response re-decode: %+v, %v", r2, err)
			}
		}
		_, _ = readFrame(bufio.NewReader(bytes.NewReader(b)))
	})
}
