package actor

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkBoltRead measures one Storage.Read of a sandbox among 1,000: a Get, a
// short Scan and a Last, as an activation's load does. It is the read hot path that
// the panic containment in bolt_damage.go wraps.
func BenchmarkBoltRead(b *testing.B) {
	s := openTestBolt(b)
	ctx := context.Background()
	for i := range 1000 {
		bt := &Batch{Sandbox: fmt.Sprintf("sb%04d", i)}
		bt.Put([]byte("m"), []byte(`{"id":"x"}`))
		for j := range 8 {
			bt.Put(fmt.Appendf(nil, "e%02d", j), []byte("event"))
		}
		must(b, s.Write(ctx, bt))
	}
	b.ResetTimer()
	for i := range b.N {
		err := s.Read(ctx, fmt.Sprintf("sb%04d", i%1000), func(r Reader) error {
			if r.Get([]byte("m")) == nil {
				return fmt.Errorf("no meta")
			}
			n := 0
			r.Scan([]byte("e"), nil, func(k, v []byte) bool { n++; return true })
			if k, _ := r.Last([]byte("e")); n != 8 || k == nil {
				return fmt.Errorf("scan %d", n)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
