package main

import "bytes"

// A byte-by-byte search would take one loop iteration, so about 30 ns under the host's
// deadline, per byte of the command line, and bytes.Contains per entry a few calls and
// one iteration per four bytes. find instead looks at eight bytes per iteration for the
// first byte of any entry, with table lookups and no branches, and searches for the
// entries only in the rare eight-byte blocks that have one.

// first[c] is 1 when an entry of denied starts with byte c.
var first [256]byte

// index fills first for list.
func index(list []string) {
	first = [256]byte{}
	for _, e := range list {
		first[e[0]] = 1
	}
}

// pad is the room find may read past the command line.
const pad = 7

// join appends args to dst separated by spaces, then pad zero bytes, and returns the
// result and the length of the joined command line.
func join(dst []byte, args []string) ([]byte, int) {
	for _, a := range args {
		dst = append(dst, a...)
		dst = append(dst, ' ')
	}
	n := len(dst) - 1 // without the last space
	return append(dst[:n], make([]byte, pad)...), n
}

// find returns the first entry of denied that b[:n] contains, as bytes.Contains over
// the list would, but looks for their first bytes before searching; b has pad more
// bytes after n.
func find(b []byte, n int) (string, bool) {
	for i := 0; i < n; i += 8 {
		w := (*[8]byte)(b[i : i+8])
		if first[w[0]]|first[w[1]]|first[w[2]]|first[w[3]]|first[w[4]]|first[w[5]]|first[w[6]]|first[w[7]] == 0 {
			continue
		}
		// An entry may start here: search for each in turn, so the first listed wins.
		for _, e := range denied {
			if bytes.Contains(b[:n], []byte(e)) {
				return e, true
			}
		}
		break
	}
	return "", false
}
