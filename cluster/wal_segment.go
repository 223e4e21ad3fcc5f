package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"
)

// segmentExt ends the name of a segment file; the name before it is the segment's
// first index, zero-padded to 20 digits so that names sort in index order.
const segmentExt = ".wal"

// segment is one file of the log: records of consecutive indexes from base on.
// Its fields change only under wal.wmu, and are published under wal.mu.
type segment struct {
	base uint64
	path string
	f    *os.File
	offs []int64 // offset of each record: the record of index base+i starts at offs[i]
	size int64   // bytes of whole records; the next append writes here
}

func segmentName(base uint64) string { return fmt.Sprintf("%020d%s", base, segmentExt) }

// parseSegmentName returns the first index a segment file's name gives.
func parseSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, segmentExt)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseUint(digits, 10, 64)
	return base, err == nil
}

// last returns the index of the segment's last record; the segment is not empty.
func (s *segment) last() uint64 { return s.base + uint64(len(s.offs)) - 1 }

// span returns where the record of index i starts and ends in the file.
func (s *segment) span(i uint64) (int64, int64) {
	k := i - s.base
	end := s.size
	if k+1 < uint64(len(s.offs)) {
		end = s.offs[k+1]
	}
	return s.offs[k], end
}

// read reads the record of index i, which the segment holds, into l.
func (s *segment) read(i uint64, l *raft.Log) error {
	off, end := s.span(i)
	b := make([]byte, end-off)
	if _, err := s.f.ReadAt(b, off); err != nil {
		return fmt.Errorf("failed to read raft log entry %d from %s: %w", i, s.path, err)
	}
	if _, err := readRecord(b, l); err != nil {
		return fmt.Errorf("%w: raft log entry %d in %s at offset %d: %v", ErrCorrupt, i, s.path, off, err)
	}
	return nil
}

// createSegment creates the empty file of a segment starting at base and syncs the
// directory, so that the name survives a crash once the first append is synced.
func createSegment(dir string, base uint64) (*segment, error) {
	path := filepath.Join(dir, segmentName(base))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to create raft log segment: %w", err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return &segment{base: base, path: path, f: f}, nil
}

// remove closes and deletes the segment's file. The caller syncs the directory.
func (s *segment) remove() error {
	s.f.Close()
	if err := os.Remove(s.path); err != nil {
		return fmt.Errorf("failed to remove raft log segment: %w", err)
	}
	return nil
}

// syncDir fsyncs a directory, making the creation, removal or rename of its
// entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("failed to sync directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("failed to sync directory: %w", err)
	}
	return nil
}
