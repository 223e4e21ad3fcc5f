//go:build amd64 && !purego

package runtime

import "golang.org/x/sys/cpu"

// hasTextBlocks says whether textBlocks runs here: it needs AVX2 (POPCNT comes with it).
var hasTextBlocks = cpu.X86.HasAVX2 && cpu.X86.HasPOPCNT

// textBlocksAVX2 is textBlocks in AVX2 (text_bulk_amd64.s).
//
//go:noescape
func textBlocksAVX2(p []byte) (units int64, n int)

func textBlocks(p []byte) (units int64, n int) { return textBlocksAVX2(p) }
