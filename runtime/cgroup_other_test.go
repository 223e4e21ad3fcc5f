//go:build !linux

package runtime

import "testing"

// checkCgroupsGone does nothing: there are no cgroups on this system.
func checkCgroupsGone(testing.TB, *Sandbox) {}

// requireContainment fails the test: containment needs Linux's cgroup2.
func requireContainment(tb testing.TB) {
	tb.Helper()
	tb.Fatal("this test needs Linux's cgroup2")
}
