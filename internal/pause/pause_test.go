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
