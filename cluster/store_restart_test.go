package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// applyLog records OnApply calls.
type applyLog struct {
	mu    sync.Mutex
	calls [][]string
}

func (a *applyLog) add(ids []string) {
	a.mu.Lock()
	a.calls = append(a.calls, append([]string(nil), ids...))
	a.mu.Unlock()
}

func (a *applyLog) get() [][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([][]string(nil), a.calls...)
}

// markFile puts a probe key into the state file at path (closed), so a later
// hasMark tells the kept file from a rebuilt one. Inode numbers cannot: a file
// system may give a new file the number of the one just removed.
func markFile(tb testing.TB, path string) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyTestMark, []byte("1")) })
	if err := errors.Join(err, db.Close()); err != nil {
		tb.Fatal(err)
	}
}

// hasMark reports whether the state file of the closed node n still holds the probe
// key of markFile.
func hasMark(tb testing.TB, n *Node, path string) bool {
	tb.Helper()
	if err := n.Close(); err != nil {
		tb.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var marked bool
	err = db.View(func(tx *bolt.Tx) error {
		marked = tx.Bucket(bucketMeta).Get(keyTestMark) != nil
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return marked
}

// keyTestMark is the meta key markFile writes; the store never writes it.
var keyTestMark = []byte("test-mark")

// solo opens a one-node cluster in dir on listen and waits until it leads with
// every partition placed.
func solo(tb testing.TB, dir, listen string, onApply func([]string)) *Node {
	tb.Helper()
	cfg := testConfig("solo", dir, listen, false)
	cfg.OnApply = onApply
	n := openNode(tb, cfg)
	waitFor(tb, "the node to lead with its partitions placed", func() bool { return n.IsLeader() && placed(n, n) })
	return n
}

// TestStoreRestartReplay restarts a node whose state file is ahead of its latest
// snapshot: the file is kept (a probe key survives), the log after the snapshot replays without
// touching it (no OnApply for the replayed entries), and every record is there.
func TestStoreRestartReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := solo(t, dir, "127.0.0.1:0", nil)
	sbs := sandboxIDs(20)
	for i, sb := range sbs[:10] {
		mustWrite(t, n, sb, "k", fmt.Sprint(i))
	}
	if err := n.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	for i, sb := range sbs[10:] {
		mustWrite(t, n, sb, "k", fmt.Sprint(10+i))
	}
	path := filepath.Join(dir, "raft", "state.db")
	addr := n.RaftAddr()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	markFile(t, path)

	var calls applyLog
	m := solo(t, dir, addr, calls.add)
	caughtUp(t, m)
	for i, sb := range sbs {
		if got := get(t, m, sb, "k"); got != fmt.Sprint(i) {
			t.Errorf("%s after restart: k=%q, want %d", sb, got, i)
		}
	}
	for _, c := range calls.get() {
		if c != nil {
			t.Errorf("the replay re-applied entries the file held: OnApply(%v)", c)
		}
	}
	mustWrite(t, m, sbs[0], "k", "new")
	waitFor(t, "OnApply for a new write", func() bool {
		for _, c := range calls.get() {
			if len(c) == 1 && c[0] == sbs[0] {
				return true
			}
		}
		return false
	})
	if !hasMark(t, m, path) {
		t.Error("the restart replaced a state file that was ahead of the snapshot")
	}
}

// killEnv names the data directory of TestStoreKillChild, which runs only as the
// child process of TestStoreKill9.
const killEnv = "SANDGATE_STORE_KILL_DIR"

// TestStoreKill9 runs a node in a child process, kills it with SIGKILL right after
// its writes were acknowledged (no Close, no sync of the NoSync state file), and
// restarts it from its data directory: every acknowledged write is there, and the
// node writes on.
func TestStoreKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoreKillChild$")
	cmd.Env = append(os.Environ(), killEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	acked := map[string]string{}
	var addr string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "addr":
			addr = f[1]
		case len(f) == 4 && f[0] == "ack":
			acked[f[1]+" "+f[2]] = f[3]
		}
		if len(f) == 1 && f[0] == "done" {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	_ = cmd.Wait()
	if addr == "" || len(acked) == 0 {
		t.Fatalf("the child acknowledged nothing (addr %q)", addr)
	}

	m := solo(t, dir, addr, nil)
	caughtUp(t, m)
	for sk, v := range acked {
		sb, k, _ := strings.Cut(sk, " ")
		if got := get(t, m, sb, k); got != v {
			t.Errorf("after kill -9: %s %s = %q, want the acknowledged %q", sb, k, got, v)
		}
	}
	t.Logf("%d acknowledged writes survived kill -9", len(acked))
	mustWrite(t, m, "after-restart", "k", "v")
}

// TestStoreKillChild is the child of TestStoreKill9: it writes, prints each
// acknowledged write, takes a snapshot half way, prints done and waits to be killed.
func TestStoreKillChild(t *testing.T) {
	dir := os.Getenv(killEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestStoreKill9")
	}
	cfg := testConfig("solo", dir, "127.0.0.1:0", false)
	n, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Printf(format+"\n", args...)
		mu.Unlock()
	}
	say("addr %s", n.RaftAddr())
	waitFor(t, "the node to lead with its partitions placed", func() bool { return n.IsLeader() && placed(n, n) })
	sbs := sandboxIDs(40)
	for round := range 2 {
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for i := range 10 {
					sb, k := sbs[(w*10+i)%len(sbs)], fmt.Sprintf("r%dw%di%d", round, w, i)
					b := put(sb, k, "v"+k)
					b.Epoch = n.Epoch(sb)
					if err := n.Write(context.Background(), b); err == nil {
						say("ack %s %s %s", sb, k, "v"+k)
					}
				}
			})
		}
		wg.Wait()
		if round == 0 {
			if err := n.raft.Snapshot().Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	say("done")
	time.Sleep(patience) // killed before this ends
}

// TestStoreUncleanStop reopens a node whose state file was left open (no Close),
// once as if by a killed process on this boot (the file is kept: the kernel kept
// its pages) and once as if by an earlier boot (an OS crash may have torn it: it is
// rebuilt from the snapshot and the log). A record removed from the file stands for
// a torn page: only the rebuild brings it back.
func TestStoreUncleanStop(t *testing.T) {
	t.Parallel()
	if bootID() == "" {
		t.Skip("no boot id on this system")
	}
	tests := []struct {
		name    string
		boot    string
		rebuilt bool
	}{
		{"process killed on this boot", bootID(), false},
		{"machine restarted since", "an-earlier-boot", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			n := solo(t, dir, "127.0.0.1:0", nil)
			sbs := sandboxIDs(20)
			for i, sb := range sbs {
				mustWrite(t, n, sb, "k", fmt.Sprint(i))
				if i == 9 {
					if err := n.raft.Snapshot().Error(); err != nil {
						t.Fatal(err)
					}
				}
			}
			addr := n.RaftAddr()
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "raft", "state.db")
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				m := tx.Bucket(bucketMeta)
				return errors.Join(m.Put(keyClean, nil), m.Put(keyBoot, []byte(tt.boot)),
					tx.Bucket(bucketData).Delete(dataKey(sbs[3], []byte("k"))),
					tx.Bucket(bucketData).Delete(dataKey(sbs[15], []byte("k"))))
			})
			if err := errors.Join(err, db.Close()); err != nil {
				t.Fatal(err)
			}
			markFile(t, path)

			m := solo(t, dir, addr, nil)
			caughtUp(t, m)
			for i, sb := range sbs {
				want := fmt.Sprint(i)
				if !tt.rebuilt && (i == 3 || i == 15) {
					want = "<nil>" // the kept file is trusted as it is
				}
				if got := get(t, m, sb, "k"); got != want {
					t.Errorf("%s: k=%q, want %q", sb, got, want)
				}
			}
			if rebuilt := !hasMark(t, m, path); rebuilt != tt.rebuilt {
				t.Fatalf("rebuilt = %v, want %v", rebuilt, tt.rebuilt)
			}
		})
	}
}
