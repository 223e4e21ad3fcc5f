package actor

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// How BoltStore contains a damaged file.
//
// bbolt keeps no checksums on its B+tree pages: it trusts what it reads, and it panics
// when a page is not what it should be ("invalid page type", "Page expected to be: 12,
// but self identifies as ..."), or faults when a damaged page points outside the file.
// Left alone, one bad page takes down the whole node, on every restart, for every
// tenant. So every walk of one sandbox's records (Read, the committer's transactions,
// the scan in Sandboxes, the check at open) runs with panic-on-fault set and a recover,
// and a panic becomes a *CorruptError for that sandbox alone:
//
//  1. Only panics on the sandbox's own pages count: a lookup reads only the page where
//     its key belongs, and a step past the end of a range (a scan's, a delete's) onto
//     a damaged page that holds only later keys is the end of the range
//     (bolt_pages.go).
//  2. The sandbox is remembered as damaged (damageSet) until the store is reopened, and
//     its Reads and Writes fail at once, without walking the bad page again; Node
//     does not even activate it.
//  3. A group commit that panics is rolled back by bbolt and retried one batch at a
//     time; only the batch that panics alone fails (see commitPending). A commit that
//     merges a nearly empty page with a damaged neighbour fails its batch too: bbolt
//     offers no way round that page.
//  4. Sandboxes skips damaged sandboxes: their records, labels and tenant included,
//     cannot be read, so no list can show them to anyone.
//  5. OpenBolt walks every sandbox's records once, so the damage is logged and counted
//     at start, not found by the first unlucky request. A file bbolt cannot open at
//     all (both meta pages, the free list) is an error naming the file and what to do.
//  6. A damaged page of the sandbox index (which only lists sandboxes) ends Sandboxes
//     with an error after the sandboxes before it: Node.Open serves on, lists fail.
//     Every write puts its sandbox in the index, so a sandbox listed on that page
//     fails its next write and is then known damaged like the others.
//
// The recovers cost a deferred call per Read, per cursor step and per transaction. On
// the loaded 2-core VM, 20 interleaved runs each of BenchmarkBoltRead (a Get, an 8-key
// Scan and a Last: 12 cursor steps) before and after, the new binary first, gave
// medians of 2.34 and 2.40 µs, first quartiles 2.16 and 2.29, best 2.02 and 2.18: about
// 0.1 µs (3-8%) per Read, and no more allocations. BenchmarkGroupCommit: 1,000 writes
// in 10-23 ms before, 6-17 ms after (fsync-bound). The walk at open
// (BenchmarkOpenCheck) takes 12-28 ms per 10,000 sandboxes, about 1-2x the alarm scan
// Node.Open makes anyway.
//
// Pages that are damaged but still look valid cannot be told apart from good ones:
// bbolt reads what is there.

// Damage is one part of a BoltStore's file that could not be read.
type Damage struct {
	// Sandbox is the sandbox whose records could not be read, or "" for the sandbox
	// index (then sandboxes listed after the damaged page are not known).
	Sandbox string
	// Detail is what bbolt reported, usually naming the page.
	Detail string
}

// damageSet remembers what could not be read. Its methods are safe for concurrent use;
// get is on every Read and Write, so it takes no lock while nothing is damaged.
type damageSet struct {
	path string
	log  *slog.Logger

	n  atomic.Int32 // len(list)
	mu sync.Mutex   // protects following
	m  map[string]*CorruptError
	// list is every damage found, in the order found.
	list []Damage
}

// get returns the *CorruptError of a sandbox known to be damaged, or nil.
func (d *damageSet) get(sandbox string) error {
	if d.n.Load() == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[sandbox]; e != nil {
		return e
	}
	return nil
}

// mark records that sandbox's records (or, for "", the index) could not be read, logs
// it the first time, and returns the error its callers get from now on.
func (d *damageSet) mark(sandbox, detail string) *CorruptError {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[sandbox]; e != nil {
		return e
	}
	if d.m == nil {
		d.m = map[string]*CorruptError{}
	}
	e := &CorruptError{Sandbox: sandbox, Detail: detail}
	d.m[sandbox] = e
	d.list = append(d.list, Damage{Sandbox: sandbox, Detail: detail})
	d.n.Store(int32(len(d.list)))
	what := "sandbox records"
	if sandbox == "" {
		what = "sandbox index (sandboxes after the damaged page are not listed)"
	}
	d.log.Error("actor: storage damaged: could not read "+what+"; serving the rest",
		"file", d.path, "sandbox", sandbox, "detail", detail,
		"fix", "restore the file from a backup and restart; until then the sandbox is unavailable")
	return e
}

// Damaged returns what the store could not read so far: found by the check at open or
// by a later read or write, in the order found. It is safe for concurrent use.
func (s *BoltStore) Damaged() []Damage {
	s.damage.mu.Lock()
	defer s.damage.mu.Unlock()
	return slices.Clone(s.damage.list)
}

// damageReporter is the optional capability of a Storage that knows which sandboxes'
// records it could not read (BoltStore); Node.Stats reports it.
type damageReporter interface {
	Damaged() []Damage
}

// damageKnower is the optional capability of a Storage that remembers which sandboxes'
// records it could not read (BoltStore): Node activates none of them.
type damageKnower interface {
	// damaged returns the error a known damaged sandbox's Read and Write return, or nil.
	damaged(sandbox string) error
}

var (
	_ damageReporter = (*BoltStore)(nil)
	_ damageKnower   = (*BoltStore)(nil)
)

func (s *BoltStore) damaged(sandbox string) error { return s.damage.get(sandbox) }

// panicDetail describes a recovered panic for a Damage.
func panicDetail(p any) string {
	if isFault(p) {
		return fmt.Sprintf("bbolt: memory fault reading the mapped file: %v", p)
	}
	if err, ok := p.(error); ok {
		return "bbolt: " + err.Error()
	}
	return fmt.Sprintf("bbolt: %v", p)
}

// isFault reports whether p is a memory fault turned into a panic by panic-on-fault:
// a damaged page that points outside the mapped file.
func isFault(p any) bool {
	_, ok := p.(interface{ Addr() uintptr })
	return ok
}

// update runs fn in a write transaction and turns a panic into damaged (bbolt rolls the
// transaction back as the panic passes). Every panic counts: fn is applyBatch, whose
// only way to panic is a page bbolt cannot read.
func (s *BoltStore) update(fn func(tx *bolt.Tx) error) (damaged string, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			damaged, err = panicDetail(p), nil
		}
	}()
	return "", s.db.Update(fn)
}

// getContained is b.Get(key) with a panic turned into damaged.
func getContained(b *bolt.Bucket, key []byte) (v []byte, damaged string) {
	defer func() {
		if p := recover(); p != nil {
			v, damaged = nil, panicDetail(p)
		}
	}()
	return b.Get(key), ""
}

// openContained is bolt.Open with a panic (a damaged free list panics as it is loaded)
// turned into damaged. The file bbolt opened is then closed here, which releases its
// lock: bbolt gives no handle to close after a panic.
func openContained(path string) (db *bolt.DB, damaged string, err error) {
	var f *os.File
	opts := &bolt.Options{Timeout: 5 * time.Second, OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
		var err error
		f, err = os.OpenFile(name, flag, mode)
		return f, err
	}}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if f != nil {
				_ = f.Close()
			}
			db, damaged, err = nil, panicDetail(p), nil
		}
	}()
	db, err = bolt.Open(path, 0o600, opts)
	if errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrChecksum) || errors.Is(err, bolterrors.ErrVersionMismatch) {
		return nil, "bbolt: " + err.Error(), nil
	}
	return db, "", err
}

// unopenable is the error for a storage file too damaged to open. Nothing is discarded
// or rewritten: the operator decides.
func unopenable(path, detail string) error {
	fix := "restore it from a backup, or move it aside to start with empty storage (its sandboxes are then lost)"
	if strings.Contains(detail, "freelist") {
		fix = "its free list alone can be rebuilt with `bbolt surgery freelist abandon " + path + " --output NEW` " +
			"(go.etcd.io/bbolt/cmd/bbolt), then NEW moved in its place; or " + fix
	}
	return &unopenableError{msg: fmt.Sprintf("actor: failed to open storage %s: %s; the file is damaged where every "+
		"sandbox depends on it (meta pages, free list or bucket roots): %s", path, detail, fix)}
}

// unopenableError is a storage file too damaged to open. It matches ErrCorrupt.
type unopenableError struct{ msg string }

func (e *unopenableError) Error() string { return e.msg }

func (e *unopenableError) Is(target error) bool { return target == ErrCorrupt }

// span is the key range a cursor step reads: the keys with prefix p, or (exact) the
// key p alone; none (p nil) when unknown. Its end is computed only after a panic, so
// that the steps allocate nothing.
type span struct {
	p     []byte
	exact bool
}

// end is the smallest key past the span, or nil if unknown.
func (sp span) end() []byte {
	if sp.p == nil {
		return nil
	}
	if sp.exact {
		return append(bytes.Clone(sp.p), 0)
	}
	return prefixEnd(sp.p)
}

// catch is deferred by the boltReader's cursor steps: a panic there means a page of
// this sandbox's records is damaged, unless the step was one past the span it reads
// onto a page that holds only later keys. Then the step returns nils, as at the end
// of the span. Otherwise the reader answers nothing more, and Read returns the damage.
func (r *boltReader) catch(sp span) {
	if p := recover(); p != nil {
		if end := sp.end(); end != nil && pastEnd(r.c.Bucket(), p, end) {
			return
		}
		r.broken = panicDetail(p)
	}
}

// The cursor steps of a boltReader, each contained. A method each, not one taking a
// method value, which would allocate on every step.

func (r *boltReader) seekIn(key []byte, sp span) (k, v []byte) {
	if r.broken != "" {
		return nil, nil
	}
	defer r.catch(sp)
	return r.c.Seek(key)
}

func (r *boltReader) nextIn(sp span) (k, v []byte) {
	if r.broken != "" {
		return nil, nil
	}
	defer r.catch(sp)
	return r.c.Next()
}

func (r *boltReader) first() (k, v []byte) {
	if r.broken != "" {
		return nil, nil
	}
	defer r.catch(span{})
	return r.c.First()
}

func (r *boltReader) prev() (k, v []byte) {
	if r.broken != "" {
		return nil, nil
	}
	defer r.catch(span{})
	return r.c.Prev()
}

func (r *boltReader) last() (k, v []byte) {
	if r.broken != "" {
		return nil, nil
	}
	defer r.catch(span{})
	return r.c.Last()
}

// seekWithin is c.Seek(p) for a walk of the keys with prefix p inside a write
// transaction. A panic on a page past them (see pastEnd) is the end of the walk; any
// other goes on up and fails the transaction. Seek only reads, so the transaction is
// unchanged by the panic.
func seekWithin(c *bolt.Cursor, p []byte) (k []byte) {
	defer func() {
		if r := recover(); r != nil {
			if end := prefixEnd(p); end == nil || !pastEnd(c.Bucket(), r, end) {
				panic(r)
			}
			k = nil
		}
	}()
	k, _ = c.Seek(p)
	return k
}

// checkAll walks every indexed sandbox's epoch and records once, at open, and marks
// those it cannot read. It returns how many sandboxes it walked.
func (s *BoltStore) checkAll() int {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	walked := 0
	_ = s.db.View(func(tx *bolt.Tx) error {
		data, epochs := tx.Bucket(bucketData), tx.Bucket(bucketEpochs)
		ids := &boltReader{c: tx.Bucket(bucketIndex).Cursor()}
		for id, _ := ids.first(); id != nil; id, _ = ids.nextIn(span{}) {
			walked++
			if detail := walkSandbox(data, epochs, id); detail != "" {
				s.damage.mark(string(id), detail)
			}
		}
		if ids.broken != "" {
			s.damage.mark("", ids.broken)
		}
		return nil
	})
	return walked
}

// walkSandbox reads every record of one sandbox and reports what panicked, or "".
func walkSandbox(data, epochs *bolt.Bucket, id []byte) (detail string) {
	defer func() {
		if p := recover(); p != nil {
			detail = panicDetail(p)
		}
	}()
	epochs.Get(id)
	r := &boltReader{c: data.Cursor(), pfx: dataKey(string(id), nil)}
	r.Scan(nil, nil, func(_, _ []byte) bool { return true })
	return r.broken
}
