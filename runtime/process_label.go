package runtime

// SetLabel replaces the process's label, the name it is listed under. The label is
// for listing only: nothing in the runtime reads it. Safe for concurrent use: label is
// read and written under p.mu only (Info reads it there), so Info shows the new label
// from the moment SetLabel returns, also once the process has exited.
func (p *Process) SetLabel(label string) {
	p.mu.Lock()
	p.label = label
	p.mu.Unlock()
}
