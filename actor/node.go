package actor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sandgate/sandgate/runtime"
)

// Node is the actor system of one gateway node: it activates at most one actor per
// sandbox id, routes requests into their mailboxes, passivates idle actors, runs the
// node-wide alarm heap and owns the storage.
//
// Concurrency: all methods are safe for concurrent use. Every request for a sandbox is
// a turn run on that sandbox's actor goroutine, in mailbox order.
type Node struct {
	cfg       Config
	store     Storage
	ownsStore bool
	log       *slog.Logger
	alarms    *alarms
	hub       hub
	seqBase   seqBase  // counters a new sandbox starts after (seqbase.go)
	owners    *owners  // sandbox id → tenant, loaded at Open
	runIdx    runIndex // sandboxes that may hold running records (running.go)
	disks     diskImages

	changes *changeQueue // sandboxes other nodes wrote, to re-index (changed.go)

	mu         sync.Mutex // protects following
	actors     map[string]*sbActor
	closed     bool
	closing    chan struct{}
	syncing    map[string]bool     // ids whose indexes are being re-read → an activation started meanwhile
	haltedRuns map[string]struct{} // halted with processes running: their exits are owner_lost (moved.go)
	imported   map[string]struct{} // workspaces that arrived whole from their old owner (workspace_move.go)
	importing  map[string]int      // workspaces being imported: not to be dropped (workspace_stale.go)
	unsettled  map[string]struct{} // a commit failed: the next activation re-indexes from storage (unsettled.go)
	// dropFault, nil but in tests, is asked before the files of a deleted sandbox are
	// removed and makes the removal fail with its error, as a crash there would.
	dropFault func(id string) error

	wg        sync.WaitGroup // actor goroutines and watchers
	closeOnce sync.Once
	closeErr  error

	activations   atomic.Int64 // actors started, for tests and metrics
	exitedDropped atomic.Int64 // exited records dropped past Config.ExitedLimit (exited.go)
}

// Open starts a node on cfg: it opens storage (unless given), creates the workspace
// root, loads every persisted alarm into the timer heap and indexes every sandbox's
// owner tenant (see SandboxTenant). Actors are activated lazily, on their first request
// or alarm, except those that had processes running when the node last stopped without
// ending them: they are activated at once to record those exits (running.go). A
// damaged storage file is served but for the sandboxes whose records cannot be read
// (see BoltStore); one that cannot be opened at all is an error matching ErrCorrupt.
func Open(ctx context.Context, cfg *Config) (*Node, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"workspaces", "deleting"} {
		if err := os.MkdirAll(filepath.Join(c.DataDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("actor: failed to create data dir: %w", err)
		}
	}
	n := &Node{cfg: c, store: c.Storage, log: c.Logger, actors: map[string]*sbActor{}, closing: make(chan struct{}),
		changes: newChangeQueue(), syncing: map[string]bool{}, haltedRuns: map[string]struct{}{},
		imported: map[string]struct{}{}, importing: map[string]int{}, unsettled: map[string]struct{}{}}
	if n.store == nil {
		s, err := openBolt(filepath.Join(c.DataDir, "actors.db"), c.Logger)
		if err != nil {
			return nil, err
		}
		n.store, n.ownsStore = s, true
	}
	n.hub.subs = map[string]map[*EventSubscription]struct{}{}
	n.owners = newOwners(c.MaxSandboxesPerTenant)
	n.alarms = newAlarms(c.Clock, n.fireAlarm)
	if err := n.loadIndexes(ctx); err != nil {
		n.alarms.close()
		if n.ownsStore {
			_ = n.store.Close()
		}
		return nil, err
	}
	n.sweep()             // end what a crash of this node left running
	n.openDisks()         // then unmount the workspace images it left mounted
	n.sweepMoves()        // and remove the workspace imports it left unfinished
	n.sweepDeleted(ctx)   // and the files of sandboxes whose delete it did not finish
	n.recoverRunning(ctx) // then record those processes as exited
	n.wg.Add(1)
	go n.runChanges()
	return n, nil
}

// sweep ends the processes that a previous run of this node (same NodeID) left in its
// cgroups, a crash or kill -9 of the server, and logs which sandboxes had some. A
// failure is logged: the node still works, the leftovers stay.
func (n *Node) sweep() {
	how, err := runtime.Containment()
	if err != nil {
		n.log.Warn("actor: process trees are not contained by cgroups; setsid descendants can outlive their tree and budgets' memory, pids and CPU limits are not enforced",
			"containment", how, "why", err)
	} else {
		n.log.Info("actor: process trees contained", "containment", how)
	}
	ids, err := runtime.Sweep(n.cfg.NodeID)
	if err != nil {
		n.log.Error("actor: failed to end processes left by a previous run", "err", err)
	}
	if len(ids) > 0 {
		n.log.Warn("actor: ended processes left by a previous run", "sandboxes", ids)
	}
}

// Close stops the node: new requests fail with ErrUnavailable, every active actor ends
// its processes (recording process.exited events), remembers its sessions and
// terminals, flushes its state and stops; then storage is closed (if the node opened
// it). It waits for all of that or ctx. Calling Close again returns the first result.
func (n *Node) Close(ctx context.Context) error {
	n.closeOnce.Do(func() {
		n.mu.Lock()
		n.closed = true
		close(n.closing)
		n.mu.Unlock()
		n.alarms.close()
		n.hub.closeAll()
		done := make(chan struct{})
		go func() { n.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			n.closeErr = fmt.Errorf("actor: failed to close node: %w", ctx.Err())
			return // storage stays open: actors may still write
		}
		if err := n.runIdx.flush(n.store); err != nil {
			n.log.Error("actor: failed to drop run index entries", "err", err)
		}
		if n.ownsStore {
			if err := n.store.Close(); err != nil {
				n.closeErr = fmt.Errorf("actor: failed to close storage: %w", err)
			}
		}
	})
	return n.closeErr
}

// actorFor returns the live activation for id, starting one if there is none. The
// registry lock makes concurrent first requests share one activation. A sandbox that
// Config.Admission refuses is not activated: the refusal is returned, wrapped in
// ErrUnavailable (an activation could do nothing but end again; see fence.go).
func (n *Node) actorFor(id string) (*sbActor, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, fmt.Errorf("%w: node closing", ErrUnavailable)
	}
	if a := n.actors[id]; a != nil {
		return a, nil
	}
	if adm := n.cfg.Admission; adm != nil {
		n.mu.Unlock() // not held across the caller's hook
		err := adm(id)
		n.mu.Lock()
		if n.closed {
			return nil, fmt.Errorf("%w: node closing", ErrUnavailable)
		}
		if a := n.actors[id]; a != nil {
			return a, nil // started meanwhile: its turns check admission themselves
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	if d, ok := n.store.(damageKnower); ok {
		if err := d.damaged(id); err != nil {
			return nil, err // known unreadable: no activation that would fail at once
		}
	}
	if _, ok := n.syncing[id]; ok {
		n.syncing[id] = true // its indexes are being read: that read may predate this activation
	}
	a := newActor(n, id)
	n.actors[id] = a
	n.activations.Add(1)
	n.wg.Add(1)
	go a.run()
	return a, nil
}

// forget removes a from the registry if it is still the registered activation.
func (n *Node) forget(a *sbActor) {
	n.mu.Lock()
	if n.actors[a.id] == a {
		delete(n.actors, a.id)
		if a.resync {
			n.changes.add(a.id) // other nodes wrote it while it was active here
		}
	}
	n.mu.Unlock()
}

// active returns the live activation for id without starting one.
func (n *Node) active(id string) *sbActor {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.actors[id]
}

// IsActive reports whether sandbox id is active (in memory) on this node; it starts
// nothing. (Extension.)
func (n *Node) IsActive(id string) bool { return n.active(id) != nil }

// ActiveActors returns how many sandbox actors are in memory. (Extension, for metrics.)
func (n *Node) ActiveActors() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.actors)
}

// ActiveSandboxes returns the ids of the sandboxes active (in memory) on this node, in
// id order: for a caller that must release those the cluster moved away (Release).
// (Extension.)
func (n *Node) ActiveSandboxes() []string {
	n.mu.Lock()
	ids := slices.Collect(maps.Keys(n.actors))
	n.mu.Unlock()
	slices.Sort(ids)
	return ids
}

func (n *Node) workspaceDir(id string) string { return filepath.Join(n.cfg.DataDir, "workspaces", id) }

func (n *Node) epoch(id string) uint64 {
	if n.cfg.Epoch == nil {
		return 0
	}
	return n.cfg.Epoch(id)
}

var errStopped = errors.New("actor: activation stopped")

// loadIndexes fills what a node keeps in memory of every stored sandbox: the alarm
// heap and the owner index. A damaged sandbox index (ErrCorrupt, logged by the store)
// is not fatal: the sandboxes it could list are loaded, the others wake and are found
// on their next request once the file is restored.
func (n *Node) loadIndexes(ctx context.Context) error {
	err := n.store.Sandboxes(ctx, keyAlarm, func(id string, v []byte) error {
		if at, ok := decodeAlarm(v); ok {
			n.alarms.set(id, at)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("actor: failed to load alarms: %w", err)
	}
	names := map[string]string{} // one copy of each tenant name, however many sandboxes
	err = n.store.Sandboxes(ctx, keyMeta, func(id string, v []byte) error {
		if v == nil {
			return nil
		}
		t := recordTenant(v)
		if name, ok := names[t]; ok {
			t = name
		} else {
			names[t] = t
		}
		n.owners.load(id, t)
		return nil
	})
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("actor: failed to index sandbox owners: %w", err)
	}
	// A sandbox whose records cannot be read has an owner nobody can tell: it is
	// indexed as unknown, so its requests reach it and answer that it is unavailable.
	if d, ok := n.store.(damageReporter); ok {
		for _, dmg := range d.Damaged() {
			if dmg.Sandbox != "" {
				n.owners.load(dmg.Sandbox, "")
			}
		}
	}
	return nil
}
