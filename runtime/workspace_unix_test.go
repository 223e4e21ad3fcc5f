package runtime

import "golang.org/x/sys/unix"

func wsMkfifo(p string) error { return unix.Mkfifo(p, 0o644) }
