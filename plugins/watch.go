package plugins

import (
	"context"
	"crypto/sha256"
	"os"
	"time"
)

// watch polls Config.Path every PollInterval and reloads when its content changed. It
// runs on the goroutine New starts and Close stops. A cheap stat comes first; the file
// is read and hashed only when size or mtime moved, and loaded only when the hash
// differs from the module in service, so touching a file costs a hash, not a reload.
// A file that fails to load is not retried until it changes again.
func (h *Host) watch(ctx context.Context) {
	t := time.NewTicker(h.cfg.PollInterval)
	defer t.Stop()
	var lastSize int64
	var lastMod time.Time
	var lastHash [32]byte
	if g := h.cur.Load(); g != nil {
		lastHash = g.hash
	}
	// No stat baseline: the file may have changed between New's load and this
	// goroutine's start, so the first tick reads and hashes it once.
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fi, err := os.Stat(h.cfg.Path)
		if err != nil || (fi.Size() == lastSize && fi.ModTime().Equal(lastMod)) {
			continue
		}
		bin, err := os.ReadFile(h.cfg.Path)
		if err != nil {
			continue
		}
		lastSize, lastMod = fi.Size(), fi.ModTime()
		hash := sha256.Sum256(bin)
		if hash == lastHash {
			continue
		}
		lastHash = hash
		if g := h.cur.Load(); g != nil && g.hash == hash {
			continue
		}
		_ = h.load(ctx, bin, hash) // logged and counted by load
	}
}
