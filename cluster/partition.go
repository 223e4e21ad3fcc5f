package cluster

// Partitions is the fixed number of partitions. A sandbox's partition is a hash of its
// id; it never changes, so the number cannot either.
const Partitions = 4096

// PartitionOf returns the partition of a sandbox id: 64-bit FNV-1a of the id, mod
// Partitions. It is inlined by hand so that Owner allocates nothing.
func PartitionOf(sandboxID string) int {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(sandboxID); i++ {
		h ^= uint64(sandboxID[i])
		h *= prime
	}
	return int(h % Partitions)
}
