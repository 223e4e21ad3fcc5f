package actor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// maxGroup is how many queued requests one commit covers. Turns in a group run one
// after another; their writes are committed together and only then are their answers
// released (the output gate).
const maxGroup = 64

// sbActor is one sandbox's activation: one goroutine (run) draining an ordered mailbox.
// Only the holder of turnMu touches the fields below "Actor state": that goroutine, or
// a caller that found the actor idle with nothing queued and runs its turn itself.
type sbActor struct {
	n  *Node
	id string
	mb chan *request // user requests, bounded

	mu      sync.Mutex // protects following
	closed  bool       // no more requests accepted; the registry entry is gone or going
	sys     []*request // system requests, unbounded
	queued  int        // requests queued or being served by the loop (see runInline)
	loaded  bool       // load is done: turns may run
	haltWhy haltState  // why the activation must end without writing (fence.go)

	resync bool // under Node.mu: another node's writes arrived while active (changed.go)

	// turnMu is held by whoever runs turns: the actor goroutine for a group, or a
	// caller running its request inline (runInline). Turns never overlap.
	turnMu sync.Mutex

	wake    chan struct{}                   // signalled when a request is queued (cap 1)
	stopped chan struct{}                   // closed once the activation is gone from the registry
	info    atomic.Pointer[SandboxInfo]     // published after each group, for ListSandboxes
	halted  atomic.Bool                     // Fence or Release asked it to end (fence.go)
	ending  atomic.Bool                     // it is ending and kills its work: see ended (fence.go)
	live    atomic.Pointer[runtime.Sandbox] // sb.rt, for Fence to kill from its own goroutine
	busy    atomic.Bool                     // it holds work that keeps it from passivating (busy.go)

	// Actor state, touched only by the actor goroutine.
	turnCtx    context.Context // the current user turn's ctx (background for system turns)
	rec        *sandboxRec     // nil: no such sandbox (absent)
	batch      *Batch          // writes of the current group
	afterHook  []func()        // run once the current group is durable
	dirty      bool            // info changed in this group
	exit       bool            // stop the loop after this group
	endGroup   bool            // commit after this turn: the rest of the group runs as the next one
	lastTurn   time.Time       // last turn of any kind (passivation)
	passTimer  Stopper         // pending passivation check
	alarmAt    time.Time       // scheduled alarm time (zero: none)
	savedAlarm time.Time       // alarm time in storage (see rearm: it may lag behind alarmAt)
	attached   int             // Attach holders
	inflight   int             // work running off the actor (exec, session commands)
	evSeq      uint64          // last event seq
	evFirst    uint64          // first event seq still stored (0: none)
	evBytes    int64           // bytes of the stored events' records (logbytes.go)
	evSizes    sizeRing        // their sizes, evFirst first
	msgSeq     uint64          // last message seq
	msgCount   int             // queued messages (the queue itself stays in storage)
	msgBytes   int64           // bytes of the queued messages' records
	msgDirty   msgOverlay      // message records written by the current group
	msgWake    chan struct{}   // closed when a message arrives; nil: nobody waits
	sb         sandboxWork     // runtime-backed state (processes, sessions, terminals)
	res        []result        // reused per group
	deactivate bool            // drop the activation after this group (Node.Deactivate)
	epoch      uint64          // Config.Epoch when activated: every write is stamped with it
}

func newActor(n *Node, id string) *sbActor {
	return &sbActor{n: n, id: id, mb: make(chan *request, n.cfg.MailboxSize), wake: make(chan struct{}, 1),
		stopped: make(chan struct{})}
}

func (a *sbActor) now() time.Time { return a.n.cfg.Clock.Now() }

// ctx is the context for blocking calls made inside the current turn.
func (a *sbActor) ctx() context.Context {
	if a.turnCtx != nil {
		return a.turnCtx
	}
	return context.Background()
}

func (a *sbActor) run() {
	defer a.n.wg.Done()
	loadErr := a.load()
	if errors.Is(loadErr, ErrCorrupt) {
		// The store logged the damage when it found it; every request answers it
		// without walking the damaged page again.
		a.stop(loadErr)
		return
	}
	if loadErr != nil {
		a.n.log.Error("actor: failed to activate", "sandbox", a.id, "err", loadErr)
		a.stop(fmt.Errorf("%w: failed to load sandbox %q: %v", ErrUnavailable, a.id, loadErr))
		return
	}
	a.dropStale()                         // a leftover of an earlier stay is not the sandbox's workspace
	if err := a.mountDisk(); err != nil { // before any turn; turns that need it retry
		a.n.log.Error("actor: failed to mount workspace image at activation", "sandbox", a.id, "err", err)
	}
	a.lastTurn = a.now()
	a.mu.Lock()
	a.loaded = true
	a.mu.Unlock()
	reqs := make([]*request, 0, maxGroup)
	for {
		select {
		case <-a.wake: // a request was queued, or an inline turn ended the activation
		case <-a.n.closing:
			a.turnMu.Lock()
			if !a.exit {
				a.shutdown()
			}
			a.turnMu.Unlock()
			return
		}
		// Requests are taken from the mailbox only once turnMu is held, so while an
		// inline turn runs they wait in the mailbox, in order.
		for {
			a.turnMu.Lock()
			if a.exit { // an inline turn passivated the sandbox
				a.turnMu.Unlock()
				return
			}
			reqs = a.takeSystem(reqs)
		fill:
			for len(reqs) < maxGroup {
				select {
				case r := <-a.mb:
					reqs = append(reqs, r)
				default:
					break fill
				}
			}
			if len(reqs) == 0 && !a.halted.Load() {
				a.turnMu.Unlock()
				break
			}
			a.group(reqs)
			a.mu.Lock()
			a.queued -= len(reqs)
			a.mu.Unlock()
			clear(reqs)
			reqs = reqs[:0]
			if a.deactivate && !a.exit {
				a.finishDeactivate()
			}
			if !a.exit {
				a.maybePassivate()
			}
			exit := a.exit
			a.turnMu.Unlock()
			if exit {
				return
			}
		}
	}
}

// runInline runs request r on the calling goroutine, as a group of its own, when
// the actor is idle: loaded, open, nothing queued or being served. That is the same
// order the mailbox would give, without waking the actor's goroutine and waiting for
// it, which costs tens of µs on a machine whose other core is idle. It reports false,
// having done nothing, when r must go through the mailbox.
func (a *sbActor) runInline(r *request) bool {
	if !a.turnMu.TryLock() {
		return false
	}
	a.mu.Lock()
	ok := a.loaded && !a.closed && a.queued == 0
	a.mu.Unlock()
	if !ok {
		a.turnMu.Unlock()
		return false
	}
	a.group([]*request{r})
	// Passivating writes and waits: leave it to the actor's goroutine rather than make
	// this caller pay for it. After a user turn it cannot be due yet (the turn made the
	// actor busy); after a completion it may be.
	mayPassivate := r.ctx == nil && a.now().Sub(a.lastTurn) >= a.n.cfg.PassivateAfter
	if !a.exit && !mayPassivate {
		a.maybePassivate() // at most arms the check
	}
	exit := a.exit
	a.turnMu.Unlock()
	switch {
	case exit: // dropped: let the actor's goroutine see it and return
		a.signal()
	case mayPassivate:
		a.postSystem(&request{fn: func(*sbActor) (any, error) { return nil, nil }})
	}
	return true
}

// group runs reqs as turns, commits their writes at once and then answers them. A
// turn that sets endGroup ends it early: the requests after it run as the next group,
// once its writes are durable and its after-commit steps ran.
func (a *sbActor) group(reqs []*request) {
	if !a.admitGroup(reqs) {
		return // the activation ended (fence.go); every request has its answer
	}
	res := a.res[:0]
	for range reqs {
		res = append(res, result{})
	}
	defer func() { clear(res); a.res = res[:0] }()
	userTurns := false
	defer func() {
		if userTurns {
			a.lastTurn = a.now() // only requests count for passivation: not timers or completions
		}
	}()
	var rest []*request // after a turn that ends the group: run as the next group
	for i, r := range reqs {
		if rest != nil {
			break
		}
		if r.ctx != nil { // user request
			if err := r.ctx.Err(); err != nil {
				res[i].err = err // the caller is gone; do not start its turn
				continue
			}
			if adm := a.n.cfg.Admission; adm != nil && i > 0 { // admitGroup asked for the first
				if err := adm(a.id); err != nil {
					res[i].err = fmt.Errorf("%w: %w", ErrUnavailable, err)
					continue
				}
			}
			a.turnCtx = r.ctx
		}
		var panicked bool
		res[i].v, res[i].err, panicked = a.turn(r.fn)
		if r.ctx != nil {
			a.turnCtx = nil
			userTurns = true
		}
		if panicked {
			// State may be half-changed: nothing of this group is saved.
			err := fmt.Errorf("%w: internal error in sandbox %q", ErrUnavailable, a.id)
			for j := range res {
				res[j] = result{err: err}
			}
			a.batch, a.afterHook = nil, nil
			a.crash(err)
			a.answer(reqs, res)
			return
		}
		if a.endGroup {
			a.endGroup = false
			rest = reqs[i+1:]
		}
	}
	if a.halted.Load() { // Fence or Release during the turns: nothing of them is saved
		a.haltStop(reqs, true)
		return
	}
	if err := a.commit(); err != nil {
		for i := range res {
			res[i] = result{err: err}
		}
		a.crash(err)
		a.answer(reqs, res)
		return
	}
	a.busy.Store(a.rec != nil && !a.canPassivate()) // before the answers: a caller sees its effect
	ran := len(reqs) - len(rest)
	a.answer(reqs[:ran], res[:ran])
	if a.dirty {
		a.publishInfo()
		a.dirty = false
	}
	if len(rest) > 0 {
		// Failures above answer the whole group, rest included, as before the split.
		a.group(rest)
	}
}

// turn runs fn, turning a panic into an error so one bad request cannot take the
// node down; the caller then drops the activation.
func (a *sbActor) turn(fn turnFunc) (v any, err error, panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			a.n.log.Error("actor: turn panicked", "sandbox", a.id, "panic", p)
			panicked = true
		}
	}()
	v, err = fn(a)
	return v, err, false
}

func (a *sbActor) answer(reqs []*request, res []result) {
	for i, r := range reqs {
		if r.done != nil {
			r.done <- res[i]
		}
	}
}

// write returns the current group's batch.
func (a *sbActor) write() *Batch {
	if a.batch == nil {
		a.batch = &Batch{Sandbox: a.id}
	}
	return a.batch
}

// afterCommit runs f once the current group's writes are durable.
func (a *sbActor) afterCommit(f func()) { a.afterHook = append(a.afterHook, f) }

func (a *sbActor) commit() error {
	b := a.batch
	a.batch = nil
	if a.halted.Load() && !b.empty() { // fenced or released: passivation or Close must not write either
		a.afterHook = nil
		return fmt.Errorf("%w: sandbox %q was fenced on this node", ErrUnavailable, a.id)
	}
	if !b.empty() {
		b.Epoch = a.epoch // each group checked first that it is still the current one
		// Not the caller's ctx: a write the state already reflects must finish.
		if err := a.n.store.Write(context.Background(), b); err != nil {
			// Memory is now ahead of storage, or unknown against it (ErrIndeterminate):
			// nothing of this group may be answered or kept (unsettled.go).
			a.afterHook = nil
			a.n.unsettle(a)
			if errors.Is(err, ErrFenced) {
				return fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			return fmt.Errorf("%w: failed to save sandbox %q: %w", ErrUnavailable, a.id, err)
		}
	}
	hooks := a.afterHook
	a.afterHook = nil
	for _, f := range hooks {
		f()
	}
	return nil
}

// crash drops the activation after a failed commit or a panic: memory no longer
// matches storage (or, after an unknown outcome, nobody here knows whether it does),
// so the next request activates afresh from durable state (unsettled.go).
// It leaves the registry before the failed group is answered, so a caller retrying
// at once meets a fresh activation; queued user requests are handed to that one too.
func (a *sbActor) crash(err error) {
	a.n.log.Error("actor: dropping activation", "sandbox", a.id, "err", err)
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	var queued []*request
	for len(a.mb) > 0 {
		queued = append(queued, <-a.mb)
	}
	a.stop(err)
	for _, r := range queued {
		a.n.resend(a.id, r)
	}
}

// stop closes the mailbox, fails whatever is still queued with err, ends the
// sandbox's running work and leaves the registry.
func (a *sbActor) stop(err error) {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	if a.sb.mount != nil {
		a.n.disks.leaving(a.id, a.sb.mount) // a new activation waits for the unmount below
	}
	a.n.forget(a)
	a.ending.Store(true)
	select {
	case <-a.stopped:
	default:
		close(a.stopped)
	}
	a.exit = true
	a.busy.Store(false)
	if a.passTimer != nil {
		a.passTimer.Stop()
	}
	a.endWork(false)
	a.unmountDisk() // after the runtime closed: nothing of the sandbox holds it
	if a.msgWake != nil {
		close(a.msgWake)
		a.msgWake = nil
	}
	for {
		select {
		case r := <-a.mb:
			r.done <- result{err: err}
			continue
		default:
		}
		break
	}
	for _, r := range a.takeSystem(nil) {
		if r.done != nil {
			r.done <- result{err: err}
		}
	}
}

// shutdown is stop on Node.Close: work is ended with its exits recorded and flushed.
func (a *sbActor) shutdown() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.ending.Store(true) // before endWork: what it kills did not end by itself
	if a.rec != nil && a.mayWrite() == nil {
		a.endWork(true)
		a.pruneExited()
		a.rec.LastActiveAt = a.lastActive()
		a.saveRec()
		if err := a.commit(); err != nil {
			a.n.log.Error("actor: failed to flush on close", "sandbox", a.id, "err", err)
		}
	}
	a.stop(fmt.Errorf("%w: node closing", ErrUnavailable)) // ends what is left, unrecorded
}

// maybePassivate drops the activation when it has been idle for PassivateAfter (or at
// once when the sandbox does not exist) and nothing keeps it: no running processes, no
// attached clients, no work in flight, nothing queued. Otherwise it arms a check.
func (a *sbActor) maybePassivate() {
	if a.exit {
		return
	}
	wait := a.n.cfg.PassivateAfter
	if a.rec != nil {
		idle := a.now().Sub(a.lastTurn)
		if idle < wait || !a.canPassivate() {
			if a.passTimer == nil {
				if a.canPassivate() {
					wait -= idle
				}
				// The timer's turn only clears passTimer: the check itself runs between
				// groups (in run), never in the middle of one.
				a.passTimer = a.n.cfg.Clock.AfterFunc(wait, func() {
					a.postSelf(func(a *sbActor) (any, error) { a.passTimer = nil; return nil, nil })
				})
			}
			return
		}
	}
	a.mu.Lock()
	if len(a.mb) > 0 || len(a.sys) > 0 {
		a.mu.Unlock()
		return // the loop comes back here after serving them
	}
	a.closed = true
	a.mu.Unlock()
	if a.rec != nil && a.mayWrite() == nil { // else it leaves unsaved: it may not write (fence.go)
		a.endWork(false) // sessions are remembered; nothing is running
		a.pruneExited()
		a.rec.LastActiveAt = a.lastActive()
		a.saveRec()
		if err := a.commit(); err != nil {
			a.n.log.Error("actor: failed to save on passivation", "sandbox", a.id, "err", err)
		}
	}
	a.stop(errStopped) // nothing is queued: closed was set with both queues empty
}

func (a *sbActor) canPassivate() bool {
	return a.attached == 0 && a.inflight == 0 && !a.sb.busy()
}

// lastActive is the last time the sandbox did work, for idle TTL and LastActiveAt.
func (a *sbActor) lastActive() time.Time {
	if a.rec == nil {
		return time.Time{}
	}
	return a.rec.LastActiveAt
}

// touch records activity for idle TTL. It is kept in memory and saved on passivation,
// hibernation and close.
func (a *sbActor) touch() {
	if a.rec != nil {
		a.rec.LastActiveAt = a.now()
		a.dirty = true
	}
}

func (a *sbActor) saveRec() { a.write().Put(keyMeta, mustJSON(a.rec)) }
