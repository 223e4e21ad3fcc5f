package plugins

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sandgate/sandgate/plugins/internal/wire"
)

// Export names of plugins/ABI.md.
const (
	exportVersion = "sandgate_abi_version"
	exportAlloc   = "sandgate_alloc"
	exportInit    = "sandgate_init"
	exportBudget  = "sandgate_budget"
	exportRoute   = "sandgate_route"
)

// instance is one module instance with its exports looked up once. It is used by one
// call at a time: the pool hands it out exclusively.
type instance struct {
	mod           api.Module
	mem           api.Memory
	alloc         api.Function
	budget, route api.Function // nil when not exported
	version       int          // ABI version the module exports, wire.MinVersion..wire.Version
	inPtr, inCap  uint32       // request buffer from sandgate_alloc
	calls         int
	ctx           *callContext // what hook calls run under
	stack         [2]uint64
	stderr        tailBuffer

	mu       sync.Mutex // guards guestErr, written by the error host function
	guestErr string
}

// newInstance instantiates compiled in rt, checks its ABI and runs its init.
func newInstance(ctx context.Context, g *generation) (_ *instance, err error) {
	in := &instance{ctx: newCallContext(g.h.watchdog)}
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize").
		WithSysWalltime().WithSysNanotime().WithStderr(&in.stderr).WithStdout(&in.stderr)
	mod, err := g.rt.InstantiateModule(ctx, g.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: failed to instantiate: %w%s", ErrInvalidModule, err, in.stderr.suffix())
	}
	in.mod = mod
	g.byModule.Store(mod, in)
	defer func() {
		if err != nil {
			in.close(g)
		}
	}()
	in.mem = mod.Memory()
	version, alloc := mod.ExportedFunction(exportVersion), mod.ExportedFunction(exportAlloc)
	if in.mem == nil || version == nil || alloc == nil {
		return nil, fmt.Errorf("%w: must export memory, %s and %s", ErrInvalidModule, exportVersion, exportAlloc)
	}
	in.alloc = alloc
	in.budget, in.route = mod.ExportedFunction(exportBudget), mod.ExportedFunction(exportRoute)
	if !sig(version, nil, []api.ValueType{api.ValueTypeI32}) ||
		!sig(alloc, []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}) ||
		(in.budget != nil && !sig(in.budget, hookParams, hookResults)) ||
		(in.route != nil && !sig(in.route, hookParams, hookResults)) {
		return nil, fmt.Errorf("%w: exports have the wrong signatures", ErrInvalidModule)
	}
	res, err := version.Call(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidModule, exportVersion, err)
	}
	if v := uint32(res[0]); v < wire.MinVersion || v > wire.Version {
		return nil, fmt.Errorf("%w: ABI version %d, want %d to %d", ErrInvalidModule, v, wire.MinVersion, wire.Version)
	}
	in.version = int(uint32(res[0]))
	if initFn := mod.ExportedFunction(exportInit); initFn != nil {
		if !sig(initFn, hookParams, []api.ValueType{api.ValueTypeI32}) {
			return nil, fmt.Errorf("%w: %s has the wrong signature", ErrInvalidModule, exportInit)
		}
		if err := in.grow(ctx, uint32(len(g.config))); err != nil {
			return nil, err
		}
		if !in.mem.Write(in.inPtr, g.config) {
			return nil, fmt.Errorf("%w: config buffer out of memory", ErrInvalidModule)
		}
		res, err := initFn.Call(ctx, uint64(in.inPtr), uint64(len(g.config)))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w%s", ErrInvalidModule, exportInit, err, in.stderr.suffix())
		}
		if uint32(res[0]) != 0 {
			return nil, &InitError{Message: in.takeGuestErr()}
		}
	}
	if err := in.grow(ctx, 4096); err != nil {
		return nil, err
	}
	return in, nil
}

var (
	hookParams  = []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}
	hookResults = []api.ValueType{api.ValueTypeI64}
)

func sig(f api.Function, params, results []api.ValueType) bool {
	d := f.Definition()
	eq := func(a, b []api.ValueType) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	return eq(d.ParamTypes(), params) && eq(d.ResultTypes(), results)
}

// grow asks the guest for a request buffer of at least n bytes.
func (in *instance) grow(ctx context.Context, n uint32) error {
	in.stack[0] = uint64(n)
	if err := in.alloc.CallWithStack(ctx, in.stack[:]); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidModule, exportAlloc, err)
	}
	p := uint32(in.stack[0])
	if p == 0 || uint64(p)+uint64(n) > uint64(in.mem.Size()) {
		return fmt.Errorf("%w: %s returned %d for %d bytes", ErrInvalidModule, exportAlloc, p, n)
	}
	in.inPtr, in.inCap = p, max(n, 1)
	return nil
}

// call encodes a request straight into the guest's buffer with enc, calls fn and
// returns a view of the answer, valid until the next call on in.
func (in *instance) call(ctx context.Context, fn api.Function, enc func([]byte) []byte) ([]byte, error) {
	buf, ok := in.mem.Read(in.inPtr, in.inCap)
	if !ok {
		return nil, fmt.Errorf("%w: request buffer outside memory", ErrTrap)
	}
	req := enc(buf[:0:in.inCap])
	if len(req) > int(in.inCap) { // append had to reallocate: ask for a bigger buffer
		if err := in.grow(ctx, uint32(len(req))); err != nil {
			return nil, classify(ctx, err)
		}
		if !in.mem.Write(in.inPtr, req) {
			return nil, fmt.Errorf("%w: request buffer outside memory", ErrTrap)
		}
	}
	in.calls++
	in.stack[0], in.stack[1] = uint64(in.inPtr), uint64(len(req))
	if err := fn.CallWithStack(ctx, in.stack[:]); err != nil {
		return nil, classify(ctx, err)
	}
	packed := in.stack[0]
	p, n := uint32(packed>>32), uint32(packed)
	if packed == 0 {
		return nil, fmt.Errorf("%w: guest reported: %s", ErrGarbage, in.takeGuestErr())
	}
	if n > wire.MaxMessage {
		return nil, fmt.Errorf("%w: answer of %d bytes", ErrGarbage, n)
	}
	out, ok := in.mem.Read(p, n)
	if !ok {
		return nil, fmt.Errorf("%w: answer outside memory", ErrGarbage)
	}
	return out, nil
}

// classify names the failure of a call that returned err under ctx.
func classify(ctx context.Context, err error) error {
	var exit *sys.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("%w: %w", ErrCanceled, err)
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded:
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	default:
		return fmt.Errorf("%w: %w", ErrTrap, err)
	}
}

func (in *instance) setGuestErr(msg string) {
	in.mu.Lock()
	in.guestErr = msg
	in.mu.Unlock()
}

func (in *instance) takeGuestErr() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	msg := in.guestErr
	in.guestErr = ""
	if msg == "" {
		msg = "no reason given"
	}
	return msg
}

// close closes the module; the runtime stays open.
func (in *instance) close(g *generation) {
	in.ctx.close()
	g.byModule.Delete(in.mod)
	_ = in.mod.Close(context.Background())
}

// tailBuffer keeps the last bytes a guest wrote to stdout or stderr, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 1024

// Write implements io.Writer.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) == 0 {
		return ""
	}
	return " (guest output: " + string(t.buf) + ")"
}
