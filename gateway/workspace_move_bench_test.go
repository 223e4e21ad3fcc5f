package gateway

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runtime"
)

// mixedTree writes about total bytes of mixed files under dir: a quarter in one
// large file, a fifth in 2 MiB files, a quarter in 128 KiB files and the rest in
// 1-8 KiB files spread over nested directories, with a symlink per directory.
func mixedTree(tb testing.TB, dir string, total int64) {
	tb.Helper()
	buf := make([]byte, 4<<20)
	_, _ = rand.Read(buf)
	write := func(p string, n int64) {
		f, err := os.Create(p)
		if err != nil {
			tb.Fatal(err)
		}
		for n > 0 {
			k := min(n, int64(len(buf)))
			if _, err := f.Write(buf[:k]); err != nil {
				tb.Fatal(err)
			}
			n -= k
		}
		if err := f.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	write(filepath.Join(dir, "large.bin"), total/4)
	left := total - total/4
	for i := 0; left > total/2+total/20; i++ {
		write(filepath.Join(dir, fmt.Sprintf("medium-%d.bin", i)), 2<<20)
		left -= 2 << 20
	}
	for i := 0; left > total/4; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%d", i%8))
		_ = os.MkdirAll(d, 0o755)
		write(filepath.Join(d, fmt.Sprintf("f%d.dat", i)), 128<<10)
		left -= 128 << 10
	}
	for i := 0; left > 0; i++ {
		d := filepath.Join(dir, fmt.Sprintf("src/p%d/q%d", i%16, i%5))
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		n := int64(1<<10 + (i*977)%(7<<10))
		write(filepath.Join(d, fmt.Sprintf("s%d.go", i)), n)
		if i%50 == 0 {
			_ = os.Symlink("../../large.bin", filepath.Join(d, "link"))
		}
		left -= n
	}
}

// moveOnce streams workspace name of src to a receiver over real loopback HTTP, as a
// planned move does (pack, signature, body MAC, unpack, sync, rename into dst).
func moveOnce(tb testing.TB, url string, secret []byte, src, name string) {
	pr, pw := io.Pipe()
	go func() {
		_, err := runtime.PackWorkspace(context.Background(), pw, src, name, runtime.PackOptions{})
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest(http.MethodPut, url+"/"+name, pr)
	if err != nil {
		tb.Fatal(err)
	}
	signNodeRequest(secret, req, "bench", time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		tb.Fatalf("%s: %s", resp.Status, msg)
	}
}

// BenchmarkWorkspaceMove measures a planned move's workspace stream: 100 MiB of mixed
// files (split over 1, 4 or 8 workspaces streamed at once, as a drain's workers do)
// through the whole path over loopback HTTP, against `tar -cf - | tar -xf -` of the
// same trees followed by `sync -f` (the stream syncs its filesystem too), rounds
// interleaved; onto the disk, and onto /dev/shm to see the path's own cost. Run with
// -benchtime=1x.
func BenchmarkWorkspaceMove(b *testing.B) {
	const total = 100 << 20
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	cases := []struct {
		conc int
		mem  bool // the receiver writes to /dev/shm: the path's own cost, without the disk
	}{{1, false}, {4, false}, {8, false}, {1, true}, {4, true}}
	for _, tc := range cases {
		conc := tc.conc
		b.Run(fmt.Sprintf("streams=%d/memory=%v", conc, tc.mem), func(b *testing.B) {
			src, dst := b.TempDir(), b.TempDir()
			if tc.mem {
				d, err := os.MkdirTemp("/dev/shm", "wsmove")
				if err != nil {
					b.Skipf("no /dev/shm: %v", err)
				}
				defer os.RemoveAll(d)
				dst = d
			}
			var names []string
			for i := range conc {
				names = append(names, fmt.Sprintf("sb%d", i))
				mixedTree(b, filepath.Join(src, names[i]), total/int64(conc))
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				nr, err := verifyNodeRequest(secret, r, time.Now())
				if err == nil {
					err = runtime.UnpackWorkspace(r.Context(), nr, dst, filepath.Base(r.URL.Path),
						runtime.UnpackOptions{Chown: os.Geteuid() == 0, Install: nr.verify})
				}
				if err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
				w.WriteHeader(http.StatusNoContent)
			}))
			defer func() { srv.Close(); http.DefaultClient.CloseIdleConnections() }()
			each := func(f func(name string)) time.Duration {
				_ = os.RemoveAll(dst)
				_ = os.MkdirAll(dst, 0o755)
				runCmd(b, "sync")
				began := time.Now()
				var wg sync.WaitGroup
				for _, n := range names {
					wg.Go(func() { f(n) })
				}
				wg.Wait()
				return time.Since(began)
			}
			var ours, raw []float64
			for range 3 {
				d := each(func(n string) { moveOnce(b, srv.URL, secret, src, n) })
				ours = append(ours, total/(1<<20)/d.Seconds())
				d = each(func(n string) {
					_ = os.Mkdir(filepath.Join(dst, n), 0o755)
					runCmd(b, "sh", "-c", fmt.Sprintf("tar -C %s -cf - . | tar -C %s -xf - && sync -f %s",
						filepath.Join(src, n), filepath.Join(dst, n), filepath.Join(dst, n)))
				})
				raw = append(raw, total/(1<<20)/d.Seconds())
			}
			slices.Sort(ours)
			slices.Sort(raw)
			b.ReportMetric(ours[1], "stream-MiB/s")
			b.ReportMetric(raw[1], "tar-MiB/s")
			b.ReportMetric(ours[1]/raw[1], "ratio")
			b.Logf("streams=%d memory=%v: stream %.0f MiB/s, tar|tar %.0f MiB/s (rounds: %.0f / %.0f)", conc, tc.mem, ours[1], raw[1], ours, raw)
		})
	}
}

func runCmd(tb testing.TB, name string, args ...string) {
	tb.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		tb.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
}
