package pluginstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
)

// CacheDir returns the wazero compilation cache directory tests share, kept between
// runs under the user's cache directory (or the temp directory).
func CacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "sandgate", "wazero-test")
}

// Warm builds the Go plugins in pkgDirs concurrently and compiles each into the
// compilation cache in cacheDir, so tests that load them find it warm.
func Warm(b *Builder, cacheDir string, pkgDirs ...string) error {
	errs := make([]error, len(pkgDirs))
	var wg sync.WaitGroup
	for i, dir := range pkgDirs {
		wg.Go(func() {
			path, err := b.Go(dir)
			if err == nil {
				err = compile(cacheDir, path)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func compile(cacheDir, path string) error {
	bin, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ctx := context.Background()
	cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		return err
	}
	defer cache.Close(ctx)
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true))
	defer rt.Close(ctx)
	_, err = rt.CompileModule(ctx, bin)
	return err
}

// RunWithPlugin is a TestMain for a Go plugin's own tests: it builds the plugin in
// pkgDir, warms the compilation cache with it, stores the .wasm path in *wasm, runs the
// tests and exits with their status.
func RunWithPlugin(m *testing.M, pkgDir string, wasm *string) {
	b, err := NewBuilder()
	if err == nil {
		err = Warm(b, CacheDir(), pkgDir)
	}
	if err == nil {
		*wasm, err = b.Go(pkgDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = b.Close()
	os.Exit(code)
}
