package diskimg

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Sweep undoes what a previous run left behind (it crashed, or was killed): it
// unmounts every mount below mountDir, deepest first, and detaches every loop device
// still bound to a file below imageDir. Only those two directories are looked at, so
// nodes sharing a host, each with its own directories, never touch each other's
// images. It returns the mount points it unmounted. Run it before anything mounts
// there: a mount made since is swept too.
func Sweep(mountDir, imageDir string) (swept []string, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("diskimg: failed to sweep: %w", err)
		}
	}()
	points, err := MountsUnder(mountDir)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) }) // deepest first
	var errs []error
	for _, p := range points {
		m := Mount{Dir: p, autoclear: true}
		if _, err := m.Unmount(); err != nil {
			errs = append(errs, err)
			continue
		}
		swept = append(swept, p)
	}
	loops, err := LoopsUnder(imageDir)
	if err != nil {
		return swept, err
	}
	for _, l := range loops {
		errs = append(errs, detachLoop(l.N))
	}
	return swept, errors.Join(errs...)
}

// LoopsUnder returns the loop devices bound to a file below dir.
func LoopsUnder(dir string) ([]Loop, error) {
	dir = resolve(dir)
	loops, err := filepath.Glob("/sys/block/loop*")
	if err != nil {
		return nil, fmt.Errorf("diskimg: failed to list loop devices: %w", err)
	}
	var out []Loop
	for _, l := range loops {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(l), "loop"))
		if err != nil {
			continue
		}
		if f := backingFile(n); strings.HasPrefix(f, dir+"/") {
			out = append(out, Loop{N: n, File: f})
		}
	}
	return out, nil
}

// MountsUnder returns the mount points strictly below dir, of any filesystem.
func MountsUnder(dir string) ([]string, error) {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("diskimg: failed to list mounts: %w", err)
	}
	return mountsUnder(info, resolve(dir)), nil
}

// resolve makes dir absolute and symlink-free, as /proc/self/mountinfo shows paths.
func resolve(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return filepath.Clean(dir)
}

// mountsUnder returns the mount points in mountinfo (the format of
// /proc/self/mountinfo) strictly below dir.
func mountsUnder(mountinfo []byte, dir string) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		// Below dir: a name after dir's slash ("dir/" alone is dir itself).
		if p := unescape(f[4]); len(p) > len(dir)+1 && strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space, \134 for a backslash).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
