//go:build !unix

package main

// onResize does nothing where there is no SIGWINCH.
func onResize(fn func()) (stop func()) { return func() {} }
