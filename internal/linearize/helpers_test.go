package linearize

import (
	"errors"
	"sort"
	"testing"
	"time"
)

// ms is a time of a hand-built history, in milliseconds of the recorder's clock.
const ms = int64(time.Millisecond)

// unk marks an operation of a hand-built history whose outcome is unknown.
const unk = -1

// hop is one operation of a hand-built history: times in ms; ret unk for an unknown
// outcome.
type hop struct {
	in        Input
	call, ret int64
	out       any
}

// historyCase is a hand-built history of one object and whether it is linearizable.
type historyCase struct {
	name string
	ops  []hop
	ok   bool
}

// recorderOf builds a Recorder holding ops on the object key.
func recorderOf(key string, ops []hop) *Recorder {
	r := NewRecorder(nil)
	sorted := append([]hop(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].call < sorted[j].call })
	for _, h := range sorted {
		op := &Op{r: r, key: key, in: h.in, call: h.call * ms, ret: h.ret * ms, out: h.out, state: opReturned}
		if h.ret == unk {
			op.state, op.ret, op.out = opUnknown, unknownReturn, nil
		}
		r.ops = append(r.ops, op)
	}
	return r
}

// runHistories checks each case and fails t when the verdict is not the expected one.
func runHistories(t *testing.T, key string, cases []historyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := recorderOf(key, tc.ops).Check(&CheckOptions{Timeout: time.Minute})
			switch {
			case tc.ok && err != nil:
				t.Fatalf("want linearizable, got %v", err)
			case !tc.ok && !errors.Is(err, ErrNotLinearizable):
				t.Fatalf("want ErrNotLinearizable, got %v", err)
			}
		})
	}
}
