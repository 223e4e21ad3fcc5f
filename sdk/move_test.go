package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/sdk"
)

// movePatience bounds each wait of the ownership-move test (a loaded machine).
const movePatience = 3 * time.Minute

// counterCmd prints "<word> 1", "<word> 2", ... until it is killed.
func counterCmd(word string) string {
	return fmt.Sprintf(`i=0; while :; do i=$((i+1)); echo "%s $i"; sleep 0.02; done`, word)
}

// countedLines returns how many whole lines of counterCmd(word) out holds, and
// whether out is exactly its output cut somewhere, eol ending each line.
func countedLines(out, word, eol string) (int, bool) {
	n := 0
	for i := 1; out != ""; i++ {
		line := fmt.Sprintf("%s %d%s", word, i, eol)
		if !strings.HasPrefix(line, out) && !strings.HasPrefix(out, line) {
			return n, false
		}
		if len(out) < len(line) {
			return n, true
		}
		out, n = out[len(line):], i
	}
	return n, true
}

// streamLog is what one stream delivered: output bytes in order, each gap, and the
// exit.
type streamLog struct {
	data   bytes.Buffer
	next   int64 // offset after the last byte or gap
	conns  int   // connections (ready events) of an Attachment
	broken string
	exited bool
	signal string
	err    error
}

// add appends the event of one stream at offset at (data) or [from, to) (gap),
// and notes an offset that does not follow what came before.
func (l *streamLog) add(at int64, data []byte, from, to int64) {
	switch {
	case data != nil && at != l.next:
		l.broken += fmt.Sprintf("output at %d after %d; ", at, l.next)
	case data == nil && from != l.next:
		l.broken += fmt.Sprintf("gap [%d, %d) after %d; ", from, to, l.next)
	}
	if data != nil {
		l.data.Write(data)
		l.next = at + int64(len(data))
	} else {
		l.next = to
	}
}

// TestStreamsResumeAfterDrain: the SDK's streams follow a sandbox through a planned
// ownership move in a real three-node cluster, with the client's default options and
// talking to the node that is drained (it forwards once it owns nothing). The drain
// ends the sandbox's processes, whose output stays on the old node: ProcessOutput and
// a process Attachment deliver every byte their connections carried once and in
// offset order, the rest up to the process's final offset as gaps, then the exit. A
// terminal Attachment comes back to a new shell with Restarted set, and
// StreamEvents yields sandbox.moved, every event once.
func TestStreamsResumeAfterDrain(t *testing.T) {
	cl := clustertest.Start(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*movePatience)
	defer cancel()
	info, err := cl.Info(ctx, cl.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	// A sandbox on a partition the rebalance already gave to the node that joined
	// last (the other follower if that one leads): that node is its partition's
	// final rendezvous owner, so only the drain moves it.
	owner := cl.Nodes[2]
	if owner.ID == info.Leader {
		owner = cl.Nodes[1]
	}
	c0 := sdk.New(cl.Nodes[0].URL(), cl.Token, nil)
	var sb string
	for i := 0; sb == ""; i++ {
		if i == 1000 {
			t.Fatalf("1000 sandboxes, none owned by %s", owner.ID)
		}
		s, _, err := c0.CreateSandbox(ctx, sdk.CreateSandboxRequest{ID: fmt.Sprintf("mv%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if s.Node == owner.ID {
			sb = s.ID
		}
	}
	c := sdk.New(owner.URL(), cl.Token, nil)

	out, err := c.CreateProcess(ctx, sb, sdk.CreateProcessRequest{Command: counterCmd("sse")})
	if err != nil {
		t.Fatal(err)
	}
	tty, err := c.CreateProcess(ctx, sb, sdk.CreateProcessRequest{Command: counterCmd("ws"), PTY: &sdk.PTYSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PutTerminal(ctx, sb, "t1", sdk.PutTerminalRequest{}); err != nil {
		t.Fatal(err)
	}

	// Each stream runs on its own goroutine and says when it has three lines.
	var sseLog, wsLog streamLog
	ready := make(chan string, 3)
	sseDone := make(chan struct{})
	go func() {
		defer close(sseDone)
		said := false
		for ev, err := range c.ProcessOutput(ctx, sb, out.ID, 0) {
			switch {
			case err != nil:
				sseLog.err = err
			case ev.Type == sdk.OutputData:
				sseLog.add(ev.Offset, ev.Data, 0, 0)
			case ev.Type == sdk.OutputGap:
				sseLog.add(0, nil, ev.From, ev.To)
			case ev.Type == sdk.OutputExit:
				sseLog.exited = true
			}
			if n, _ := countedLines(sseLog.data.String(), "sse", "\n"); n >= 3 && !said {
				said = true
				ready <- "sse"
			}
		}
	}()
	procWS, err := c.Attach(ctx, sb, sdk.AttachProcess, tty.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer procWS.Close()
	wsDone := make(chan struct{})
	go func() {
		defer close(wsDone)
		said := false
		for {
			ev, err := procWS.Next(ctx)
			if err != nil {
				if !errors.Is(err, io.EOF) {
					wsLog.err = err
				}
				return
			}
			switch ev.Type {
			case sdk.AttachReady:
				wsLog.conns++
			case sdk.AttachOutput:
				wsLog.add(ev.Offset, ev.Data, 0, 0)
			case sdk.AttachGap:
				wsLog.add(0, nil, ev.From, ev.To)
			case sdk.AttachExit:
				wsLog.exited = true
				if ev.Signal != nil {
					wsLog.signal = string(*ev.Signal)
				}
			}
			if n, _ := countedLines(wsLog.data.String(), "ws", "\r\n"); n >= 3 && !said {
				said = true
				ready <- "ws"
			}
		}
	}()
	term, err := c.Attach(ctx, sb, sdk.AttachTerminal, "t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	termOut := func(want string) {
		t.Helper()
		var seen bytes.Buffer
		for !strings.Contains(seen.String(), want) {
			ev, err := term.Next(ctx)
			if err != nil {
				t.Fatalf("terminal, waiting for %q: %v; got %q", want, err, seen.String())
			}
			seen.Write(ev.Data)
		}
	}
	if err := term.Write(ctx, []byte("echo before-$((1+1))\n")); err != nil {
		t.Fatal(err)
	}
	termOut("before-2")
	for range 2 {
		select {
		case <-ready:
		case <-sseDone:
			t.Fatalf("output stream ended early: %+v", sseLog.err)
		case <-wsDone:
			t.Fatalf("process attachment ended early: %+v", wsLog.err)
		case <-ctx.Done():
			t.Fatal("streams silent")
		}
	}

	eventsCtx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	type seenEvent struct {
		seq       int64
		typ, data string
	}
	events := make(chan seenEvent, 1024)
	eventsDone := make(chan error, 1)
	go func() {
		defer close(events)
		for ev, err := range c.StreamEvents(eventsCtx, sb, 0) {
			if err != nil {
				eventsDone <- err
				return
			}
			events <- seenEvent{ev.Seq, ev.Type, string(ev.Data)}
		}
	}()

	began := time.Now()
	if err := c.DrainMember(ctx, owner.ID); err != nil {
		t.Fatal(err)
	}
	<-sseDone
	<-wsDone
	t.Logf("both process streams ended %v after the drain began", time.Since(began))
	s, err := c.GetSandbox(ctx, sb)
	if err != nil || s.Node == owner.ID {
		t.Fatalf("after the drain: %+v %v", s, err)
	}
	for _, x := range []struct {
		name, proc, word, eol string
		log                   *streamLog
	}{{"ProcessOutput", out.ID, "sse", "\n", &sseLog}, {"Attach", tty.ID, "ws", "\r\n", &wsLog}} {
		p, err := c.GetProcess(ctx, sb, x.proc, nil)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := countedLines(x.log.data.String(), x.word, x.eol)
		t.Logf("%s: %d lines, %d bytes of %d, exit %v signal %q, err %v", x.name, n, x.log.data.Len(), p.OutputOffset, x.log.exited, x.log.signal, x.log.err)
		switch {
		case x.log.err != nil:
			t.Errorf("%s: %v", x.name, x.log.err)
		case !ok || n < 3:
			t.Errorf("%s delivered %d lines, in order %v: %q", x.name, n, ok, x.log.data.String())
		case x.log.broken != "":
			t.Errorf("%s: %s", x.name, x.log.broken)
		case x.log.next != p.OutputOffset || p.Status != sdk.ProcessExited:
			t.Errorf("%s reached offset %d; the process is %s at %d", x.name, x.log.next, p.Status, p.OutputOffset)
		case !x.log.exited:
			t.Errorf("%s: no exit", x.name)
		}
	}
	if wsLog.conns < 2 {
		t.Errorf("the process attachment made %d connections: it was never closed by the move", wsLog.conns)
	}

	// The terminal: a new shell behind the same id, announced as such. The test types
	// once the new shell has printed something (its prompt): a shell may drop what
	// was typed before it set its terminal up.
	for restarted, printed := false, false; !printed; {
		ev, err := term.Next(ctx)
		if err != nil {
			t.Fatalf("terminal, waiting for the new shell: %v", err)
		}
		restarted = restarted || ev.Restarted
		printed = restarted && len(ev.Data) > 0
	}
	if err := term.Write(ctx, []byte("echo after-$((2+3))\n")); err != nil {
		t.Fatal(err)
	}
	termOut("after-5")

	// The event log: sandbox.moved, planned, and every event once, in order.
	var last int64
	for ev := range events {
		if ev.seq <= last {
			t.Errorf("event %d after %d", ev.seq, last)
		}
		last = ev.seq
		if ev.typ == "sandbox.moved" {
			if !strings.Contains(ev.data, `"planned":true`) || !strings.Contains(ev.data, `"from":"`+owner.ID+`"`) {
				t.Errorf("sandbox.moved %s, want planned from %s", ev.data, owner.ID)
			}
			stopEvents()
		}
	}
	if err := <-eventsDone; !errors.Is(err, context.Canceled) {
		t.Errorf("event stream ended with %v, before sandbox.moved", err)
	}
}
