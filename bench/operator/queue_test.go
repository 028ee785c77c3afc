package operator

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// TestQueue: one worker keeps controller-runtime's defaults (the priority
// queue and its limiter); more take the rate-limited queue with a limiter
// of their own, not the rate-limited queue's default (which would add an
// overall 10 a second).
func TestQueue(t *testing.T) {
	for _, workers := range []int{0, 1, 2, 3} {
		o := queue(controller.Options{MaxConcurrentReconciles: workers})
		several := workers > 1
		if (o.UsePriorityQueue != nil) != several || (several && *o.UsePriorityQueue) {
			t.Errorf("%d workers: UsePriorityQueue %v", workers, o.UsePriorityQueue)
		}
		if (o.RateLimiter != nil) != several {
			t.Errorf("%d workers: rate limiter set %v, want %v", workers, o.RateLimiter != nil, several)
		}
		if o.MaxConcurrentReconciles != workers {
			t.Errorf("%d workers: MaxConcurrentReconciles %d", workers, o.MaxConcurrentReconciles)
		}
	}
}
