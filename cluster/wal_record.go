package cluster

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/hashicorp/raft"
)

// A WAL record is one raft.Log framed for a segment file:
//
//	length  uint32, little-endian: the bytes of the payload
//	crc     uint32, little-endian: CRC-32C of the length bytes and the payload
//	payload the entry in encodeLog's encoding (index, term, type, data,
//	        extensions, appended-at), the same as the bbolt store's values
//
// The CRC covers the length, so a record whose length field was damaged fails its
// check instead of framing the bytes after it.
const recordHeader = 8

// maxRecord bounds one record's payload. A length above it is damage, never a
// record, so a scan does not try to allocate it.
const maxRecord = 1 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends l as one framed record to b.
func appendRecord(b []byte, l *raft.Log) []byte {
	start := len(b)
	b = appendLog(append(b, make([]byte, recordHeader)...), l)
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-recordHeader))
	binary.LittleEndian.PutUint32(b[start+4:], recordCRC(b[start:start+4], b[start+recordHeader:]))
	return b
}

func recordCRC(length, payload []byte) uint32 {
	return crc32.Update(crc32c(length), castagnoli, payload)
}

// readRecord decodes the record at the start of b into l and returns its size.
func readRecord(b []byte, l *raft.Log) (int, error) {
	if len(b) < recordHeader {
		return 0, fmt.Errorf("%w: %d bytes of a %d-byte header", errRecord, len(b), recordHeader)
	}
	n := binary.LittleEndian.Uint32(b)
	if n > maxRecord || uint64(len(b)-recordHeader) < uint64(n) {
		return 0, fmt.Errorf("%w: length %d, %d bytes left", errRecord, n, len(b)-recordHeader)
	}
	payload := b[recordHeader : recordHeader+int(n)]
	if recordCRC(b[:4], payload) != binary.LittleEndian.Uint32(b[4:]) {
		return 0, fmt.Errorf("%w: CRC mismatch", errRecord)
	}
	if err := decodeLog(payload, l); err != nil {
		return 0, fmt.Errorf("%w: %v", errRecord, err)
	}
	return recordHeader + int(n), nil
}

// scan is what scanSegment found in a segment's bytes.
type scan struct {
	offs []int64 // offset of each good record; record i holds index base+i
	end  int64   // the byte after the last good record
	bad  error   // why the bytes at end are not a record; nil when end is the size
	// torn reports that the bytes from end on look like an append a crash cut
	// short (see tornTail); only the last segment may end so.
	torn bool
}

// scanSegment reads the records of a segment whose name says its first index is
// base. It stops at the first record that is bad or out of sequence.
func scanSegment(b []byte, base uint64) scan {
	var s scan
	var l raft.Log
	for off := 0; off < len(b); {
		n, err := readRecord(b[off:], &l)
		if err == nil && l.Index != base+uint64(len(s.offs)) {
			// A good record out of sequence is never a torn append.
			s.end, s.bad = int64(off), fmt.Errorf("record of index %d where %d belongs", l.Index, base+uint64(len(s.offs)))
			return s
		}
		if err != nil {
			s.end, s.bad, s.torn = int64(off), err, tornTail(b[off:])
			return s
		}
		s.offs = append(s.offs, int64(off))
		off += n
	}
	s.end = int64(len(b))
	return s
}

// tornTail reports whether rest, bytes that do not start with a good record, can
// be the last append cut short by a crash: a header cut short, a record whose
// length runs to or past the end of the file, or zeros (pages the file system
// sized but never wrote). Anything else, a bad record with bytes after it, is
// damage to entries that were acknowledged.
func tornTail(rest []byte) bool {
	if len(rest) < recordHeader {
		return true
	}
	if uint64(binary.LittleEndian.Uint32(rest))+recordHeader >= uint64(len(rest)) {
		return true
	}
	for _, c := range rest {
		if c != 0 {
			return false
		}
	}
	return true
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
