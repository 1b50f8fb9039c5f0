package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/internal/durable"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// disk is a fake of the store's view: which marks have landed.
type disk struct {
	mu      sync.Mutex
	landed  map[string]bool
	fail    error
	settled []string
}

func (d *disk) settle(mark []byte) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail != nil {
		return false, d.fail
	}
	d.settled = append(d.settled, string(mark))
	return d.landed[string(mark)], nil
}

func (d *disk) land(mark string) {
	d.mu.Lock()
	if d.landed == nil {
		d.landed = map[string]bool{}
	}
	d.landed[mark] = true
	d.mu.Unlock()
}

func fp(s string) [32]byte {
	var f [32]byte
	copy(f[:], s)
	return f
}

func open(t *testing.T, path string, d *disk, now *clock, mod func(*Options)) *Journal {
	t.Helper()
	opt := Options{Path: path, Settle: d.settle, Now: now.Now}
	if mod != nil {
		mod(&opt)
	}
	j, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func begin(t *testing.T, j *Journal, email, key, tool string, f [32]byte) (*Claim, *Answer, error) {
	t.Helper()
	return j.Begin(context.Background(), email, key, tool, f)
}

// write runs one whole-call write through a claim: intent, the change
// landing on the disk, commit.
func write(t *testing.T, j *Journal, d *disk, email, key string, f [32]byte, mark, answer string) {
	t.Helper()
	c, a, err := begin(t, j, email, key, "brain_write", f)
	if err != nil || a != nil {
		t.Fatalf("begin: %v %v", a, err)
	}
	defer c.Release()
	if err := c.Intend(Whole, []byte(mark), []byte(answer)); err != nil {
		t.Fatal(err)
	}
	d.land(mark)
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestReplayConflictAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	d, now := &disk{}, &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	j := open(t, path, d, now, nil)
	write(t, j, d, "ann@x.com", "k1", fp("a"), "m1", `{"id":"1"}`)

	tests := []struct {
		name, email, key, tool string
		f                      [32]byte
		replay                 string
		conflict               bool
	}{
		{"same call", "ann@x.com", "k1", "brain_write", fp("a"), `{"id":"1"}`, false},
		{"other arguments", "ann@x.com", "k1", "brain_write", fp("b"), "", true},
		{"other tool", "ann@x.com", "k1", "session_log", fp("a"), "", true},
		{"other caller, same key", "bob@x.com", "k1", "brain_write", fp("a"), "", false},
	}
	check := func(j *Journal) {
		for _, tt := range tests {
			c, a, err := begin(t, j, tt.email, tt.key, tt.tool, tt.f)
			switch {
			case tt.conflict:
				var ce *ConflictError
				if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) || ce.Tool != "brain_write" {
					t.Errorf("%s: err %v, want a conflict naming brain_write", tt.name, err)
				}
			case tt.replay != "":
				if err != nil || a == nil || string(a.Bytes) != tt.replay || a.IsError {
					t.Errorf("%s: %v %v, want replay %s", tt.name, a, err, tt.replay)
				}
			default:
				if err != nil || c == nil {
					t.Errorf("%s: %v, want a claim", tt.name, err)
					continue
				}
				c.Release()
			}
		}
	}
	check(j)
	j.Close()
	check(open(t, path, d, now, nil))
}

func TestConcurrentSameKeyWaits(t *testing.T) {
	d, now := &disk{}, &clock{t: time.Unix(1e9, 0)}
	j := open(t, filepath.Join(t.TempDir(), "j"), d, now, nil)
	c, _, err := begin(t, j, "a@x.com", "k", "brain_write", fp("a"))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Answer)
	go func() {
		_, a, err := j.Begin(context.Background(), "a@x.com", "k", "brain_write", fp("a"))
		if err != nil {
			t.Error(err)
		}
		got <- a
	}()
	// The second call cannot finish before the first releases: a context
	// that ends proves it is waiting.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := j.Begin(ctx, "a@x.com", "k", "brain_write", fp("a")); !errors.Is(err, context.Canceled) {
		t.Fatalf("a third call with a done context: %v, want context.Canceled", err)
	}
	if err := c.Intend(Whole, []byte("m"), []byte("answer")); err != nil {
		t.Fatal(err)
	}
	d.land("m")
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	c.Release()
	if a := <-got; a == nil || string(a.Bytes) != "answer" {
		t.Fatalf("waiting call got %v, want the first answer", a)
	}
}

// TestOpenIntentSettledAtOpen: an intent without a commit (a crash between
// the write and its commit) is settled from the disk at the next open:
// committed with its answer when the change landed, forgotten when not.
func TestOpenIntentSettledAtOpen(t *testing.T) {
	for _, landed := range []bool{true, false} {
		t.Run(fmt.Sprint("landed=", landed), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			d, now := &disk{}, &clock{t: time.Unix(1e9, 0)}
			j := open(t, path, d, now, nil)
			c, _, _ := begin(t, j, "a@x.com", "k", "brain_write", fp("a"))
			if err := c.Intend(Whole, []byte("m"), []byte("answer")); err != nil {
				t.Fatal(err)
			}
			if landed {
				d.land("m")
			}
			j.Close() // "crash": no commit, no release
			j2 := open(t, path, d, now, nil)
			if len(d.settled) != 1 || d.settled[0] != "m" {
				t.Fatalf("settled %v, want [m]", d.settled)
			}
			c2, a, err := begin(t, j2, "a@x.com", "k", "brain_write", fp("a"))
			if err != nil {
				t.Fatal(err)
			}
			if landed {
				if a == nil || string(a.Bytes) != "answer" {
					t.Fatalf("got %v, want the intent's answer", a)
				}
				return
			}
			if c2 == nil || a != nil {
				t.Fatalf("got %v %v, want a fresh claim", c2, a)
			}
			c2.Release()
		})
	}
}

// TestSettleFailureKeepsKeyOpen: when the disk cannot be read the intent
// stays open and a retry is refused rather than run again.
func TestSettleFailureKeepsKeyOpen(t *testing.T) {
	d, now := &disk{}, &clock{t: time.Unix(1e9, 0)}
	j := open(t, filepath.Join(t.TempDir(), "j"), d, now, nil)
	c, _, _ := begin(t, j, "a@x.com", "k", "brain_write", fp("a"))
	if err := c.Intend(Whole, []byte("m"), []byte("answer")); err != nil {
		t.Fatal(err)
	}
	d.fail = errors.New("EIO")
	if _, err := c.Settle(); err == nil {
		t.Fatal("settle with a failing disk succeeded")
	}
	c.Release()
	if _, _, err := begin(t, j, "a@x.com", "k", "brain_write", fp("a")); err == nil {
		t.Fatal("a retry ran while the first write's outcome is unknown")
	}
	d.fail = nil
	d.land("m")
	if _, a, err := begin(t, j, "a@x.com", "k", "brain_write", fp("a")); err != nil || a == nil || string(a.Bytes) != "answer" {
		t.Fatalf("after the disk recovered: %v %v", a, err)
	}
}

func TestParts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	d, now := &disk{}, &clock{t: time.Unix(1e9, 0)}
	j := open(t, path, d, now, nil)
	c, _, _ := begin(t, j, "a@x.com", "k", "brain_ingest_raw", fp("a"))
	for i := range 3 {
		m := fmt.Sprint("page", i)
		if err := c.Intend(i, []byte(m), []byte(m+"-answer")); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			d.land(m)
			if err := c.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	j.Close() // crash with page 2 open and not landed
	j2 := open(t, path, d, now, nil)
	c2, a, err := begin(t, j2, "a@x.com", "k", "brain_ingest_raw", fp("a"))
	if err != nil || a != nil {
		t.Fatalf("%v %v", a, err)
	}
	parts := c2.Parts()
	if len(parts) != 2 || string(parts[0]) != "page0-answer" || string(parts[1]) != "page1-answer" {
		t.Fatalf("parts %v", parts)
	}
	if err := c2.Finish([]byte("all"), false); err != nil {
		t.Fatal(err)
	}
	c2.Release()
	if _, a, _ := begin(t, j2, "a@x.com", "k", "brain_ingest_raw", fp("a")); a == nil || string(a.Bytes) != "all" {
		t.Fatalf("final %v", a)
	}
}

func TestRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	d, now := &disk{}, &clock{t: time.Unix(1e9, 0)}
	j := open(t, path, d, now, func(o *Options) { o.TTL = time.Hour; o.MaxKeys = 5; o.MaxKeysPerCaller = 3 })
	for i := range 3 {
		write(t, j, d, "a@x.com", fmt.Sprint("a", i), fp("x"), fmt.Sprint("ma", i), "ok")
	}
	write(t, j, d, "a@x.com", "a3", fp("x"), "ma3", "ok") // a's bound: a0 goes
	for i := range 3 {
		write(t, j, d, "b@x.com", fmt.Sprint("b", i), fp("x"), fmt.Sprint("mb", i), "ok")
	}
	// 6 keys > 5: the oldest (a1) goes. (Looking a key up with Begin
	// would add it, so the test looks at the map.)
	remembered := func(j *Journal, email, key string) bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.entries[entryID(email, key)] != nil
	}
	want := map[string]bool{"a0": false, "a1": false, "a2": true, "a3": true, "b0": true, "b1": true, "b2": true}
	for _, jj := range []*Journal{j, nil} {
		if jj == nil {
			j.Close()
			jj = open(t, path, d, now, func(o *Options) { o.TTL = time.Hour; o.MaxKeys = 5; o.MaxKeysPerCaller = 3 })
		}
		for k, w := range want {
			email := "a@x.com"
			if k[0] == 'b' {
				email = "b@x.com"
			}
			if got := remembered(jj, email, k); got != w {
				t.Errorf("%s remembered = %v, want %v", k, got, w)
			}
		}
		if st := jj.Stats(); st.Keys != 5 {
			t.Errorf("%d keys remembered, want 5", st.Keys)
		}
		j = jj
	}
	now.Add(2 * time.Hour)
	c, a, err := begin(t, j, "b@x.com", "b2", "brain_write", fp("other"))
	if err != nil || a != nil {
		t.Fatalf("a key past its retention still answers: %v %v", a, err)
	}
	c.Release()
}

func TestTornTailAndCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	d, now := &disk{}, &clock{t: time.Unix(1e9, 0)}
	j := open(t, path, d, now, nil)
	for _, k := range []string{"k1", "k2"} { // one final record each
		c, _, err := begin(t, j, "a@x.com", k, "brain_write", fp("x"))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Finish([]byte(k), false); err != nil {
			t.Fatal(err)
		}
		c.Release()
	}
	j.Close()
	good, _ := os.ReadFile(path)

	remembers := func(j *Journal, key string) bool {
		c, a, err := begin(t, j, "a@x.com", key, "brain_write", fp("x"))
		if err != nil {
			t.Fatal(err)
		}
		if c != nil {
			c.Release()
		}
		return a != nil
	}
	// A tail torn by a crash: the last record is cut short.
	for _, cut := range []int{1, 5, 9, 20} {
		if err := os.WriteFile(path, good[:len(good)-cut], 0o600); err != nil {
			t.Fatal(err)
		}
		j := open(t, path, d, now, nil)
		if !remembers(j, "k1") || remembers(j, "k2") {
			t.Errorf("cut %d: want k1 kept and the torn k2 record dropped", cut)
		}
		j.Close()
		if b, _ := os.ReadFile(path); len(b) >= len(good) {
			t.Errorf("cut %d: the torn tail was not cut off (%d bytes)", cut, len(b))
		}
	}
	// Zeros after the last record (a crash after the file grew).
	os.WriteFile(path, append(bytes.Clone(good), make([]byte, 100)...), 0o600)
	j = open(t, path, d, now, nil)
	if !remembers(j, "k1") || !remembers(j, "k2") {
		t.Error("zero tail: records lost")
	}
	j.Close()
	// Damage in the middle: the first record's payload is flipped.
	bad := bytes.Clone(good)
	bad[durable.HeaderBytes+3] ^= 0xff
	os.WriteFile(path, bad, 0o600)
	j = open(t, path, d, now, nil)
	if remembers(j, "k1") {
		t.Error("a damaged record was used")
	}
	j.Close()
	if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) != 1 {
		t.Errorf("the damaged journal was not copied aside: %v", m)
	}
}

func TestCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	d, now := &disk{}, &clock{t: time.Unix(1e9, 0)}
	j := open(t, path, d, now, func(o *Options) { o.MaxKeys = 10 })
	big := string(bytes.Repeat([]byte("a"), 16<<10))
	for i := range 200 { // ~3 MiB of records, 10 keys remembered
		write(t, j, d, "a@x.com", fmt.Sprint("k", i), fp("x"), fmt.Sprint("m", i), big)
	}
	st := j.Stats()
	if st.FileBytes > 2*compactMin+2*st.Bytes {
		t.Fatalf("journal of %d bytes for %d remembered: never compacted", st.FileBytes, st.Bytes)
	}
	j.Close()
	j = open(t, path, d, now, func(o *Options) { o.MaxKeys = 10 })
	for i := 190; i < 200; i++ {
		if _, a, err := begin(t, j, "a@x.com", fmt.Sprint("k", i), "brain_write", fp("x")); err != nil || a == nil || string(a.Bytes) != big {
			t.Fatalf("k%d after compaction: %v", i, err)
		}
	}
}

func TestSecondProcessRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	d, now := &disk{}, &clock{t: time.Unix(1e9, 0)}
	open(t, path, d, now, nil)
	if _, err := Open(Options{Path: path, Settle: d.settle}); !errors.Is(err, ErrLocked) {
		t.Skipf("no flock on this platform or not refused: %v", err)
	}
}

func TestRecordLimits(t *testing.T) {
	d, now := &disk{}, &clock{t: time.Unix(1e9, 0)}
	j := open(t, filepath.Join(t.TempDir(), "j"), d, now, nil)
	c, _, err := begin(t, j, "a@x.com", "k", "brain_write", fp("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if err := c.Finish(make([]byte, MaxAnswerBytes+1), false); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge answer: %v, want ErrTooLarge", err)
	}
	if _, _, err := begin(t, j, "a@x.com", string(make([]byte, MaxKeyBytes+1)), "t", fp("x")); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge key: %v", err)
	}
}
