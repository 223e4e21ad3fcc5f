package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// firstName is the file in the WAL directory that holds the log's first index
// (8 bytes big-endian, then their CRC-32C), written when a head is deleted or an
// empty log takes its first entry.
const firstName = "first"

func writeFirst(dir string, first uint64) error {
	b := binary.BigEndian.AppendUint64(nil, first)
	if err := writeFileAtomic(dir, firstName, binary.LittleEndian.AppendUint32(b, crc32c(b))); err != nil {
		return fmt.Errorf("failed to record the raft log's first index: %w", err)
	}
	return nil
}

func readFirst(dir string) (uint64, error) {
	path := filepath.Join(dir, firstName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("failed to read the raft log's first index: %w", err)
	}
	if len(b) != 12 || crc32c(b[:8]) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, fmt.Errorf("%w: %s", ErrCorrupt, path)
	}
	return binary.BigEndian.Uint64(b), nil
}

// openWAL opens the WAL in dir, an existing directory, with segments of up to
// segSize bytes (0: the default). Recovery:
//
//  1. Every segment is read and its records checked: CRC, encoding, and each
//     record's index one past the one before, from the index the file's name gives.
//  2. The last segment may end in an append a crash cut short (tornTail): those
//     bytes are cut off, with a log line, and a last segment left with nothing is
//     removed. Any other bad record, in any segment, refuses the open with an error
//     naming the file and the offset: those are acknowledged entries.
//  3. Segments wholly below the recorded first index (a head deletion that a crash
//     interrupted) are removed; the rest must follow one another with no gap, the
//     first one starting at or below the first index.
func openWAL(dir string, log *slog.Logger, segSize int64) (_ *wal, err error) {
	if segSize <= 0 {
		segSize = defaultSegmentSize
	}
	w := &wal{dir: dir, log: log, segSize: segSize}
	defer func() {
		if err != nil {
			for _, s := range w.segs {
				s.f.Close()
			}
			err = fmt.Errorf("failed to open raft log %s: %w", dir, err)
		}
	}()
	if w.stableStore, err = openStable(dir); err != nil {
		return nil, err
	}
	if w.first, err = readFirst(dir); err != nil {
		return nil, err
	}
	bases, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	for i, base := range bases {
		s, err := w.recoverSegment(base, i == len(bases)-1)
		if err != nil {
			return nil, err
		}
		if s != nil {
			w.segs = append(w.segs, s)
		}
	}
	if err := w.dropBelowFirst(); err != nil {
		return nil, err
	}
	for i := 1; i < len(w.segs); i++ {
		if prev := w.segs[i-1]; w.segs[i].base != prev.last()+1 {
			return nil, fmt.Errorf("%w: gap in the raft log: %s ends at index %d, %s starts at %d",
				ErrCorrupt, prev.path, prev.last(), w.segs[i].path, w.segs[i].base)
		}
	}
	if len(w.segs) > 0 && w.first > 0 && w.segs[0].base > w.first {
		return nil, fmt.Errorf("%w: gap in the raft log: first index %d, but %s starts at %d",
			ErrCorrupt, w.first, w.segs[0].path, w.segs[0].base)
	}
	return w, nil
}

// listSegments returns the first indexes of the segment files of dir, in order,
// and removes temporary files a crash left.
func listSegments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to list raft log: %w", err)
	}
	var bases []uint64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			_ = os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		if base, ok := parseSegmentName(e.Name()); ok {
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// recoverSegment opens and checks one segment; it returns nil for a last segment
// left with no record.
func (w *wal) recoverSegment(base uint64, last bool) (*segment, error) {
	path := filepath.Join(w.dir, segmentName(base))
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read raft log segment: %w", err)
	}
	sc := scanSegment(b, base)
	if sc.bad != nil && !(last && sc.torn) {
		return nil, fmt.Errorf("%w: raft log segment %s at offset %d: %v", ErrCorrupt, path, sc.end, sc.bad)
	}
	if len(sc.offs) == 0 && !last {
		return nil, fmt.Errorf("%w: raft log segment %s holds no entry", ErrCorrupt, path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open raft log segment: %w", err)
	}
	s := &segment{base: base, path: path, f: f, offs: sc.offs, size: sc.end}
	if sc.bad != nil {
		w.log.Warn("cluster: dropped the torn tail of the raft log, an append a crash cut short",
			"file", path, "offset", sc.end, "bytes", int64(len(b))-sc.end, "reason", sc.bad)
		if err := f.Truncate(sc.end); err != nil {
			f.Close()
			return nil, fmt.Errorf("failed to truncate raft log segment: %w", err)
		}
		if err := datasync(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("failed to sync raft log segment: %w", err)
		}
	}
	if len(sc.offs) == 0 {
		if err := s.remove(); err != nil {
			return nil, err
		}
		return nil, syncDir(w.dir)
	}
	return s, nil
}

// dropBelowFirst removes the segments wholly below the first index.
func (w *wal) dropBelowFirst() error {
	k := 0
	for k < len(w.segs) && w.segs[k].last() < w.first {
		k++
	}
	if k == 0 {
		return nil
	}
	for _, s := range w.segs[:k] {
		if err := s.remove(); err != nil {
			return err
		}
	}
	w.segs = w.segs[k:]
	return syncDir(w.dir)
}
