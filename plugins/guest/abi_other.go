//go:build !wasip1

package guest

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// Log writes msg to standard error; in Wasm it goes to the gateway's log.
func Log(level Level, msg string) { fmt.Fprintf(os.Stderr, "plugin level=%d %s\n", level, msg) }

// Now returns time.Now truncated to milliseconds; in Wasm it is the host's clock.
func Now() time.Time { return time.UnixMilli(time.Now().UnixMilli()) }

var counters struct {
	sync.Mutex
	m map[string][2]int64 // key → window start ms, value
}

// CounterAdd adds delta to counter key in the current fixed window and returns its new
// value; natively it keeps the counters in this process, in Wasm on the host.
func CounterAdd(key string, delta int64, window time.Duration) int64 {
	counters.Lock()
	defer counters.Unlock()
	if counters.m == nil {
		counters.m = make(map[string][2]int64)
	}
	w := window.Milliseconds()
	if w <= 0 {
		w = 1
	}
	start := time.Now().UnixMilli() / w * w
	c := counters.m[key]
	if c[0] != start {
		c = [2]int64{start, 0}
	}
	c[1] += delta
	counters.m[key] = c
	return c[1]
}
