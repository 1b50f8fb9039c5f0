// Package workers runs short functions on goroutines it keeps between
// runs, so that work needing a deep stack does not grow a fresh
// goroutine's stack every time.
//
// A new goroutine starts with a small stack; one that opens files, encodes
// a message and checks a token on the way grows it by copying, more than
// once (runtime.newstack, copystack). Measured on a search across three
// wings (docs/performance-scale.md), that growth cost a fifth as much CPU
// as rendering the hits, because every brainstem/1 request ran on a fresh
// goroutine on the gateway and on the shard. A pool's goroutines keep the
// stack they grew, as grpc-go's stream workers do.
//
// The pool never queues work and never makes a caller wait: a function
// given while no goroutine is idle gets a new goroutine, which joins the
// idle ones when it is done if fewer than the pool's bound are idle, and
// ends otherwise. So the pool changes how many goroutines exist, never
// how much runs at once.
//
// Idle goroutines are reused last in, first out, and one left idle for
// the pool's idle time ends: after a burst the goroutines it needed do
// not stay, while under steady load the same few serve every call and
// keep their stacks.
package workers

import (
	"slices"
	"sync"
	"time"
)

// Pool runs functions on kept goroutines (the package doc). The zero Pool
// is not usable; create one with New and end its idle goroutines with
// Close.
type Pool struct {
	maxIdle int
	idleFor time.Duration

	mu     sync.Mutex
	idle   []*worker   // the most recently idle last
	timer  *time.Timer // ends goroutines idle too long; armed while idle is not empty
	armed  bool
	closed bool
}

// worker is one kept goroutine: it runs what arrives on work and ends when
// work is closed.
type worker struct {
	work  chan func() // buffered (1): a send never waits for the goroutine
	since time.Time   // when it last turned idle
}

// KeepIdle is the idle time the product's pools use. Under load a kept
// goroutine is reused within microseconds; one that waited a whole second
// saves at most one stack growth (tens of microseconds) a second, so it
// ends and its stack goes back to the heap.
const KeepIdle = time.Second

// New returns a pool that keeps at most maxIdle goroutines waiting for
// work (at least 1), each for at most idleFor (at least a millisecond).
func New(maxIdle int, idleFor time.Duration) *Pool {
	p := &Pool{maxIdle: max(maxIdle, 1), idleFor: max(idleFor, time.Millisecond)}
	p.timer = time.AfterFunc(time.Hour, func() { p.expire(time.Now()) })
	p.timer.Stop()
	return p
}

// Go runs fn on the goroutine of the pool that turned idle last, or on a
// new one. It never blocks. After Close it starts a goroutine for fn, as
// the go statement would.
func (p *Pool) Go(fn func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = slices.Delete(p.idle, n-1, n) // clears the slot it frees
		p.mu.Unlock()
		w.work <- fn
		return
	}
	p.mu.Unlock()
	w := &worker{work: make(chan func(), 1)}
	go w.run(p, fn)
}

// run runs fn, then what the pool gives it, while the pool keeps it.
func (w *worker) run(p *Pool, fn func()) {
	for {
		fn()
		if !p.keep(w) {
			return
		}
		var ok bool
		if fn, ok = <-w.work; !ok {
			return
		}
	}
}

// keep puts w among the idle goroutines, unless the pool is closed or
// holds its bound already.
func (p *Pool) keep(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= p.maxIdle {
		return false
	}
	w.since = time.Now()
	p.idle = append(p.idle, w)
	if !p.armed {
		p.armed = true
		p.timer.Reset(p.idleFor)
	}
	return true
}

// expire ends the goroutines idle since before now minus the idle time
// and arms the timer for the oldest that remains.
func (p *Pool) expire(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(p.idle) && now.Sub(p.idle[n].since) >= p.idleFor {
		close(p.idle[n].work)
		n++
	}
	p.idle = append(p.idle[:0], p.idle[n:]...)
	clear(p.idle[len(p.idle):cap(p.idle)])
	p.armed = len(p.idle) > 0 && !p.closed
	if p.armed {
		p.timer.Reset(p.idle[0].since.Add(p.idleFor).Sub(now))
	}
}

// Idle is the number of goroutines waiting for work.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// Close ends the idle goroutines; goroutines running a function end when
// it returns. Go still works after Close, without keeping goroutines.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.timer.Stop()
	for _, w := range p.idle {
		close(w.work)
	}
	p.idle = nil
}
