package cluster

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// The admission recorder: samplers call Admit on every node for a set of sandboxes
// and keep what each node admitted and when, on the package's monotonic clock, so a
// test can check that no two nodes ever admitted one sandbox at once.

// recorder samples Admit on nodes for sandboxes and keeps, per sandbox, the runs of
// consecutive admissions of each node: [before the first call, after the last],
// consecutive meaning no more than sampleSlack apart.
type recorder struct {
	mu   sync.Mutex
	runs map[string][]run
	seen map[NodeID]map[string]bool // per node, the sandboxes it admitted at least once
	errs map[NodeID][]refusal       // per node: refusals of its own sandboxes
	stop chan struct{}
	wg   sync.WaitGroup
	// stall is the longest gap the watchdog goroutine saw between two 5 ms ticks:
	// how long the whole process was starved (a loaded machine, a long GC).
	stall time.Duration
}

type refusal struct {
	at  time.Duration
	err error
}

type run struct {
	node     NodeID
	from, to time.Duration
}

// sampleSlack bounds an Admit call's window, and the gap between two samples of one
// run: past it the sampler was not running, and a run must not claim that time.
const sampleSlack = 2 * time.Millisecond

// record starts one sampler per node; each calls Admit for every sandbox about every
// half millisecond until stop.
func record(nodes []*Node, sandboxes []string) *recorder {
	r := &recorder{runs: map[string][]run{}, seen: map[NodeID]map[string]bool{}, errs: map[NodeID][]refusal{}, stop: make(chan struct{})}
	for _, nd := range nodes {
		r.seen[nd.ID()] = map[string]bool{}
	}
	for _, nd := range nodes {
		r.wg.Add(1)
		go r.sample(nd, sandboxes)
	}
	r.wg.Add(1)
	go r.watchdog()
	return r
}

func (r *recorder) watchdog() {
	defer r.wg.Done()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	last := mono()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		now := mono()
		r.mu.Lock()
		r.stall = max(r.stall, now-last)
		r.mu.Unlock()
		last = now
	}
}

func (r *recorder) sample(nd *Node, sandboxes []string) {
	defer r.wg.Done()
	open := map[string]*run{}
	flush := func(sb string) {
		if o := open[sb]; o != nil {
			r.mu.Lock()
			r.runs[sb] = append(r.runs[sb], *o)
			r.mu.Unlock()
			delete(open, sb)
		}
	}
	defer func() {
		for sb := range open {
			flush(sb)
		}
	}()
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		for _, sb := range sandboxes {
			before := mono()
			err := nd.Admit(sb)
			after := mono()
			if after-before > sampleSlack {
				// The sampler was descheduled around the call: the admission's
				// instant is somewhere in a long window, which proves nothing. It
				// ends the run, which must not span time it did not watch.
				flush(sb)
				continue
			}
			if err == nil {
				if o := open[sb]; o != nil && before-o.to <= sampleSlack {
					o.to = after
				} else {
					flush(sb)
					open[sb] = &run{node: nd.ID(), from: before, to: after}
					r.mu.Lock()
					r.seen[nd.ID()][sb] = true
					r.mu.Unlock()
				}
				continue
			}
			flush(sb)
			if !errors.Is(err, ErrNotOwner) {
				r.mu.Lock()
				r.errs[nd.ID()] = append(r.errs[nd.ID()], refusal{before, err})
				r.mu.Unlock()
			}
		}
		time.Sleep(500 * time.Microsecond) // pacing, not synchronisation
	}
}

// admitted reports whether each of sandboxes was admitted at least once by one of
// nodes.
func (r *recorder) admitted(sandboxes []string, nodes ...*Node) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sb := range sandboxes {
		seen := false
		for _, nd := range nodes {
			seen = seen || r.seen[nd.ID()][sb]
		}
		if !seen {
			return false
		}
	}
	return true
}

// finish stops the samplers and fails tb if two nodes' admission runs of one sandbox
// overlap, with the harness's history of that sandbox when h is not nil. It returns
// the runs.
func (r *recorder) finish(tb testing.TB, h *harness) map[string][]run {
	tb.Helper()
	close(r.stop)
	r.wg.Wait()
	for sb, runs := range r.runs {
		for i, a := range runs {
			for _, b := range runs[i+1:] {
				if a.node != b.node && a.from <= b.to && b.from <= a.to {
					hist := ""
					if h != nil {
						hist = h.history(sb)
					}
					tb.Errorf("sandbox %s admitted by two nodes at once: %s %v-%v and %s %v-%v%s",
						sb, a.node, a.from, a.to, b.node, b.from, b.to, hist)
				}
			}
		}
	}
	return r.runs
}

// refusals returns nd's refusals of its own sandboxes (any error but ErrNotOwner)
// between from and to.
func (r *recorder) refusals(nd *Node, from, to time.Duration) []refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []refusal
	for _, e := range r.errs[nd.ID()] {
		if e.at >= from && e.at <= to {
			out = append(out, e)
		}
	}
	return out
}
