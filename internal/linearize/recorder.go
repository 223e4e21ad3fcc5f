package linearize

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
)

// Config configures a Recorder. The zero value is ready to use.
type Config struct {
	// Now is the clock that stamps calls and returns: a monotonic duration that never
	// decreases. Nil means the time since NewRecorder, read from the monotonic clock.
	Now func() time.Duration
}

// Recorder records operations on any number of objects. All its methods and those of
// its Ops are safe for concurrent use: the clients of a test call them from their own
// goroutines, and the one clock orders their stamps.
type Recorder struct {
	now func() time.Duration

	mu  sync.Mutex
	ops []*Op // in call order
}

// NewRecorder returns an empty Recorder; cfg nil means the defaults.
func NewRecorder(cfg *Config) *Recorder {
	r := &Recorder{}
	if cfg != nil && cfg.Now != nil {
		r.now = cfg.Now
	} else {
		start := time.Now()
		r.now = func() time.Duration { return time.Since(start) }
	}
	return r
}

// opState is where an operation stands.
type opState uint8

const (
	opPending opState = iota
	opReturned
	opUnknown
	opDiscarded
)

// Op is one recorded operation, from its call to its outcome. Exactly one of Return,
// Unknown and Discard records the outcome; later calls are ignored. An Op without an
// outcome when Check runs counts as Unknown.
type Op struct {
	r     *Recorder
	key   string
	in    Input
	call  int64
	ret   int64
	out   any
	state opState
}

// unknownReturn is the return time of an operation with an unknown outcome: it may
// take effect at any time after its call.
const unknownReturn = math.MaxInt64

// Call records the start of an operation with input in on the object key and returns
// it. The call is stamped when Call runs, so call it just before sending the request.
func (r *Recorder) Call(key string, in Input) *Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	op := &Op{r: r, key: key, in: in, call: int64(r.now())}
	r.ops = append(r.ops, op)
	return op
}

// Return records the operation's result: out must be the output type its input
// documents (Appended for Append, and so on), or Check reports ErrBadHistory. Call it
// as soon as the response is in, before anything else the client does.
func (o *Op) Return(out any) { o.finish(opReturned, out) }

// Unknown records that the operation's outcome cannot be known: it may have taken
// effect, at any time after its call, or not at all.
func (o *Op) Unknown() { o.finish(opUnknown, nil) }

// Discard records that the operation surely had no effect, so it is left out of the
// history: a request the server refused before doing anything, or a read that failed.
func (o *Op) Discard() { o.finish(opDiscarded, nil) }

func (o *Op) finish(st opState, out any) {
	r := o.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if o.state != opPending {
		return
	}
	o.state, o.out = st, out
	o.ret = int64(r.now())
	if st == opUnknown {
		o.ret = unknownReturn
	}
}

// Len returns how many operations have been recorded, all objects together.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Keys returns the recorded objects' keys, sorted.
func (r *Recorder) Keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var keys []string
	for _, op := range r.ops {
		if !seen[op.key] {
			seen[op.key] = true
			keys = append(keys, op.key)
		}
	}
	sort.Strings(keys)
	return keys
}

// record is an operation's snapshot taken for a check.
type record struct {
	in   Input
	call int64
	ret  int64
	out  any
	st   opState
}

// histories snapshots the operations by object, in call order.
func (r *Recorder) histories() map[string][]record {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := map[string][]record{}
	for _, op := range r.ops {
		rec := record{in: op.in, call: op.call, ret: op.ret, out: op.out, st: op.state}
		if rec.st == opPending {
			rec.st, rec.ret = opUnknown, unknownReturn
		}
		h[op.key] = append(h[op.key], rec)
	}
	return h
}

// callIn is a porcupine operation's input: the caller's input and its call time.
type callIn struct {
	at int64
	in Input
}

// retOut is a porcupine operation's output: the caller's output (nil when unknown)
// and its return time.
type retOut struct {
	at      int64
	out     any
	unknown bool
}

func (c callIn) String() string { return fmt.Sprintf("%+v", c.in) }

func (o retOut) String() string {
	if o.unknown {
		return "?"
	}
	return fmt.Sprintf("%+v", o.out)
}
