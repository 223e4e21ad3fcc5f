//go:build !linux

package nsinit

func runHelper(string) int { return 2 }
