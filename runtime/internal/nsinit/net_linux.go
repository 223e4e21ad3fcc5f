package nsinit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setupUTSNet sets the hostname to the sandbox id and, for NetworkLoopback, brings lo
// up. A new network namespace has only lo, and it starts down; one ioctl brings it up,
// with no netlink needed.
func setupUTSNet(cfg Config) error {
	if err := unix.Sethostname([]byte(cfg.ID)); err != nil {
		return fmt.Errorf("failed to set the hostname: %w", err)
	}
	if cfg.Network != NetworkLoopback {
		return nil
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("failed to open a socket for lo: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("failed to bring lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("failed to read lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("failed to bring lo up: %w", err)
	}
	return nil
}
