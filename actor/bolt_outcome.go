package actor

import (
	"context"
	"fmt"
)

// Unknown outcomes in the bbolt store. A Write whose ctx ends while its batch is
// queued cannot take the batch back: the committer may still apply it in its next
// transaction. Write then answers ErrIndeterminate, and the store remembers the
// pending write, so the next Read of that sandbox waits until the committer is done
// with it. That Read shows the batch if it was applied, and no Read after it can see
// the batch appear. (The actor's own writes never give up: it writes with a context
// that does not end.)

// gaveUp records that the caller of Write stopped waiting for w, and returns the
// error that says so.
func (s *BoltStore) gaveUp(ctx context.Context, w *pendingWrite) error {
	s.mu.Lock()
	if s.unknown == nil {
		s.unknown = map[string][]chan struct{}{}
	}
	s.unknown[w.b.Sandbox] = append(s.unknown[w.b.Sandbox], w.ch)
	s.mu.Unlock()
	return fmt.Errorf("%w: %w", ErrIndeterminate, ctx.Err())
}

// settle waits until every write of sandbox given up by its caller has left the
// committer, and forgets them.
func (s *BoltStore) settle(ctx context.Context, sandbox string) error {
	s.mu.Lock()
	chs := s.unknown[sandbox]
	s.mu.Unlock()
	if len(chs) == 0 {
		return nil
	}
	for _, ch := range chs {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	left := s.unknown[sandbox][:0:0]
	for _, ch := range s.unknown[sandbox] {
		select {
		case <-ch:
		default:
			left = append(left, ch) // given up while this Read waited
		}
	}
	if len(left) == 0 {
		delete(s.unknown, sandbox)
	} else {
		s.unknown[sandbox] = left
	}
	return nil
}
