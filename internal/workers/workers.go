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
package workers

import (
	"sync"
	"sync/atomic"
)

// Pool runs functions on kept goroutines (the package doc). The zero Pool
// is not usable; create one with New and end its idle goroutines with
// Close.
type Pool struct {
	work    chan func() // unbuffered: a send succeeds only into an idle goroutine
	maxIdle int32
	idle    atomic.Int32
	done    chan struct{}
	once    sync.Once
}

// New returns a pool that keeps at most maxIdle goroutines waiting for
// work (at least 1).
func New(maxIdle int) *Pool {
	return &Pool{work: make(chan func()), maxIdle: int32(max(maxIdle, 1)), done: make(chan struct{})}
}

// Go runs fn on an idle goroutine of the pool, or on a new one. It never
// blocks. After Close it starts a goroutine for fn, as the go statement
// would.
func (p *Pool) Go(fn func()) {
	select {
	case p.work <- fn:
	default:
		go p.run(fn)
	}
}

// run runs fn, then waits for more work while the pool wants another idle
// goroutine.
func (p *Pool) run(fn func()) {
	for {
		fn()
		if !p.becomeIdle() {
			return
		}
		select {
		case fn = <-p.work:
			p.idle.Add(-1)
		case <-p.done:
			p.idle.Add(-1)
			return
		}
	}
}

// becomeIdle counts the caller among the idle goroutines, unless that
// would make more than the bound.
func (p *Pool) becomeIdle() bool {
	for {
		n := p.idle.Load()
		if n >= p.maxIdle {
			return false
		}
		if p.idle.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Idle is the number of goroutines waiting for work.
func (p *Pool) Idle() int { return int(p.idle.Load()) }

// Close ends the idle goroutines; goroutines running a function end when
// it returns. Go still works after Close, without keeping goroutines.
func (p *Pool) Close() { p.once.Do(func() { close(p.done) }) }
