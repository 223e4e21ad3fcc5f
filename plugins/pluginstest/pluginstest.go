// Package pluginstest builds policy plugins for tests. It is imported by tests only
// (of plugins and of examples/plugins), so a clean clone builds its own .wasm files.
//
// # Concurrency
//
// A [Builder] is safe for concurrent use; concurrent builds of one package run once.
package pluginstest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// ErrNoTool is returned by [Builder.Wat] when wat2wasm is not installed.
var ErrNoTool = errors.New("pluginstest: wat2wasm not installed")

// Builder builds plugins into a temporary directory that Close removes.
type Builder struct {
	dir   string
	mu    sync.Mutex
	built map[string]*build // guarded by mu
}

type build struct {
	once sync.Once
	path string
	err  error
}

// NewBuilder creates a Builder with its own temporary directory.
func NewBuilder() (*Builder, error) {
	dir, err := os.MkdirTemp("", "sandgate-plugins-*")
	if err != nil {
		return nil, fmt.Errorf("pluginstest: failed to create dir: %w", err)
	}
	return &Builder{dir: dir, built: make(map[string]*build)}, nil
}

// Close removes the built files. It is idempotent.
func (b *Builder) Close() error { return os.RemoveAll(b.dir) }

// Go builds the Go plugin whose main package is in directory pkgDir with
// GOOS=wasip1 GOARCH=wasm -buildmode=c-shared and returns the .wasm path. The Go build
// cache makes repeated builds cheap.
func (b *Builder) Go(pkgDir string) (string, error) {
	return b.once("go:"+pkgDir, func(out string) error {
		cmd := exec.Command(goTool(), "build", "-buildmode=c-shared", "-o", out, ".")
		cmd.Dir = pkgDir
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pluginstest: failed to build %s: %w\n%s", pkgDir, err, msg)
		}
		return nil
	})
}

// Wat assembles a WebAssembly text file with wabt's wat2wasm and returns the .wasm
// path, or ErrNoTool.
func (b *Builder) Wat(src string) (string, error) {
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		return "", ErrNoTool
	}
	return b.once("wat:"+src, func(out string) error {
		if msg, err := exec.Command(tool, "-o", out, src).CombinedOutput(); err != nil {
			return fmt.Errorf("pluginstest: failed to assemble %s: %w\n%s", src, err, msg)
		}
		return nil
	})
}

func (b *Builder) once(key string, do func(out string) error) (string, error) {
	b.mu.Lock()
	bl, ok := b.built[key]
	if !ok {
		bl = &build{}
		b.built[key] = bl
	}
	b.mu.Unlock()
	bl.once.Do(func() {
		sum := sha256.Sum256([]byte(key))
		bl.path = filepath.Join(b.dir, fmt.Sprintf("%x.wasm", sum[:8]))
		bl.err = do(bl.path)
	})
	return bl.path, bl.err
}

// SameFile reports whether two files have identical contents.
func SameFile(a, b string) (bool, error) {
	x, err := os.ReadFile(a)
	if err != nil {
		return false, err
	}
	y, err := os.ReadFile(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(x, y), nil
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}
