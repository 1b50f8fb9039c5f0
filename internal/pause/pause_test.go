package pause

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	if err := For(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("a short wait: %v", err)
	}
	cause := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	start := time.Now()
	if err := For(ctx, time.Hour); !errors.Is(err, cause) {
		t.Fatalf("an ended context: %v, want its cause", err)
	}
	if time.Since(start) > time.Minute {
		t.Fatal("the wait did not end with its context")
	}
}

func TestEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	polls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, time.Millisecond, func() {
			if polls++; polls >= 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Every did not end with its context")
	}
	if polls < 3 { // a tick ready with the cancellation may poll once more
		t.Fatalf("%d polls, want 3 or more", polls)
	}
}
