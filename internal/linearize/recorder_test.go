package linearize

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// memLog is an in-memory event log guarded by a mutex: linearizable by construction.
// With stale set its reads miss the newest entry, as a lagging replica's would.
type memLog struct {
	mu    sync.Mutex
	evs   []Event
	stale bool
}

func (l *memLog) append(data string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := uint64(len(l.evs) + 1)
	l.evs = append(l.evs, Event{Seq: seq, Type: "agent.t", Data: data})
	return seq
}

func (l *memLog) read() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.evs
	if l.stale && len(evs) > 0 {
		evs = evs[:len(evs)-1]
	}
	return append([]Event(nil), evs...)
}

// hammerLog has workers append to and read log concurrently, recording everything.
func hammerLog(r *Recorder, log *memLog, workers, rounds int) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				data := fmt.Sprintf("w%d-%d", w, i)
				op := r.Call("events", app(data))
				op.Return(Appended{log.append(data)})
				op = r.Call("events", ReadLog{Limit: 1 << 20})
				op.Return(LogRead{Events: log.read()})
			}
		})
	}
	wg.Wait()
}

func TestRecorderConcurrent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		stale bool
	}{
		{"a linearizable log passes", false},
		{"a log with stale reads fails", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := NewRecorder(nil)
			hammerLog(r, &memLog{stale: tc.stale}, 4, 25)
			if r.Len() != 4*25*2 {
				t.Fatalf("recorded %d operations, want %d", r.Len(), 4*25*2)
			}
			err := r.Check(nil)
			if tc.stale != errors.Is(err, ErrNotLinearizable) || (!tc.stale && err != nil) {
				t.Fatalf("stale=%t: Check = %v", tc.stale, err)
			}
		})
	}
}

// manualClock is a clock a test moves by hand.
type manualClock struct{ now time.Duration }

func (c *manualClock) Now() time.Duration { return c.now }

func TestOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(r *Recorder, c *manualClock)
		want error // nil, or the error Check must match
	}{
		{"a discarded set is left out", func(r *Recorder, c *manualClock) {
			r.Call("x", SetVar{"a"}).Discard()
			c.now++
			r.Call("x", GetVar{}).Return(Got{""})
		}, nil},
		{"a set without an outcome may have happened", func(r *Recorder, c *manualClock) {
			r.Call("x", SetVar{"a"})
			c.now++
			r.Call("x", GetVar{}).Return(Got{"a"})
		}, nil},
		{"a read with an unknown outcome is left out", func(r *Recorder, c *manualClock) {
			r.Call("x", GetVar{}).Unknown()
		}, nil},
		{"the first outcome counts", func(r *Recorder, c *manualClock) {
			op := r.Call("x", SetVar{"a"})
			c.now++
			op.Return(nil)
			op.Discard()
			c.now++
			r.Call("x", GetVar{}).Return(Got{""})
		}, ErrNotLinearizable},
		{"objects are checked apart", func(r *Recorder, c *manualClock) {
			r.Call("x", SetVar{"a"}).Return(nil)
			c.now++
			r.Call("y", GetVar{}).Return(Got{""})
		}, nil},
		{"an object takes the inputs of one model", func(r *Recorder, c *manualClock) {
			r.Call("x", SetVar{"a"}).Return(nil)
			r.Call("x", Post{"a"}).Return(Posted{"msg_1"})
		}, ErrBadHistory},
		{"an output of the wrong type", func(r *Recorder, c *manualClock) {
			r.Call("x", GetVar{}).Return(Appended{1})
		}, ErrBadHistory},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &manualClock{}
			r := NewRecorder(&Config{Now: c.Now})
			tc.run(r, c)
			err := r.Check(nil)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Check = %v, want %v", err, tc.want)
			}
			var e *Error
			if err != nil && (!errors.As(err, &e) || e.Key != "x") {
				t.Fatalf("Check = %#v, want an *Error for object x", err)
			}
		})
	}
}

func TestVisualization(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := recorderOf("env/sb 1/X", []hop{
		{SetVar{"a"}, 0, 1, nil},
		{GetVar{}, 2, 3, Got{"b"}},
	})
	err := r.Check(&CheckOptions{VisualizeDir: dir})
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrNotLinearizable) {
		t.Fatalf("Check = %v", err)
	}
	if want := filepath.Join(dir, "env_sb_1_X.html"); e.Visualization != want {
		t.Fatalf("visualization at %q, want %q", e.Visualization, want)
	}
	if st, err := os.Stat(e.Visualization); err != nil || st.Size() == 0 {
		t.Fatalf("visualization file: %v", err)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	r := NewRecorder(nil)
	for _, k := range []string{"b", "a", "b"} {
		r.Call(k, GetVar{}).Return(Got{""})
	}
	if got := fmt.Sprint(r.Keys()); got != "[a b]" {
		t.Fatalf("Keys = %s", got)
	}
}
