package idempotency

import (
	"bufio"
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/internal/durable"
)

// Whole is the part number of an intent whose answer is the whole call's
// answer (every tool but brain_ingest_raw, whose pages are parts 0…n-1).
const Whole = -1

// maxParts bounds a part number.
const maxParts = 1 << 16

// Defaults of Options.
const (
	DefaultTTL              = 24 * time.Hour
	DefaultMaxKeys          = 100_000
	DefaultMaxKeysPerCaller = 10_000
	DefaultMaxBytes         = 64 << 20
	// compactMin is the journal size below which it is never rewritten.
	compactMin = 1 << 20
	// entryOverhead approximates the memory of an entry beyond its bytes.
	entryOverhead = 160
)

// Errors of the journal.
var (
	// ErrConflict: the key was first used for another tool or with other
	// arguments. Errors wrapping it are *ConflictError.
	ErrConflict = errors.New("idempotency: key already used with other arguments")
	// ErrClosed: the journal was closed.
	ErrClosed = errors.New("idempotency: journal closed")
	// ErrUnusable: a write to the journal failed and could not be undone;
	// the shard must be restarted (the journal is repaired at open).
	ErrUnusable = errors.New("idempotency: journal unusable after a failed write")
	// ErrLocked: another process holds the journal.
	ErrLocked = errors.New("idempotency: journal in use by another process")
)

// ConflictError says how a key was first used.
type ConflictError struct {
	Key      string
	Tool     string    // the tool of the first use
	At       time.Time // when the key was last recorded
	SameTool bool      // the first use was the same tool, with other arguments
}

func (e *ConflictError) Error() string {
	if e.SameTool {
		return fmt.Sprintf("idempotency: key %q was used at %s with other arguments", e.Key, e.At.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("idempotency: key %q was used at %s for %s", e.Key, e.At.UTC().Format(time.RFC3339), e.Tool)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// Options configures Open.
type Options struct {
	// Path is the journal file; its directory is created (0700) if needed.
	Path string
	// TTL is how long a key is remembered after its last record (0 →
	// DefaultTTL).
	TTL time.Duration
	// MaxKeys bounds the keys remembered in all (0 → DefaultMaxKeys) and
	// MaxKeysPerCaller those of one caller (0 → DefaultMaxKeysPerCaller);
	// beyond them the oldest are forgotten first.
	MaxKeys, MaxKeysPerCaller int
	// MaxBytes bounds the memory held for answers and marks (0 →
	// DefaultMaxBytes); beyond it the oldest keys are forgotten first.
	MaxBytes int64
	// Settle tells whether the change an intent describes (its mark)
	// reached the disk, finishing any idempotent tail of it. It resolves
	// intents a crash or a failed write left open. Required.
	Settle func(mark []byte) (applied bool, err error)
	Now    func() time.Time
	Logger *slog.Logger
}

// Answer is a recorded answer, exactly as the first call produced it.
type Answer struct {
	Bytes   []byte
	IsError bool
}

// Journal remembers idempotency keys of one wing, per caller, durably in an
// append-only file. It is safe for concurrent use. See docs/tools.md
// ("Idempotency keys") for the protocol it implements.
type Journal struct {
	opt Options
	log *slog.Logger
	now func() time.Time
	dir string

	fileMu sync.RWMutex // exclusive while the file is swapped (compaction, Close)

	mu      sync.Mutex    // guards the fields below and the order of appends
	file    *durable.File // concurrent syncs share one fsync
	broken  error
	closed  bool
	entries map[string]*entry
	lru     *list.List            // *entry, oldest last record first
	callers map[string]*list.List // email → *entry of that caller, oldest first
	bytes   int64                 // memory held by entries (approximate)
	buf     []byte

	replays, conflicts, evictions atomic.Int64
}

// entry is what the journal remembers of one (caller, key).
type entry struct {
	id, email, key string
	tool           string
	fp             [32]byte
	at             time.Time // time of the last record
	hasFinal       bool
	final          Answer
	parts          map[int][]byte // committed parts (brain_ingest_raw pages)
	open           *intent        // an intent whose outcome is not known yet
	busy           chan struct{}  // non-nil while a Claim holds the entry
	elem, celem    *list.Element
	size           int64
}

type intent struct {
	part         int
	mark, answer []byte
}

func entryID(email, key string) string { return email + "\x00" + key }

// Open opens (creating) the journal at opt.Path, cuts off a record torn by
// a crash, replays the records, forgets what is past retention, settles
// the intents a crash left open and compacts the file when it has grown.
func Open(opt Options) (*Journal, error) {
	if opt.Path == "" {
		return nil, errors.New("idempotency: no journal path")
	}
	if opt.Settle == nil {
		return nil, errors.New("idempotency: no Settle function")
	}
	opt = opt.withDefaults()
	j := &Journal{
		opt: opt, log: opt.Logger, now: opt.Now, dir: filepath.Dir(opt.Path),
		entries: map[string]*entry{}, lru: list.New(), callers: map[string]*list.List{},
	}
	if err := os.MkdirAll(j.dir, 0o700); err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	f, err := os.OpenFile(opt.Path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	if err := durable.TryFlock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrLocked, opt.Path, err)
	}
	rewrite, err := j.load(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	j.settleOpen()
	if size := j.file.Size(); rewrite || size > compactMin && size > 2*j.bytes {
		if err := j.compact(); err != nil {
			j.Close()
			return nil, err
		}
	}
	return j, nil
}

func (opt Options) withDefaults() Options {
	if opt.TTL <= 0 {
		opt.TTL = DefaultTTL
	}
	if opt.MaxKeys <= 0 {
		opt.MaxKeys = DefaultMaxKeys
	}
	if opt.MaxKeysPerCaller <= 0 {
		opt.MaxKeysPerCaller = DefaultMaxKeysPerCaller
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultMaxBytes
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	opt.Logger = cmp.Or(opt.Logger, slog.New(slog.DiscardHandler))
	return opt
}

// load replays the records of f, cutting off a tail torn by a crash, or
// keeping what precedes damage in the middle (and a copy of the file);
// then the file must be rewritten, as must a journal written before issue
// 37 (big-endian frame headers), which is converted so. It leaves f open
// either way, as j.file when it succeeds.
func (j *Journal) load(f *os.File) (rewrite bool, err error) {
	path := j.opt.Path
	legacy := durable.Legacy(f, MaxRecordBytes)
	if legacy {
		j.log.Info("idempotency: converting a journal written before issue 37 (big-endian frame headers) to little-endian ones", "path", path)
	}
	aside := fmt.Sprintf("%s.corrupt-%d", path, j.now().Unix())
	good, damaged, err := durable.Repair(f, aside, j.log, func(r io.Reader) (int64, error) {
		return readRecords(r, legacy, func(r *record) error {
			j.replay(r)
			return nil
		})
	})
	if err != nil {
		return false, fmt.Errorf("idempotency: %w", err)
	}
	j.file = durable.NewFile(f, good)
	return damaged || legacy, nil
}

// settleOpen forgets what is past retention, then settles every intent a
// crash left open: its key records whether the write landed.
func (j *Journal) settleOpen() {
	j.mu.Lock()
	j.evictLocked(nil)
	var open []*entry
	for el := j.lru.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*entry); e.open != nil {
			open = append(open, e)
		}
	}
	j.mu.Unlock()
	for _, e := range open {
		c := j.claimLocked(e)
		applied, err := c.Settle()
		if err != nil {
			j.log.Error("idempotency: cannot tell whether a write left open by a crash landed; its key stays open", "email", e.email, "tool", e.tool, "err", err)
		} else {
			j.log.Info("idempotency: settled a write left open by a crash", "email", e.email, "tool", e.tool, "applied", applied)
		}
		c.Release()
	}
}

// replay applies one record read from the file to the memory state.
func (j *Journal) replay(r *record) {
	id := entryID(r.email, r.key)
	e := j.entries[id]
	fresh := func() {
		if e != nil {
			j.removeLocked(e)
		}
		e = j.insertLocked(r.email, r.key, r.tool, r.fp, r.at)
	}
	switch r.kind {
	case kindIntent:
		// An intent for a key whose entry differs or is final can only
		// follow an eviction of that entry: start over.
		if e == nil || e.tool != r.tool || e.fp != r.fp || e.hasFinal {
			fresh()
		}
		e.open = &intent{part: r.part, mark: r.mark, answer: r.answer}
	case kindCommit:
		if e == nil || e.open == nil {
			return
		}
		j.commitLocked(e)
	case kindAbort:
		if e == nil {
			return
		}
		e.open = nil
		if e.empty() {
			j.removeLocked(e)
			return
		}
	case kindFinal:
		if e == nil || e.tool != r.tool || e.fp != r.fp {
			fresh()
		}
		e.hasFinal, e.final, e.parts, e.open = true, Answer{Bytes: r.answer, IsError: r.isErr}, nil, nil
	case kindPart:
		if e == nil || e.tool != r.tool || e.fp != r.fp || e.hasFinal {
			fresh()
		}
		e.setPart(r.part, r.answer)
	}
	j.touchLocked(e, r.at)
}

func (e *entry) empty() bool { return !e.hasFinal && len(e.parts) == 0 && e.open == nil }

// insertLocked adds a new entry, newest.
func (j *Journal) insertLocked(email, key, tool string, fp [32]byte, at time.Time) *entry {
	e := &entry{id: entryID(email, key), email: email, key: key, tool: tool, fp: fp, at: at}
	j.entries[e.id] = e
	e.elem = j.lru.PushBack(e)
	cl := j.callers[email]
	if cl == nil {
		cl = list.New()
		j.callers[email] = cl
	}
	e.celem = cl.PushBack(e)
	j.resizeLocked(e)
	return e
}

func (j *Journal) removeLocked(e *entry) {
	if j.entries[e.id] != e {
		return
	}
	delete(j.entries, e.id)
	j.lru.Remove(e.elem)
	if cl := j.callers[e.email]; cl != nil {
		cl.Remove(e.celem)
		if cl.Len() == 0 {
			delete(j.callers, e.email)
		}
	}
	j.bytes -= e.size
}

// touchLocked records activity on e at t: it becomes the newest.
func (j *Journal) touchLocked(e *entry, t time.Time) {
	if j.entries[e.id] != e {
		return
	}
	e.at = t
	j.lru.MoveToBack(e.elem)
	j.callers[e.email].MoveToBack(e.celem)
	j.resizeLocked(e)
}

func (j *Journal) resizeLocked(e *entry) {
	n := int64(entryOverhead + len(e.id) + len(e.tool) + len(e.final.Bytes))
	for _, p := range e.parts {
		n += int64(len(p)) + 16
	}
	if e.open != nil {
		n += int64(len(e.open.mark) + len(e.open.answer))
	}
	j.bytes += n - e.size
	e.size = n
}

func (j *Journal) commitLocked(e *entry) {
	in := e.open
	e.open = nil
	if in.part == Whole {
		e.hasFinal, e.final, e.parts = true, Answer{Bytes: in.answer}, nil
		return
	}
	e.setPart(in.part, in.answer)
}

func (e *entry) setPart(part int, answer []byte) {
	if e.parts == nil {
		e.parts = map[int][]byte{}
	}
	e.parts[part] = answer
}

// evictLocked forgets entries past retention, then the oldest while a bound
// is exceeded, and, when adding for caller (non-nil), that caller's oldest
// beyond its own bound. Entries held by a claim are kept; an open intent
// is forgotten only past retention (with a warning), because forgetting it
// earlier could let a retry apply its write twice.
func (j *Journal) evictLocked(caller *string) {
	cutoff := j.now().Add(-j.opt.TTL)
	for el := j.lru.Front(); el != nil; {
		next := el.Next()
		e := el.Value.(*entry)
		over := j.lru.Len() > j.opt.MaxKeys || j.bytes > j.opt.MaxBytes
		expired := e.at.Before(cutoff)
		if !over && !expired {
			break
		}
		if e.busy == nil && (expired || e.open == nil) {
			if e.open != nil {
				j.log.Warn("idempotency: forgetting a key whose last write was never settled", "email", e.email, "tool", e.tool, "at", e.at)
			}
			j.removeLocked(e)
			j.evictions.Add(1)
		}
		el = next
	}
	if caller == nil {
		return
	}
	cl := j.callers[*caller]
	for el := cl.Front(); el != nil && cl.Len() > j.opt.MaxKeysPerCaller; {
		next := el.Next()
		if e := el.Value.(*entry); e.busy == nil && e.open == nil {
			j.removeLocked(e)
			j.evictions.Add(1)
		}
		el = next
	}
}

// Begin looks up (email, key) for a call of tool with arguments of
// fingerprint fp (see Fingerprint). It returns:
//
//   - the recorded answer, when the key already has one for the same tool
//     and arguments: the caller answers it again, unchanged;
//   - an error wrapping ErrConflict (a *ConflictError) when the key was
//     used for another tool or other arguments;
//   - otherwise a Claim: the caller runs the call and records what it did
//     through the claim, then releases it. A concurrent call with the same
//     key waits (within ctx) until the claim is released.
//
// An intent left open by a crash or a failed write is settled first.
func (j *Journal) Begin(ctx context.Context, email, key, tool string, fp [32]byte) (*Claim, *Answer, error) {
	if len(email) > brain.MaxEmailBytes || len(key) > MaxKeyBytes || len(tool) > MaxToolBytes {
		return nil, nil, fmt.Errorf("%w: email, key or tool name over its limit", ErrTooLarge)
	}
	id := entryID(email, key)
	for {
		j.mu.Lock()
		if err := j.usableLocked(); err != nil {
			j.mu.Unlock()
			return nil, nil, err
		}
		e := j.entries[id]
		if e != nil && e.busy != nil {
			ch := e.busy
			j.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		if e != nil && e.open == nil && e.at.Before(j.now().Add(-j.opt.TTL)) {
			j.removeLocked(e) // past retention: forgotten
			e = nil
		}
		if e == nil {
			e = j.insertLocked(email, key, tool, fp, j.now())
			c := j.claimLocked(e) // before evicting: a claimed entry stays
			j.evictLocked(&email)
			j.mu.Unlock()
			return c, nil, nil
		}
		if e.tool != tool || e.fp != fp {
			err := &ConflictError{Key: key, Tool: e.tool, At: e.at, SameTool: e.tool == tool}
			j.mu.Unlock()
			j.conflicts.Add(1)
			return nil, nil, err
		}
		if e.hasFinal {
			a := e.final
			j.mu.Unlock()
			j.replays.Add(1)
			return nil, &a, nil
		}
		c := j.claimLocked(e)
		open := e.open != nil
		j.mu.Unlock()
		if open {
			if _, err := c.Settle(); err != nil {
				c.Release()
				return nil, nil, fmt.Errorf("idempotency: cannot tell whether the last write with key %q landed: %w", key, err)
			}
			j.mu.Lock()
			final, a := e.hasFinal, e.final
			j.mu.Unlock()
			if final {
				c.Release()
				j.replays.Add(1)
				return nil, &a, nil
			}
		}
		return c, nil, nil
	}
}

// usableLocked is ErrClosed after Close, the write failure that broke the
// journal, else nil.
func (j *Journal) usableLocked() error {
	if j.closed {
		return ErrClosed
	}
	return j.broken
}

func (j *Journal) claimLocked(e *entry) *Claim {
	e.busy = make(chan struct{})
	return &Claim{j: j, e: e}
}

// Claim is the exclusive right to run one call with a key. Record what the
// call does with Intend (before a change), Commit (after it landed), Settle
// (after a change failed, to learn whether it landed anyway) and Finish
// (the call's answer), then Release.
type Claim struct {
	j        *Journal
	e        *entry
	released bool
}

// Parts returns the answers of the parts committed under this key so far
// (brain_ingest_raw pages written by an earlier, incomplete call). The map
// must not be modified.
func (c *Claim) Parts() map[int][]byte {
	c.j.mu.Lock()
	defer c.j.mu.Unlock()
	return maps.Clone(c.e.parts)
}

// Intend records, durably (fsync) before it returns, that part (Whole, or
// a page number) is about to be changed as mark describes, and the answer
// it has if the change lands. It must not be called while another intent
// of the claim is open.
func (c *Claim) Intend(part int, mark, answer []byte) error {
	if part < Whole || part >= maxParts {
		return fmt.Errorf("idempotency: part %d out of range", part)
	}
	e := c.e
	if e.open != nil {
		return errors.New("idempotency: an intent is already open")
	}
	r := &record{kind: kindIntent, email: e.email, key: e.key, tool: e.tool, fp: e.fp, part: part, mark: mark, answer: answer}
	return c.j.append(r, true, func() { e.open = &intent{part: part, mark: mark, answer: answer} })
}

// Commit records that the open intent's change landed: its answer becomes
// the key's answer (Whole) or a committed part. The record is written at
// once (it survives the process being killed) and made durable by the
// journal's next fsync: until then a power loss can cost it, and the intent
// is then settled again from the disk at the next start.
func (c *Claim) Commit() error {
	e := c.e
	if e.open == nil {
		return errors.New("idempotency: no open intent to commit")
	}
	return c.j.append(&record{kind: kindCommit, email: e.email, key: e.key}, false, func() { c.j.commitLocked(e) })
}

// Settle learns whether the open intent's change landed (Options.Settle)
// and records the outcome: committed if it did, aborted if not. With no
// open intent it reports false. On an error the intent stays open.
func (c *Claim) Settle() (bool, error) {
	e := c.e
	c.j.mu.Lock()
	in := e.open
	c.j.mu.Unlock()
	if in == nil {
		return false, nil
	}
	applied, err := c.j.opt.Settle(in.mark)
	if err != nil {
		return false, err
	}
	if applied {
		return true, c.Commit()
	}
	return false, c.j.append(&record{kind: kindAbort, email: e.email, key: e.key}, false, func() { e.open = nil })
}

// Finish records, durably before it returns, the call's answer: every later
// call with the key and the same arguments gets these bytes.
func (c *Claim) Finish(answer []byte, isErr bool) error {
	e := c.e
	r := &record{kind: kindFinal, email: e.email, key: e.key, tool: e.tool, fp: e.fp, isErr: isErr, answer: answer}
	return c.j.append(r, true, func() {
		e.hasFinal, e.final, e.parts, e.open = true, Answer{Bytes: answer, IsError: isErr}, nil, nil
	})
}

// Release ends the claim and wakes a call waiting for the key. A key that
// recorded nothing is forgotten.
func (c *Claim) Release() {
	if c.released {
		return
	}
	c.released = true
	j, e := c.j, c.e
	j.mu.Lock()
	close(e.busy)
	e.busy = nil
	if e.empty() {
		j.removeLocked(e)
	}
	j.mu.Unlock()
}

// append writes r at the end of the journal and applies it to the memory
// state (apply, under the lock, only once the record is written), then
// fsyncs if sync (concurrent appends share one fsync). A failed write is
// cut off again; if that fails too the journal refuses every later call
// (ErrUnusable) until the shard restarts.
func (j *Journal) append(r *record, sync bool, apply func()) error {
	j.fileMu.RLock()
	file, end, grown, err := j.write(r, apply)
	if err == nil && sync {
		if err = file.SyncTo(end); err != nil {
			err = fmt.Errorf("idempotency: sync the journal: %w", err)
		}
	}
	j.fileMu.RUnlock()
	if err == nil && grown {
		if err := j.compact(); err != nil {
			j.log.Error("idempotency: compacting the journal failed; it keeps growing until the next try", "err", err)
		}
	}
	return err
}

// write is append's write, taking j.mu: it returns the file and its
// size past the record, and whether the file has grown enough to compact.
func (j *Journal) write(r *record, apply func()) (*durable.File, int64, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usableLocked(); err != nil {
		return nil, 0, false, err
	}
	r.at = j.now()
	buf, err := appendRecord(j.buf[:0], r)
	if err != nil {
		return nil, 0, false, err
	}
	if cap(buf) <= 64<<10 {
		j.buf = buf[:0]
	}
	end, err := j.file.Append(buf)
	if err != nil {
		if errors.Is(err, durable.ErrBroken) {
			j.broken = fmt.Errorf("%w: %w", ErrUnusable, err)
			j.log.Error("idempotency: the journal cannot be written nor repaired; restart the shard", "err", j.broken)
		}
		return nil, 0, false, fmt.Errorf("idempotency: write the journal: %w", err)
	}
	apply()
	if e := j.entries[entryID(r.email, r.key)]; e != nil {
		j.touchLocked(e, r.at)
	}
	return j.file, end, end > compactMin && end > 2*j.bytes+compactMin, nil
}

// compact rewrites the journal with only what is remembered: a temporary
// file, fsync, rename over the journal, fsync of the directory (package
// atomicfile). The new file is opened and locked before it replaces the
// journal, so no other process can take the journal in between.
func (j *Journal) compact() error {
	defer j.lockFile()()
	if j.closed {
		return ErrClosed
	}
	j.evictLocked(nil)
	tmp, err := atomicfile.New(j.opt.Path, 0o600)
	if err != nil {
		return fmt.Errorf("idempotency: compact: %w", err)
	}
	defer tmp.Cleanup()
	w := bufio.NewWriterSize(tmp, 256<<10)
	size, err := j.writeRemembered(w)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return fmt.Errorf("idempotency: compact: %w", err)
	}
	f, err := os.OpenFile(tmp.Name(), os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("idempotency: compact: %w", err)
	}
	if err = durable.TryFlock(f); err == nil {
		err = tmp.Replace()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("idempotency: compact: %w", err)
	}
	old := j.file
	j.file = durable.NewFile(f, size)
	old.Close()
	j.log.Debug("idempotency: journal compacted", "bytes", size, "keys", len(j.entries))
	return nil
}

// writeRemembered writes a record for everything remembered, oldest
// first, and returns the bytes written. j.mu is held.
func (j *Journal) writeRemembered(w io.Writer) (int64, error) {
	var buf []byte
	var size int64
	put := func(r *record) error {
		var err error
		if buf, err = appendRecord(buf[:0], r); err != nil {
			return err
		}
		size += int64(len(buf))
		_, err = w.Write(buf)
		return err
	}
	var err error
	for el := j.lru.Front(); el != nil && err == nil; el = el.Next() {
		e := el.Value.(*entry)
		base := record{at: e.at, email: e.email, key: e.key, tool: e.tool, fp: e.fp}
		if e.hasFinal {
			r := base
			r.kind, r.isErr, r.answer = kindFinal, e.final.IsError, e.final.Bytes
			err = put(&r)
			continue
		}
		for p, a := range e.parts {
			r := base
			r.kind, r.part, r.answer = kindPart, p, a
			if err = put(&r); err != nil {
				break
			}
		}
		if e.open != nil && err == nil {
			r := base
			r.kind, r.part, r.mark, r.answer = kindIntent, e.open.part, e.open.mark, e.open.answer
			err = put(&r)
		}
	}
	return size, err
}

// lockFile takes fileMu, then mu, for what replaces or closes the file;
// it returns their unlock.
func (j *Journal) lockFile() (unlock func()) {
	j.fileMu.Lock()
	j.mu.Lock()
	return func() {
		j.mu.Unlock()
		j.fileMu.Unlock()
	}
}

// Close syncs and closes the journal. Calls in flight fail with ErrClosed.
func (j *Journal) Close() error {
	defer j.lockFile()()
	if j.closed {
		return nil
	}
	j.closed = true
	return j.file.Close()
}

// TTL returns how long a key is remembered after its last record.
func (j *Journal) TTL() time.Duration { return j.opt.TTL }

// Stats are counters and sizes of a journal, for metrics.
type Stats struct {
	Keys      int   // keys remembered
	Bytes     int64 // memory they hold (approximate)
	FileBytes int64 // size of the journal file
	Replays   int64 // calls answered with a recorded answer
	Conflicts int64 // calls refused: key reused with other arguments
	Evictions int64 // keys forgotten before their retention ended (bounds)
}

// Stats returns the journal's current figures.
func (j *Journal) Stats() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return Stats{Keys: len(j.entries), Bytes: j.bytes, FileBytes: j.file.Size(),
		Replays: j.replays.Load(), Conflicts: j.conflicts.Load(), Evictions: j.evictions.Load()}
}
