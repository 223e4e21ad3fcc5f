package nsinit

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Why an init in a user namespace executes itself again once its root is built:
//
// A new mount namespace starts as a copy of the server's mounts, other sandboxes'
// workspace images among them, and the init lets go of that copy when it detaches
// the old root after pivot_root. Without a user namespace the detach releases every
// mount of the copy that nothing inside uses. In a namespace that a new user namespace
// owns, the kernel locks each copied mount to its parent (so that the less privileged
// owner can never uncover what a mount hides), and a lazily detached tree of locked
// mounts stays in one piece: all of it lives as long as its top is in use. The init
// uses that top for as long as it runs: the dynamic loader and the C libraries of
// a cgo binary were mapped from it when the init was executed. So every filesystem the
// server had mounted when the sandbox started stayed alive for the sandbox's whole
// life, in no namespace where anyone could see it; a workspace image among them kept
// its loop device bound to the image file after its own unmount, and the image could
// not be mounted again until that sandbox ended.
//
// Executed again from inside its new root, the init maps the loader and libraries from
// the new root's bind mounts instead (the binary itself comes from /proc/self/exe,
// which names the server's file), and nothing uses the old tree any more. The config
// crosses the exec in a memory file whose fd the environment names (the config names
// host paths, which the sandbox's processes could read in /proc/1/environ); the
// control socket and the cgroup fds keep their numbers. The mounts, the hostname and the network are the namespaces', and
// stay.

// setupEnv names the fd of the memory file that carries the config frame's content
// into the init executed again.
const setupEnv = "SANDGATE_NSINIT_SETUP"

// setupState is what an init executed again needs of its config frame.
type setupState struct {
	Config   Config `json:"config"`
	Home     bool   `json:"home,omitempty"`
	FreezeFD int    `json:"freeze_fd,omitempty"`
}

// loopMajor is the block major of loop devices.
const loopMajor = 7

// needsReexec reports whether an init with cfg, its root built, executes itself again:
// with a user namespace and the host's entries as its root, when the mounts it copied
// at its start had a filesystem on a loop device (loops). Such a device lets its file
// go only when its filesystem is released, which its owner waits for (a workspace
// image mounted again, a file removed); the exec costs about one more start of the
// binary, so an init on a host without loop mounts skips it. A Rootfs's loader may not
// run this binary, so such an init keeps its old tree (see the package's caveats).
func needsReexec(cfg Config, loops bool) bool {
	return cfg.UserNS != nil && cfg.Rootfs == "" && loops
}

// hasLoopMount reports whether mountinfo (the format of /proc/self/mountinfo) has a
// mount of a loop device.
func hasLoopMount(mountinfo []byte) bool {
	prefix := strconv.Itoa(loopMajor) + ":"
	for line := range strings.SplitSeq(string(mountinfo), "\n") {
		if f := strings.Fields(line); len(f) > 2 && strings.HasPrefix(f[2], prefix) {
			return true
		}
	}
	return false
}

// reexecState returns the state passed by the init that executed this one, and
// whether there was any; the variable is removed and the state's fd closed either way.
func reexecState() (setupState, bool, error) {
	v, ok := os.LookupEnv(setupEnv)
	if !ok {
		return setupState{}, false, nil
	}
	_ = os.Unsetenv(setupEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd <= ctlFD {
		return setupState{}, true, fmt.Errorf("%w: the init executed again names no state fd: %q", ErrProtocol, v)
	}
	f := os.NewFile(uintptr(fd), "nsinit-setup")
	defer f.Close()
	var st setupState
	if err := json.NewDecoder(f).Decode(&st); err != nil {
		return setupState{}, true, fmt.Errorf("%w: the state of the init executed again: %w", ErrProtocol, err)
	}
	return st, true, nil
}

// reexec executes the init again with st, keeping the fds st names open across the
// exec. It returns only if the exec failed (the init goes on as it is), with the fds
// close-on-exec again.
func reexec(st setupState) error {
	keep := []int{ctlFD}
	if st.Home {
		keep = append(keep, homeFD, homeFD+1)
	}
	if st.FreezeFD > ctlFD {
		keep = append(keep, st.FreezeFD)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("failed to encode the init's state: %w", err)
	}
	// The state goes in a memory file, not in the environment, where a sandbox's
	// processes could read it (/proc/1/environ): it names host paths.
	state, err := unix.MemfdCreate("nsinit-setup", 0) // kept across the exec
	if err != nil {
		return fmt.Errorf("failed to create the init's state file: %w", err)
	}
	defer unix.Close(state) // reached only if the exec failed
	if _, err := unix.Pwrite(state, b, 0); err != nil {
		return fmt.Errorf("failed to write the init's state: %w", err)
	}
	for _, fd := range keep {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			return fmt.Errorf("failed to keep fd %d across the exec: %w", fd, err)
		}
	}
	env := append(os.Environ(), setupEnv+"="+strconv.Itoa(state))
	err = unix.Exec("/proc/self/exe", os.Args, env)
	for _, fd := range keep {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
	}
	return fmt.Errorf("failed to execute the init again: %w", err)
}
