package actor

// Bounds on what a sandbox remembers.
//
// Running work is bounded by the budget's MaxProcesses, but a sandbox also remembers
// what no longer runs: exited processes (exited.go, Config.ExitedLimit), sessions
// (dead ones, and those whose shells hibernation closed) and terminals whose shells
// ended. Each is stored and listed, so each is bounded by count too:
//
//   - Exited process records are dropped oldest first past Config.ExitedLimit: they
//     would go at their keep time anyway, and nobody asked for them by name.
//   - Sessions and terminals are objects the caller named and expects to find again,
//     so nothing is dropped: a create of a new id past Config.SessionLimit or
//     Config.TerminalLimit is refused with a *BudgetError ("max_sessions",
//     "max_terminals") and a budget.denied event, as MaxProcesses is. Replacing a dead
//     session or restarting a terminal under an id the sandbox has is never refused;
//     deleting one makes room.

// checkKept refuses one more remembered item of budget when the sandbox has limit of
// them already, recording a budget.denied event.
func (a *sbActor) checkKept(budget string, have, limit int) error {
	if have < limit {
		return nil
	}
	a.emit("budget.denied", map[string]any{"budget": budget, "limit": limit})
	return &BudgetError{Budget: budget, Limit: limit}
}
