package runtime

// bulkMin is the shortest input worth the bulk check: below it the table loop of scan
// wins.
const bulkMin = 64

// textBlock is the size of the bulk check's blocks.
const textBlock = 32

// bulkText is the fast path of scan, for a p that starts at a unit boundary. Where
// the CPU has AVX2, textBlocks checks p in blocks of 32 bytes at once (Keiser and
// Lemire's validation: a few table lookups and compares per block, no branch per
// byte) and counts the units of the blocks it proved valid as 32, less their
// continuation bytes, plus one per 4-byte lead. It stops before the first block that
// is not valid UTF-8 or that completes nothing the block before began.
//
// bulkText returns the proven prefix: n bytes, ending at a unit boundary (the
// sequence the last proven block leaves incomplete is backed out of it), and its
// units; and checked, the offset after the block it stopped at. The caller decodes
// from n with the table loop, and tries bulkText again only past checked, so that
// output full of invalid bytes costs one block's check per 32 bytes, not more.
//
// Without AVX2 it returns (0, 0, len(p)).
func bulkText(p []byte) (n int, units int64, checked int) {
	if !hasTextBlocks || len(p) < bulkMin {
		return 0, 0, len(p)
	}
	units, k := textBlocks(p)
	checked = k
	if k < len(p)&^(textBlock-1) {
		checked = k + textBlock // the block with an error
	}
	// The proven prefix is valid UTF-8 but for a sequence its end may cut, begun by a
	// lead or by a byte that cannot lead one (C0, C1, F5-FF: only the byte after it
	// tells it apart): back out of it. Such a byte counted 1 unit, 2 from F0 on;
	// continuation bytes 0.
	for back := 1; back <= utf8Cont && back <= k; back++ {
		c := p[k-back]
		if isContinuation(c) {
			continue
		}
		if size := int(leads[c] & 7); c >= 0xC0 && (size == 0 || size > back) {
			if c >= 0xF0 {
				units--
			}
			return k - back, units - 1, checked
		}
		break
	}
	return k, units, checked
}
