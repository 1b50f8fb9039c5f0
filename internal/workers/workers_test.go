package workers

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor spins (yielding) until cond holds, failing after 10 s: the
// pool's goroutines turn idle or end just after their function returns,
// with no signal to wait on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		runtime.Gosched()
	}
}

// goroutineID reads the running goroutine's id from its stack header.
func goroutineID() uint64 {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

func TestGoRunsEveryFunction(t *testing.T) {
	p := New(4, time.Hour)
	t.Cleanup(p.Close)
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 1000 {
		wg.Add(1)
		p.Go(func() {
			defer wg.Done()
			n.Add(1)
		})
	}
	wg.Wait()
	if got := n.Load(); got != 1000 {
		t.Fatalf("ran %d functions, want 1000", got)
	}
}

func TestIdleGoroutineIsReused(t *testing.T) {
	p := New(1, time.Hour)
	t.Cleanup(p.Close)
	ids := make(chan uint64, 2)
	p.Go(func() { ids <- goroutineID() })
	first := <-ids
	waitFor(t, "the goroutine is idle", func() bool { return p.Idle() == 1 })
	p.Go(func() { ids <- goroutineID() })
	if second := <-ids; second != first {
		t.Fatalf("second function ran on goroutine %d, want the idle one, %d", second, first)
	}
	if p.Idle() > 1 {
		t.Fatalf("%d idle goroutines, bound 1", p.Idle())
	}
}

func TestGoNeverWaits(t *testing.T) {
	// Every function blocks until all have started: with a pool that
	// queued work behind busy goroutines this would never finish.
	p := New(2, time.Hour)
	t.Cleanup(p.Close)
	const n = 50
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	var done sync.WaitGroup
	for range n {
		done.Add(1)
		p.Go(func() {
			defer done.Done()
			started.Done()
			<-release
		})
	}
	started.Wait()
	close(release)
	done.Wait()
}

func TestIdleBoundedAndClosed(t *testing.T) {
	p := New(2, time.Hour)
	var started sync.WaitGroup
	started.Add(5)
	release := make(chan struct{})
	for range 5 {
		p.Go(func() {
			started.Done()
			<-release
		})
	}
	started.Wait()
	close(release)
	waitFor(t, "two goroutines are kept", func() bool { return p.Idle() == 2 })
	// The three others end (a goroutine past its function that is not
	// idle has returned); none joins the idle ones later.
	for range 100 {
		runtime.Gosched()
		if n := p.Idle(); n != 2 {
			t.Fatalf("%d idle goroutines, bound 2", n)
		}
	}
	p.Close()
	waitFor(t, "Close ends the idle goroutines", func() bool { return p.Idle() == 0 })
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	<-ran // Go still runs functions after Close
}

// alive reports whether the goroutine with the given id exists.
func alive(id uint64) bool {
	buf := make([]byte, 1<<20)
	return bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("goroutine "+strconv.FormatUint(id, 10)+" ["))
}

// idleThree leaves three goroutines idle in p and returns their ids.
func idleThree(t *testing.T, p *Pool) []uint64 {
	t.Helper()
	started, release := make(chan uint64), make(chan struct{})
	for range 3 {
		p.Go(func() {
			started <- goroutineID()
			<-release
		})
	}
	ids := []uint64{<-started, <-started, <-started}
	close(release)
	waitFor(t, "three goroutines are idle", func() bool { return p.Idle() == 3 })
	return ids
}

func TestIdleGoroutinesExpire(t *testing.T) {
	p := New(4, time.Minute)
	t.Cleanup(p.Close)
	ids := idleThree(t, p)
	p.expire(time.Now()) // none has been idle for a minute yet
	if n := p.Idle(); n != 3 {
		t.Fatalf("%d idle goroutines before their idle time, want 3", n)
	}
	p.expire(time.Now().Add(time.Minute))
	if n := p.Idle(); n != 0 {
		t.Fatalf("%d idle goroutines after their idle time, want 0", n)
	}
	for _, id := range ids {
		waitFor(t, "an expired goroutine ends", func() bool { return !alive(id) })
	}
}

func TestIdleTimerEndsGoroutines(t *testing.T) {
	// The pool's own timer, with the shortest idle time: the goroutines
	// end by themselves once nothing calls the pool.
	p := New(4, time.Millisecond)
	t.Cleanup(p.Close)
	ids := make(chan uint64, 1)
	p.Go(func() { ids <- goroutineID() })
	id := <-ids
	waitFor(t, "the idle goroutine ends", func() bool { return p.Idle() == 0 && !alive(id) })
}

func TestLastIdleReusedFirst(t *testing.T) {
	// Last in, first out: under steady load the goroutines that turned
	// idle first stay unused, and end after the idle time.
	p := New(4, time.Hour)
	t.Cleanup(p.Close)
	idleThree(t, p)
	p.mu.Lock()
	first, last := p.idle[0], p.idle[2]
	p.mu.Unlock()
	started, hold := make(chan struct{}), make(chan struct{})
	p.Go(func() {
		close(started)
		<-hold
	})
	<-started
	p.mu.Lock()
	left := append([]*worker(nil), p.idle...)
	p.mu.Unlock()
	close(hold)
	if len(left) != 2 || left[0] != first || left[1] == last {
		t.Fatal("the function did not run on the goroutine that turned idle last")
	}
}

// deep uses about depth KiB of stack.
//
//go:noinline
func deep(depth int) byte {
	var frame [1024]byte
	frame[depth%len(frame)] = byte(depth)
	if depth == 0 {
		return frame[0]
	}
	return deep(depth-1) + frame[depth%len(frame)]
}

// BenchmarkDeepStack runs a function needing 32 KiB of stack on a fresh
// goroutine (go) and on the pool's (pool), one at a time.
func BenchmarkDeepStack(b *testing.B) {
	for _, mode := range []string{"go", "pool"} {
		b.Run(mode, func(b *testing.B) {
			p := New(1, time.Hour)
			defer p.Close()
			done := make(chan struct{})
			fn := func() {
				deep(32)
				done <- struct{}{}
			}
			for b.Loop() {
				if mode == "go" {
					go fn()
				} else {
					p.Go(fn)
				}
				<-done
			}
		})
	}
}

// BenchmarkFanOut has many callers at once each run three functions needing
// 16 KiB of stack and wait for them, as cross-wing steps do: on fresh
// goroutines (go) and on the pool's (pool).
func BenchmarkFanOut(b *testing.B) {
	for _, mode := range []string{"go", "pool"} {
		b.Run(mode, func(b *testing.B) {
			p := New(64, KeepIdle)
			defer p.Close()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				var wg sync.WaitGroup
				fn := func() {
					deep(16)
					wg.Done()
				}
				for pb.Next() {
					wg.Add(3)
					for range 3 {
						if mode == "go" {
							go fn()
						} else {
							p.Go(fn)
						}
					}
					wg.Wait()
				}
			})
		})
	}
}
