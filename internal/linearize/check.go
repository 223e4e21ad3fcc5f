package linearize

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// DefaultCheckTimeout bounds the check of one object when CheckOptions.Timeout is 0.
const DefaultCheckTimeout = 30 * time.Second

// CheckOptions tunes Recorder.Check.
type CheckOptions struct {
	// Timeout bounds the check of each object; 0 means DefaultCheckTimeout. An
	// object whose check runs out of time fails with ErrCheckTimeout.
	Timeout time.Duration
	// VisualizeDir, when set, is where porcupine's HTML rendering of each failing
	// object's history is written, one file per object.
	VisualizeDir string
}

// Input is an operation's input. Its type chooses the model the object is checked
// against: Append and ReadLog (event log), SetVar and GetVar (register), Post, Take
// and Ack (message queue).
type Input interface {
	// model names the model the input belongs to.
	model() modelKind
	// outputOK reports whether out is of the output type of this input.
	outputOK(out any) bool
	// read reports whether the operation changes nothing, so an unknown outcome
	// says nothing and is left out.
	read() bool
}

// modelKind is one of the models.
type modelKind uint8

const (
	kindLog modelKind = iota + 1
	kindRegister
	kindQueue
)

func (k modelKind) String() string {
	switch k {
	case kindLog:
		return "event log"
	case kindRegister:
		return "register"
	case kindQueue:
		return "message queue"
	}
	return "unknown"
}

// build returns the porcupine model of k for one object's history.
func (k modelKind) build(ops []porcupine.Operation) porcupine.Model {
	switch k {
	case kindLog:
		return logModel(ops)
	case kindRegister:
		return registerModel()
	default:
		return queueModel()
	}
}

// Check checks the history of every recorded object and returns nil when each is
// linearizable, or the errors.Join of an *Error per object that is not (or could not
// be decided within the timeout, or is malformed). opts nil means the defaults. It
// may be called again after more operations were recorded.
func (r *Recorder) Check(opts *CheckOptions) error {
	o := CheckOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultCheckTimeout
	}
	var errs []error
	for key, recs := range r.histories() {
		if err := checkObject(key, recs, o); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkObject checks one object's history.
func checkObject(key string, recs []record, o CheckOptions) error {
	kind, ops, err := operations(recs)
	if err != nil {
		return &Error{Key: key, Ops: len(recs), Err: err}
	}
	if len(ops) == 0 {
		return nil
	}
	model := kind.build(ops)
	switch porcupine.CheckOperationsTimeout(model, ops, o.Timeout) {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return &Error{Key: key, Ops: len(ops), Err: fmt.Errorf("%w after %v (%s)", ErrCheckTimeout, o.Timeout, kind)}
	}
	e := &Error{Key: key, Ops: len(ops), Err: fmt.Errorf("%w (%s)", ErrNotLinearizable, kind)}
	if o.VisualizeDir != "" {
		_, info := porcupine.CheckOperationsVerbose(model, ops, o.Timeout)
		path := filepath.Join(o.VisualizeDir, fileName(key)+".html")
		if err := porcupine.VisualizePath(model, info, path); err == nil {
			e.Visualization = path
		}
	}
	return e
}

// operations turns an object's records into porcupine operations, leaving out
// discarded operations and reads with an unknown outcome.
func operations(recs []record) (modelKind, []porcupine.Operation, error) {
	kind := recs[0].in.model()
	ops := make([]porcupine.Operation, 0, len(recs))
	for _, rec := range recs {
		if k := rec.in.model(); k != kind {
			return 0, nil, fmt.Errorf("%w: %T (%s) on an object of the %s model", ErrBadHistory, rec.in, k, kind)
		}
		switch {
		case rec.st == opDiscarded, rec.st == opUnknown && rec.in.read():
			continue
		case rec.st == opReturned && !rec.in.outputOK(rec.out):
			return 0, nil, fmt.Errorf("%w: %T returned %T", ErrBadHistory, rec.in, rec.out)
		}
		ops = append(ops, porcupine.Operation{
			Input:  callIn{at: rec.call, in: rec.in},
			Call:   rec.call,
			Output: retOut{at: rec.ret, out: rec.out, unknown: rec.st == opUnknown},
			Return: rec.ret,
		})
	}
	assignLanes(ops)
	return kind, ops, nil
}

// assignLanes gives each operation the lowest client lane free at its call, so that
// porcupine's visualization draws overlapping operations on separate rows (the
// checker itself ignores ClientId). ops are in call order.
func assignLanes(ops []porcupine.Operation) {
	var ends []int64 // per lane, the return time of its last operation
	for i := range ops {
		lane := -1
		for l, end := range ends {
			if end < ops[i].Call {
				lane = l
				break
			}
		}
		if lane < 0 {
			lane = len(ends)
			ends = append(ends, 0)
		}
		ends[lane] = ops[i].Return
		ops[i].ClientId = lane
	}
}

// fileName makes a key safe as a file name.
func fileName(key string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, key)
}

// describe is the DescribeOperation of every model.
func describe(input, output any) string {
	return fmt.Sprintf("%v -> %v", input, output)
}

// stampOf returns an operation's call time and the caller's input.
func stampOf(input any) (int64, Input) {
	c := input.(callIn)
	return c.at, c.in
}
