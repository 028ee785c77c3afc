// Package backoff holds the pause that every retry loop of steady takes:
// one copy, so that all of them end as soon as their context does.
package backoff

import (
	"context"
	"time"
)

// Sleep pauses for d, or until ctx ends, then returning ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
