package gateway

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkForwardExec times POST /exec of `true` sent to the sandbox's owner and
// sent to another node, which forwards it, in alternating rounds of the same run (3
// nodes on loopback). Target: forwarded p50 ≤ direct p50 + 0.3 ms.
func BenchmarkForwardExec(b *testing.B) {
	tr := newTrio(b, nil)
	owner, other := tr.node("a"), tr.node("b")
	sb := tr.ownedBy("bench", "a")
	owner.sandbox(sb)
	path, body := "/v1/sandboxes/"+sb+"/exec", `{"argv":["true"]}`
	direct := newKeepAliveClient(b, strings.TrimPrefix(owner.url, "http://"), "POST", path, testToken, body)
	forwarded := newKeepAliveClient(b, strings.TrimPrefix(other.url, "http://"), "POST", path, testToken, body)
	ways := []func() error{direct.do, forwarded.do}
	for _, w := range ways { // warm both paths (the forwarder's connection to a)
		if err := w(); err != nil {
			b.Fatal(err)
		}
	}
	const rounds = 400
	took := interleave(b, rounds, ways)
	d, f := p50(took[0]), p50(took[1])
	b.ReportMetric(float64(d)/1e3, "direct-p50-µs")
	b.ReportMetric(float64(f)/1e3, "forwarded-p50-µs")
	b.ReportMetric(float64(f-d)/1e3, "added-p50-µs")
}

// BenchmarkForwardPTYToWebSocket reads 64 MiB of PTY output over a WebSocket attached
// to the owner and over one attached to another node, which tunnels it, three times
// each, alternating. Target: forwarded ≥ 0.8× direct.
func BenchmarkForwardPTYToWebSocket(b *testing.B) {
	tr := newTrio(b, nil)
	tr.pin("bench", "a") // wsPTYRead's sandbox; a pin stays where it is put
	direct, other := tr.node("a"), tr.node("b")
	direct.sandbox("bench")
	const cmd = "head -c 67108864 /dev/zero"
	var dN, fN int64
	var dD, fD time.Duration
	for i := 0; i < 3; i++ {
		n, _, d := wsPTYRead(b, direct, cmd)
		dN, dD = dN+n, dD+d
		n, _, d = wsPTYRead(b, other, cmd)
		fN, fD = fN+n, fD+d
	}
	dr, fr := float64(dN)/dD.Seconds()/(1<<20), float64(fN)/fD.Seconds()/(1<<20)
	b.ReportMetric(dr, "direct-MiB/s")
	b.ReportMetric(fr, "forwarded-MiB/s")
	b.ReportMetric(fr/dr, "throughput-ratio")
}
