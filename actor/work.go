package actor

// sandboxWork is the runtime-backed part of a sandbox actor: processes, sessions and
// terminals. It is touched only by the actor goroutine.
type sandboxWork struct{}

// load reads remembered sessions and terminals.
func (w *sandboxWork) load(a *sbActor, r Reader) error { return nil }

// busy reports whether running work keeps the activation in memory.
func (w *sandboxWork) busy() bool { return false }

// counts returns live processes, sessions and terminals.
func (w *sandboxWork) counts(a *sbActor) (procs, sessions, terminals int) { return 0, 0, 0 }

// forget drops remembered sessions and terminals (sandbox deleted).
func (w *sandboxWork) forget(a *sbActor) {}

// endWork ends every process of the sandbox. With record, process.exited events are
// written; sessions and terminals stay remembered either way.
func (a *sbActor) endWork(record bool) {}
