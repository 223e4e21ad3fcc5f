package sdk

import "context"

// checkShell runs before each connection of a terminal attachment. It reads which
// process is behind the terminal; when that is not the one of the previous
// connection, the byte offsets of the old shell mean nothing for the new one (a
// terminal whose shell ended, with its node's restart say, starts a new shell whose
// output counts from 0 again), so the attachment asks for the new shell's output from
// its start and flags the next ready event. Without this check the new shell's
// output would be dropped as already seen, up to the old shell's offset.
func (a *Attachment) checkShell(ctx context.Context) error {
	if a.kind != AttachTerminal {
		return nil
	}
	t, err := a.c.GetTerminal(ctx, a.sb, a.id)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.shell != "" && t.Process != a.shell {
		a.offset, a.restarted = 0, true
	}
	a.shell = t.Process
	return nil
}
