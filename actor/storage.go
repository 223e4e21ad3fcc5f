package actor

import "context"

// Storage holds the durable state of a node's sandboxes: small per-sandbox records under
// byte keys. It is the seam for a raft-backed or remote store later (docs/design.md,
// "Fencing").
//
// Concurrency: all methods are safe for concurrent use. Many actors call Write at once;
// an implementation should commit concurrent writes together (group commit) so one sync
// serves many actors.
//
// Fencing: every Batch carries the writer's owner epoch. A store remembers the highest
// epoch it accepted per sandbox and rejects a batch with a lower one with ErrFenced,
// without applying any of it. Epochs survive DeleteSandbox.
//
// Unknown outcomes: after a Write of a sandbox that returned ErrIndeterminate, the
// store's next Read of that sandbox first waits until the outcome is decided, so it
// shows whether the batch was applied and no later Read contradicts it (a store that
// shows the batch missing never applies it afterwards). The actor does not retry such
// a batch: it drops its activation and reloads (unsettled.go). A caller that retries
// must send only batches that are safe to apply twice.
//
// Damage: a store that cannot read one sandbox's records (a damaged file) fails that
// sandbox's Read and Write with an error matching ErrCorrupt, skips it in Sandboxes,
// and goes on serving the others.
type Storage interface {
	// Read runs fn with a consistent view of one sandbox's records. The Reader and the
	// slices it returns are valid only until fn returns.
	Read(ctx context.Context, sandbox string, fn func(r Reader) error) error
	// Write applies b atomically and durably, or not at all. nil means b was applied;
	// an error matching ErrIndeterminate means it may or may not have been (when ctx
	// ends first, the error matches ctx.Err() too); any other error means it was not.
	Write(ctx context.Context, b *Batch) error
	// Sandboxes calls fn for every stored sandbox, in id order, with the value stored
	// under key (nil if none). The value is valid only during fn.
	Sandboxes(ctx context.Context, key []byte, fn func(id string, val []byte) error) error
	// Close releases the store. Calls after Close return ErrClosed.
	Close() error
}

// Reader reads one sandbox's records inside Storage.Read.
type Reader interface {
	// Get returns the value under key, or nil.
	Get(key []byte) []byte
	// Scan calls fn for keys that start with prefix and are >= from (from nil: all), in
	// ascending order, until fn returns false.
	Scan(prefix, from []byte, fn func(k, v []byte) bool)
	// Last returns the greatest key with prefix and its value, or nils.
	Last(prefix []byte) (k, v []byte)
}

// Batch is one atomic write to one sandbox's records.
type Batch struct {
	Sandbox string
	// Epoch is the writer's owner epoch; the store rejects it if older than the
	// newest it has accepted for Sandbox (ErrFenced).
	Epoch uint64
	// DeleteSandbox removes every record of Sandbox before Ops are applied.
	DeleteSandbox bool
	Ops           []Op
}

// Op is one put or delete in a Batch.
type Op struct {
	Key    []byte
	Value  []byte // ignored when Delete
	Delete bool
}

// Put appends a put of key=value.
func (b *Batch) Put(key, value []byte) { b.Ops = append(b.Ops, Op{Key: key, Value: value}) }

// Delete appends a delete of key.
func (b *Batch) Delete(key []byte) { b.Ops = append(b.Ops, Op{Key: key, Delete: true}) }

func (b *Batch) empty() bool { return b == nil || (!b.DeleteSandbox && len(b.Ops) == 0) }
