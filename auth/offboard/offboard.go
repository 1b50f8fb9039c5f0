// Package offboard holds the sign-ins an operator ended: a list of people
// (canonical emails), each with a time before which every token, refresh
// token, cached session and console cookie of theirs is refused. The list
// is a small YAML file every gateway replica follows (Watch), typically a
// Kubernetes ConfigMap, plus entries an operator posted to one replica's
// admin endpoint; replicas share no database.
package offboard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/internal/smallfile"
)

// Limits of the file.
const (
	// MaxFileBytes bounds the file.
	MaxFileBytes = 1 << 20
	// MaxEntries bounds the entries of the file, and those posted to one
	// replica.
	MaxEntries = 10000
	// MaxReasonBytes bounds an entry's reason.
	MaxReasonBytes = 200
	// DefaultPollInterval is how often Watch looks at the file: well
	// inside the 5 seconds an ended sign-in may take to end everywhere.
	DefaultPollInterval = time.Second
)

// Errors.
var (
	// ErrBadFile reports a file that does not parse or breaks a rule; the
	// message names every problem.
	ErrBadFile = errors.New("offboard: bad ended sign-ins file")
	// ErrTooMany reports a list over MaxEntries.
	ErrTooMany = errors.New("offboard: too many ended sign-ins")
)

// Entry ends one person's sign-ins made before NotBefore.
type Entry struct {
	// Email is the person (canonicalised by auth.CanonicalEmail).
	Email string `yaml:"email" json:"email"`
	// NotBefore: tokens issued before it are refused. A sign-in after it
	// works again (remove the entry to let older ones work again too).
	NotBefore time.Time `yaml:"not_before" json:"not_before"`
	// Reason is logged with each refusal, e.g. "left 2026-12-01".
	Reason string `yaml:"reason,omitempty" json:"reason,omitempty"`
}

// file is the document: `ended:` and a list of entries.
type file struct {
	Ended []Entry `yaml:"ended"`
}

// Parse reads the file, strictly (unknown keys are refused), and reports
// every problem at once. An empty file is an empty list. Two entries for
// one email keep the later not_before.
func Parse(data []byte) ([]Entry, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrBadFile, len(data), MaxFileBytes)
	}
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %w (want `ended:` and a list of {email, not_before, reason})", ErrBadFile, err)
	}
	if len(f.Ended) > MaxEntries {
		return nil, fmt.Errorf("%w: %d entries, the limit is %d", ErrTooMany, len(f.Ended), MaxEntries)
	}
	var errs []error
	out := make([]Entry, 0, len(f.Ended))
	for i, e := range f.Ended {
		ce, err := Check(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("ended[%d]: %w", i, err))
			continue
		}
		out = append(out, ce)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrBadFile, errors.Join(errs...))
	}
	return merge(out), nil
}

// Check canonicalises an entry and reports what is wrong with it.
func Check(e Entry) (Entry, error) {
	email, err := auth.CanonicalEmail(e.Email)
	if err != nil {
		return Entry{}, fmt.Errorf("email %.100q: %w", e.Email, err)
	}
	if e.NotBefore.IsZero() {
		return Entry{}, fmt.Errorf("%s: not_before is required (RFC 3339, e.g. %s)", email, time.Now().UTC().Format(time.RFC3339))
	}
	if y := e.NotBefore.UTC().Year(); y < 1 || y > 9999 {
		return Entry{}, fmt.Errorf("%s: not_before %s is outside the years 0001 to 9999 in UTC (RFC 3339)", email, e.NotBefore.Format(time.RFC3339))
	}
	if len(e.Reason) > MaxReasonBytes || auth.HasControlChar(e.Reason) {
		return Entry{}, fmt.Errorf("%s: reason is over %d bytes or unprintable", email, MaxReasonBytes)
	}
	return Entry{Email: email, NotBefore: e.NotBefore.UTC(), Reason: e.Reason}, nil
}

// merge keeps one entry per email, the latest not_before, sorted by email.
func merge(in []Entry) []Entry {
	by := map[string]Entry{}
	for _, e := range in {
		if old, ok := by[e.Email]; !ok || e.NotBefore.After(old.NotBefore) {
			by[e.Email] = e
		}
	}
	out := slices.Collect(maps.Values(by))
	sort.Slice(out, func(i, j int) bool { return out[i].Email < out[j].Email })
	return out
}

// Marshal writes entries as the file Parse reads.
func Marshal(entries []Entry) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# Sign-ins ended by an operator (brainstem signins end): every token of these\n" +
		"# people issued before not_before is refused by every gateway replica.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(file{Ended: merge(entries)}); err != nil {
		return nil, fmt.Errorf("offboard: %w", err)
	}
	return b.Bytes(), nil
}

// List is the ended sign-ins a replica enforces: the file's entries and
// those posted to it, the later not_before winning. Safe for concurrent
// use; Ended is a map look-up under a read lock.
type List struct {
	mu     sync.RWMutex
	file   map[string]Entry
	posted map[string]Entry
	gen    uint64 // bumped on every change, for readiness signals
}

// NewList returns an empty list.
func NewList() *List { return &List{file: map[string]Entry{}, posted: map[string]Entry{}} }

// Ended reports whether a token of email issued at issued is refused, with
// the entry that refuses it. A zero issued (a token without iat) counts as
// issued before any not_before.
func (l *List) Ended(email string, issued time.Time) (Entry, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.effective(email)
	if !ok || !issued.Before(e.NotBefore) {
		return Entry{}, false
	}
	return e, true
}

// Refusal refuses an identity whose token was issued before an operator
// ended the person's sign-ins (Ended); nil when none did. The gateway and
// its authorization server both apply it, whichever verifier vouched.
func (l *List) Refusal(id auth.Identity) error {
	if e, ended := l.Ended(id.Email, id.IssuedAt); ended {
		return sso.NewError(sso.Expired, fmt.Sprintf("an operator ended the sign-ins of %s (%s); sign in again", id.Email, e.NotBefore.Format(time.RFC3339)), nil)
	}
	return nil
}

// effective is the later of the file's and the posted entry; mu held.
func (l *List) effective(email string) (Entry, bool) {
	f, inFile := l.file[email]
	p, posted := l.posted[email]
	switch {
	case inFile && posted:
		if p.NotBefore.After(f.NotBefore) {
			return p, true
		}
		return f, true
	case inFile:
		return f, true
	case posted:
		return p, true
	}
	return Entry{}, false
}

// SetFile replaces the file's entries and returns the emails whose
// effective not_before moved later (their sessions must be dropped).
func (l *List) SetFile(entries []Entry) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := make(map[string]Entry, len(entries))
	for _, e := range entries {
		next[e.Email] = e
	}
	var later []string
	for email, e := range next {
		old, had := l.effective(email)
		if !had || e.NotBefore.After(old.NotBefore) {
			later = append(later, email)
		}
	}
	l.file = next
	l.gen++
	slices.Sort(later)
	return later
}

// Post adds an entry an operator posted to this replica (kept in memory
// until the replica restarts: the file is what lasts). It reports whether
// the effective not_before moved later.
func (l *List) Post(e Entry) (bool, error) {
	e, err := Check(e)
	if err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.posted[e.Email]; !ok && len(l.posted) >= MaxEntries {
		return false, fmt.Errorf("%w: %d entries posted to this replica; add them to the file and restart it", ErrTooMany, len(l.posted))
	}
	old, had := l.effective(e.Email)
	if p, ok := l.posted[e.Email]; !ok || e.NotBefore.After(p.NotBefore) {
		l.posted[e.Email] = e
	}
	l.gen++
	return !had || e.NotBefore.After(old.NotBefore), nil
}

// Entries is the effective list, sorted by email.
func (l *List) Entries() []Entry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return merge(slices.AppendSeq(slices.Collect(maps.Values(l.file)), maps.Values(l.posted)))
}

// Generation counts the changes of the list.
func (l *List) Generation() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.gen
}

// Watcher follows the file: it reads it every interval and applies it
// when its content changed (a SHA-256 of the bytes, so a ConfigMap's
// symlink swap, an editor's rename and an in-place write are all seen,
// whatever their mtimes). A file that does not parse, or is missing, keeps
// the last good list and is logged.
type Watcher struct {
	path     string
	list     *List
	log      *slog.Logger
	onChange func(later []string)
	sum      [sha256.Size]byte
	loaded   bool
}

// NewWatcher loads path into list once: an error here (missing, bad) is
// the gateway's start failing with it. onChange receives the emails whose
// sign-ins just ended (later not_before), after list has them.
func NewWatcher(path string, list *List, log *slog.Logger, onChange func(later []string)) (*Watcher, error) {
	w := &Watcher{path: path, list: list, log: log, onChange: onChange}
	if err := w.check(); err != nil {
		return nil, err
	}
	return w, nil
}

// Run polls until ctx ends.
func (w *Watcher) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := w.check(); err != nil {
				w.log.Error("offboard: cannot read the ended sign-ins file; enforcing the last good list", "path", w.path, "err", err)
			}
		}
	}
}

// check reads the file and applies it if it changed.
func (w *Watcher) check() error {
	data, err := readFile(w.path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if w.loaded && sum == w.sum {
		return nil
	}
	entries, err := Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	w.sum, w.loaded = sum, true
	later := w.list.SetFile(entries)
	w.log.Info("offboard: ended sign-ins file applied", "path", w.path, "entries", len(entries), "newly_ended", len(later))
	if len(later) > 0 && w.onChange != nil {
		w.onChange(later)
	}
	return nil
}

func readFile(path string) ([]byte, error) {
	data, err := smallfile.Read(path, MaxFileBytes)
	if errors.Is(err, smallfile.ErrTooLarge) {
		err = fmt.Errorf("%w: %w", ErrBadFile, err)
	}
	if err != nil {
		return nil, fmt.Errorf("offboard: %w", err)
	}
	return data, nil
}
