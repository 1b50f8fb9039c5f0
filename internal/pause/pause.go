// Package pause waits a while unless a context ends first: the wait
// between two tries of a client (the gateway's re-minted token, the
// sign-in's device poll).
package pause

import (
	"context"
	"time"
)

// For waits d, or until ctx ends, then returns context.Cause(ctx).
func For(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
