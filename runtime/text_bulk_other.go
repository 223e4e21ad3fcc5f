//go:build !amd64 || purego

package runtime

// hasTextBlocks says whether textBlocks runs here: not without AVX2.
const hasTextBlocks = false

func textBlocks([]byte) (units int64, n int) { return 0, 0 }
