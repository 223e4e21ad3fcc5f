package cluster

import (
	"sync"
	"sync/atomic"
	"time"
)

// Write-behind. The FSM judges a run of batch entries (verdicts and tables, which
// depend only on the log) and answers raft at once; the run's records go to the
// state file on the file's own writer goroutine, which takes every run queued
// since its last transaction into the next one. The leader's commit therefore
// does not wait for its file, and under load one transaction carries many
// entries, so the file's cost (the pages a transaction dirties and writes, its
// free-list work) is paid per write, not per entry.
//
// The file lags the log only while nothing but batch entries follow: before any
// other command, before the test hook beforeBatches, before a run that changes
// the tables (a pin marked written or dropped), and before Snapshot and Restore,
// the FSM waits until the writer has written everything queued (drain). So no
// table and no snapshot is ever ahead of the file, and an ownership change (always
// a command of its own) finds every earlier record in the file. Readers that need
// their own writes do not wait for the file: an owner reads through its overlay,
// which keeps each acknowledged batch until the file's applied index passes it,
// and Node.sync waits for that index.
//
// A failed write (disk full, I/O error) stops the replica as before (Node.Err):
// the runs after it are dropped and every later entry is refused. Runs that raft
// was already told were applied stay committed in the log, which is the durable
// copy; only this replica lacks them.
//
// The queue is bounded (maxWriteLag bytes of keys and values): past it the FSM
// waits for the writer, so a slow disk slows the FSM instead of growing memory.

// maxWriteLag bounds the keys and values queued for the writer.
const maxWriteLag = 16 << 20

// writeLinger is how long the writer waits after a run is queued for more, unless
// lingerBytes are queued or someone waits for the file (drain, Node.sync). A
// follower's replica already lags its leader by up to CommitTimeout (50 ms), and
// owners read their own writes through the overlay, so the lag it adds is not
// seen by an owner; in return one transaction takes many entries under load. A
// transaction rewrites every leaf it touches, about one per sandbox written, so
// its cost falls per batch as it grows: BenchmarkStateFileWrite measured 23 µs of
// CPU per batch at one 20-batch group per transaction and 7-9 µs at sixteen, and
// BenchmarkStoreWrite (64 writers, 3 nodes) 0.75-0.85x the CPU per batch with 30
// ms (about 200 batches per write) against 10 ms (about 80).
const (
	writeLinger = 30 * time.Millisecond
	lingerBytes = 1 << 20
)

// writeBehind is the state file's queue of judged runs and its writer goroutine.
//
// Concurrency: queue and drain are called on raft's FSM goroutine (drain also by
// close); the writer goroutine is the only one that writes the file meanwhile.
type writeBehind struct {
	mu     sync.Mutex
	queue  []runEntry
	bytes  int   // keys and values in queue and in the write under way
	left   int   // entries in queue and in the write under way
	err    error // the first failed write; sticky
	idle   chan struct{}
	kick   chan struct{} // buffered 1: something is queued
	urge   chan struct{} // buffered 1: write without lingering
	stop   chan struct{}
	done   chan struct{}
	closed bool
	// waiters counts the callers of waitApplied.
	waiters atomic.Int32
	// writes counts the writer's transactions (BenchmarkStoreWrite reports them).
	writes atomic.Uint64
	// written, if set, is called on the writer goroutine after each write, with
	// the sandboxes it changed (possibly repeated) or the error.
	written func(changed []string, err error)
}

// start starts s's writer goroutine; close stops it.
func (s *stateDB) start() {
	w := &s.wb
	w.kick, w.urge = make(chan struct{}, 1), make(chan struct{}, 1)
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go s.writeLoop()
}

// queueRun queues a judged run for the writer, waiting first while the queue is
// full. It returns the error of an earlier failed write, with nothing queued.
func (s *stateDB) queueRun(es []runEntry) error {
	size := runBytes(es)
	w := &s.wb
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return w.err
	}
	w.queue = append(w.queue, es...)
	w.left += len(es)
	w.bytes += size
	full, big := w.bytes > maxWriteLag, w.bytes >= lingerBytes
	w.mu.Unlock()
	signal(w.kick)
	if big {
		signal(w.urge)
	}
	if full {
		return s.drain()
	}
	return nil
}

// signal wakes the goroutine waiting on ch, a channel buffered 1, if it is not
// woken already.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// urgeWrite makes the writer write what is queued without lingering (someone
// waits for the file).
func (s *stateDB) urgeWrite() { signal(s.wb.urge) }

// drain waits until the writer has written every queued run, and returns the
// error of a failed write, if any.
func (s *stateDB) drain() error {
	w := &s.wb
	w.mu.Lock()
	if w.left > 0 {
		signal(w.urge)
	}
	for w.left > 0 {
		if w.idle == nil {
			w.idle = make(chan struct{})
		}
		idle := w.idle
		w.mu.Unlock()
		<-idle
		w.mu.Lock()
	}
	err := w.err
	w.mu.Unlock()
	return err
}

// writeLoop is the writer goroutine: each round writes everything queued in one
// transaction.
func (s *stateDB) writeLoop() {
	w := &s.wb
	defer close(w.done)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		select {
		case <-w.kick:
		case <-w.stop:
			return
		}
		select { // linger, so that one transaction takes more runs
		case <-w.urge:
		default:
			if w.waiters.Load() > 0 {
				break
			}
			linger.Reset(writeLinger)
			select {
			case <-linger.C:
			case <-w.urge:
				linger.Stop()
			case <-w.stop:
				return
			}
		}
		w.mu.Lock()
		es := w.queue
		w.queue = nil
		w.mu.Unlock()
		if len(es) == 0 {
			continue
		}
		changed, err := s.applyRun(es)
		w.writes.Add(1)
		if w.written != nil {
			w.written(changed, err)
		}
		w.mu.Lock()
		w.left -= len(es)
		w.bytes -= runBytes(es)
		if err != nil && w.err == nil {
			w.err = err
			w.left -= len(w.queue) // dropped: the replica has stopped
			w.bytes -= runBytes(w.queue)
			w.queue = nil
		}
		if w.left == 0 {
			if w.idle != nil {
				close(w.idle)
				w.idle = nil
			}
		}
		w.mu.Unlock()
	}
}

// runBytes returns the bytes of keys and values in es.
func runBytes(es []runEntry) int {
	n := 0
	for _, e := range es {
		for _, b := range e.bs {
			for _, op := range b.Ops {
				n += len(op.Key) + len(op.Value)
			}
		}
	}
	return n
}

// stopWriter drains the queue and ends the writer goroutine; a second call does
// nothing.
func (s *stateDB) stopWriter() error {
	w := &s.wb
	err := s.drain()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	return err
}
