//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// onResize calls fn on every SIGWINCH until the returned stop is called. fn runs on
// its own goroutine, one call at a time.
func onResize(fn func()) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-ch:
				fn()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		<-finished
	}
}
