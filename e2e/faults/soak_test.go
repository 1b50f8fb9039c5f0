package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// soakConfig is read from the environment: BRAINSTEM_SOAK (duration,
// default 60s), BRAINSTEM_SOAK_USERS (default 50), BRAINSTEM_SOAK_RESTART_EVERY
// (default 1m; the first restart is at half of it).
type soakConfig struct {
	duration, every time.Duration
	users           int
}

func soakFromEnv(t *testing.T) soakConfig {
	t.Helper()
	c := soakConfig{duration: time.Minute, every: time.Minute, users: 50}
	if v := os.Getenv("BRAINSTEM_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Second {
			t.Fatalf("BRAINSTEM_SOAK=%q: want a duration of at least 10s", v)
		}
		c.duration = d
	}
	if v := os.Getenv("BRAINSTEM_SOAK_RESTART_EVERY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 5*time.Second {
			t.Fatalf("BRAINSTEM_SOAK_RESTART_EVERY=%q: want a duration of at least 5s", v)
		}
		c.every = d
	}
	if v := os.Getenv("BRAINSTEM_SOAK_USERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			t.Fatalf("BRAINSTEM_SOAK_USERS=%q: want 1..1000", v)
		}
		c.users = n
	}
	return c
}

// restartWindow is when one shard was being restarted: from the kill or
// SIGTERM to 3 s after its /readyz.
type restartWindow struct {
	wing       string
	how        string
	from, to   time.Time
	readyAfter time.Duration
}

// sample is the gateway's goroutines and resident memory at one time.
type sample struct {
	at         time.Time
	goroutines float64
	rss        float64
}

// TestSoak: users with a mix of reads and writes while one shard is
// restarted every minute (in turn, by kill -9 or SIGTERM). No acknowledged
// write is lost, no call fails outside the restart windows, and the
// gateway's goroutines and memory stay flat.
func TestSoak(t *testing.T) {
	needFaults(t)
	cfg := soakFromEnv(t)
	c := newCluster(t, clusterOpt{})
	users := make([]*user, cfg.users)
	for i := range users {
		users[i] = c.newUser(fmt.Sprintf("soak-%d@example.com", i))
	}
	rec := &recorder{}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	stalls := watchStalls(ctx)
	start := time.Now()
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			for seq := 0; ctx.Err() == nil; seq++ {
				w := wings[rng.IntN(len(wings))]
				switch p := rng.IntN(10); {
				case p < 4:
					rec.add(u.call("brain_query", "*", `{"query":"retry incident on-call","limit":5}`), nil)
				case p < 7:
					rec.add(u.call("brain_query", w, fmt.Sprintf(`{"wing":%q,"query":"decision","limit":5}`, w)), nil)
				default:
					r, wr := u.write(w, fmt.Sprintf("soak %d %d", i, seq))
					rec.add(r, wr)
				}
				if !ctxSleep(ctx, time.Duration(200+rng.IntN(200))*time.Millisecond) {
					return
				}
			}
		})
	}

	var samples []sample
	take := func() {
		samples = append(samples, sample{time.Now(),
			c.metricFloat("go_goroutines"), c.metricFloat("process_resident_memory_bytes")})
	}
	var windows []restartWindow
	next := start.Add(cfg.every / 2)
	nextSample := start.Add(5 * time.Second)
	for n := 0; time.Since(start) < cfg.duration; {
		switch now := time.Now(); {
		case !now.Before(next):
			w := wings[n%len(wings)]
			how := "kill -9"
			from := time.Now()
			if n%2 == 1 {
				how = "SIGTERM"
				if _, err := c.shard(w).term(30 * time.Second); err != nil {
					t.Error(err)
				}
			} else {
				c.shard(w).kill()
			}
			ready := c.startShard(w)
			windows = append(windows, restartWindow{w, how, from, ready.Add(recoveryBound), ready.Sub(from)})
			n++
			next = next.Add(cfg.every)
		case !now.Before(nextSample):
			take()
			nextSample = nextSample.Add(5 * time.Second)
		default:
			ctxSleep(ctx, time.Until(minTime(next, nextSample, start.Add(cfg.duration))))
		}
	}
	stop()
	wg.Wait()
	ctxSleep(context.Background(), 2*time.Second) // let connections of the last calls close before the final sample
	take()

	calls, writes := rec.snapshot()
	all := summarize(calls)
	report(t, "%d users for %s, %d shard restarts: %s", cfg.users, cfg.duration, len(windows), all)
	var outside, inside, stalled []callRec
	partial := 0
	hostStalls := stalls()
	for _, r := range calls {
		if r.code == "ok" {
			if r.wing == "*" && !strings.Contains(r.text, `"unavailable":[]`) {
				partial++
			}
			continue
		}
		in := false
		for _, w := range windows {
			if (r.wing == w.wing || r.wing == "*") && r.end().After(w.from) && r.start.Before(w.to) {
				in = true
			}
		}
		inStall := false
		for _, st := range hostStalls {
			if r.end().After(st.from) && r.start.Before(st.to.Add(answerBound)) {
				inStall = true
			}
		}
		switch {
		case in:
			inside = append(inside, r)
		case inStall:
			stalled = append(stalled, r)
		default:
			outside = append(outside, r)
		}
	}
	for _, st := range hostStalls {
		report(t, "the host stalled this test process for %s at +%.1fs (load from other work on the machine)", ms(st.to.Sub(st.from)), st.from.Sub(start).Seconds())
	}
	if len(stalled) > 0 {
		report(t, "failed calls during host stalls (not counted against the system): %s", summarize(stalled))
	}
	for _, w := range windows {
		report(t, "restart of %s by %s: ready %s after it went down", w.wing, w.how, ms(w.readyAfter))
	}
	report(t, "failed calls inside restart windows: %s; cross-wing answers with a wing missing: %d", summarize(inside), partial)
	report(t, "failed calls outside restart windows: %d", len(outside))
	for i, r := range outside {
		if i == 10 {
			break
		}
		t.Errorf("a call failed outside the restart windows: %s %s %s at +%s: %.200s", r.tool, r.wing, r.code, ms(r.start.Sub(start)), r.text)
	}
	lost := c.verifyWrites(writes)
	report(t, "acknowledged writes %d, lost or damaged %d", len(writes), lost)

	// Flat: the median of the last third of the run against the median of
	// the first third (after a warm-up sample); peaks only follow the calls
	// in flight at the sampling instant. After the load stopped the
	// goroutines must be back near where they started (no leak).
	if len(samples) >= 4 {
		var parts []string
		for _, s := range samples {
			parts = append(parts, fmt.Sprintf("+%.0fs %.0f/%.1fMiB", s.at.Sub(start).Seconds(), s.goroutines, s.rss/(1<<20)))
		}
		report(t, "gateway goroutines/RSS every 5 s: %s", strings.Join(parts, " "))
		run := samples[1 : len(samples)-1] // without the warm-up and the settled sample
		third := max(len(run)/3, 1)
		early, late := medianSample(run[:third]), medianSample(run[len(run)-third:])
		peak, final := maxSample(run), samples[len(samples)-1]
		report(t, "gateway median early %.0f goroutines %.1f MiB, late %.0f goroutines %.1f MiB; peak %.0f goroutines %.1f MiB; after the load %.0f goroutines %.1f MiB",
			early.goroutines, early.rss/(1<<20), late.goroutines, late.rss/(1<<20), peak.goroutines, peak.rss/(1<<20), final.goroutines, final.rss/(1<<20))
		if late.goroutines > early.goroutines*1.5+10 || final.goroutines > early.goroutines+20 {
			t.Errorf("gateway goroutines grew: median %.0f early, %.0f late, %.0f after the load", early.goroutines, late.goroutines, final.goroutines)
		}
		if late.rss > early.rss*1.5+16<<20 {
			t.Errorf("gateway memory grew from %.1f MiB to %.1f MiB", early.rss/(1<<20), late.rss/(1<<20))
		}
	}
	if all.n == 0 || len(windows) == 0 {
		t.Errorf("the soak made %d calls and %d restarts", all.n, len(windows))
	}
}

// stall is a time the host did not run this test process.
type stall struct{ from, to time.Time }

// watchStalls ticks every 50 ms until ctx ends and returns the gaps of over
// a second between ticks: times the host (shared, or overloaded) ran none of
// this process, and very likely none of the brainstem processes either. A
// connection to a shard that goes silent for shards.idle_timeout because no
// process was scheduled is not a fault of the system under test.
func watchStalls(ctx context.Context) func() []stall {
	var mu sync.Mutex
	var out []stall
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				now := time.Now()
				if now.Sub(last) > time.Second {
					mu.Lock()
					out = append(out, stall{last, now})
					mu.Unlock()
				}
				last = now
			}
		}
	}()
	return func() []stall {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(out)
	}
}

// medianSample is the median of each figure.
func medianSample(ss []sample) sample {
	g := make([]float64, len(ss))
	r := make([]float64, len(ss))
	for i, s := range ss {
		g[i], r[i] = s.goroutines, s.rss
	}
	slices.Sort(g)
	slices.Sort(r)
	return sample{goroutines: g[len(g)/2], rss: r[len(r)/2]}
}

func maxSample(ss []sample) sample {
	var m sample
	for _, s := range ss {
		m.goroutines = max(m.goroutines, s.goroutines)
		m.rss = max(m.rss, s.rss)
	}
	return m
}

func minTime(ts ...time.Time) time.Time {
	m := ts[0]
	for _, t := range ts[1:] {
		if t.Before(m) {
			m = t
		}
	}
	return m
}
