package runtime

import (
	goruntime "runtime"

	"golang.org/x/sys/unix"
)

// asOwner runs fn with uid and gid as the file system ids of the calling thread, so
// that the files fn makes belong to them; a negative uid runs fn as it is. A sandbox in
// a user namespace needs it: its tmpfs refuses a new file whose owner (the server's
// root) is not mapped there (EOVERFLOW), so a chown after the fact is too late.
// Changing the fsuid from 0 drops the file system capabilities of the thread, and
// changing it back restores them; a thread that cannot be restored is not given back
// to Go (it ends with the goroutine).
func asOwner(uid, gid int, fn func() error) error {
	if uid < 0 {
		return fn()
	}
	goruntime.LockOSThread()
	prevGID, _ := unix.SetfsgidRetGid(gid)
	prevUID, _ := unix.SetfsuidRetUid(uid)
	err := fn()
	_, _ = unix.SetfsuidRetUid(prevUID)
	_, _ = unix.SetfsgidRetGid(prevGID)
	curUID, _ := unix.SetfsuidRetUid(-1) // -1 changes nothing and returns the current fsuid
	curGID, _ := unix.SetfsgidRetGid(-1)
	if curUID == prevUID && curGID == prevGID {
		goruntime.UnlockOSThread()
	}
	return err
}
