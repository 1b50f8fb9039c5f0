// Package sessionlog keeps a wing's session logs,
// sessions/<wing>/<session>.jsonl: append-only files of one JSON line per
// entry {"at","by","entry"}, appended with O_APPEND and fsynced before the
// call returns, listed most recently written first, and read by line
// number. A line a crash cut short is ended by the next append, so line
// numbers stay those of the file.
package sessionlog

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/shard/store/diskfile"
	"github.com/brainstem/brainstem/shard/store/keylock"
	"github.com/brainstem/brainstem/shard/store/refusal"
)

// MaxEntryBytes bounds one session_log entry (compact JSON).
const MaxEntryBytes = 64 << 10

// maxSessCache bounds the per-session line count cache.
const maxSessCache = 4096

// Logs is the session logs of one wing. It is safe for concurrent use.
type Logs struct {
	wing  string
	now   func() time.Time
	abs   func(rel string) (string, error) // a brain-relative path, resolved safely
	dirOf func(rel string) (string, error) // one of the wing's directories, refused when replaced
	locks keylock.Set                      // one appender per log

	mu    sync.Mutex
	lines map[string]sessCount // session → line count at a known size
}

// New returns the session logs of wing, stamped by now's clock; abs
// resolves a brain-relative path inside the brain (refusing one outside)
// and dirOf one of the wing's directories (refusing one replaced by a
// symlink or a file).
func New(wing string, now func() time.Time, abs, dirOf func(rel string) (string, error)) *Logs {
	return &Logs{wing: wing, now: now, abs: abs, dirOf: dirOf, lines: make(map[string]sessCount)}
}

// sessCount caches a session log's line count at a given size, so appends
// do not re-read the whole log.
type sessCount struct {
	size  int64
	lines int
}

// sessionLine is one line of a session log, in field order.
type sessionLine struct {
	At    string          `json:"at"`
	By    string          `json:"by"`
	Entry json.RawMessage `json:"entry"`
}

// encodeSessionLine checks a session entry and encodes its line, newline
// included.
func (s *Logs) encodeLine(session, by string, entry json.RawMessage) ([]byte, error) {
	if err := brain.ValidSession(session); err != nil {
		return nil, refusal.Invalid(err)
	}
	if by == "" {
		return nil, refusal.Refuse(refusal.ErrInvalid, "a session line needs its author's email")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, entry); err != nil {
		return nil, refusal.Refuse(refusal.ErrInvalid, "the session entry is not valid JSON: %v", err)
	}
	if compact.Len() == 0 || compact.Bytes()[0] != '{' {
		return nil, refusal.Refuse(refusal.ErrInvalid, "the session entry must be a JSON object")
	}
	if compact.Len() > MaxEntryBytes {
		return nil, refusal.Refuse(refusal.ErrTooLarge, "the session entry is %d bytes, over the %d-byte limit", compact.Len(), MaxEntryBytes)
	}
	line, err := json.Marshal(sessionLine{At: s.now().UTC().Format(time.RFC3339Nano), By: by, Entry: compact.Bytes()})
	if err != nil {
		return nil, fmt.Errorf("store: encode session line: %w", err)
	}
	return append(line, '\n'), nil
}

// Pending is an append about to be made durable, as handed to the
// callback of Append: the log's brain-relative path, the sha256 (hex) of
// the bytes appended, where they go, and the 1-based number of the line.
type Pending struct {
	Path         string
	Hash         string
	Offset, Size int64
	Line         int
}

// Append appends one line {"at","by","entry"} to
// sessions/<wing>/<session>.jsonl with O_APPEND and fsyncs it before
// returning. entry must be a JSON object of at most MaxEntryBytes once
// compacted. It returns the log's brain-relative path and the 1-based
// line number of the new line. before, if set, is called under the log's
// lock right before the line is written; its error cancels the append
// and is returned as it is.
func (s *Logs) Append(ctx context.Context, session, by string, entry json.RawMessage, before func(Pending) error) (string, int, error) {
	line, err := s.encodeLine(session, by, entry)
	if err != nil {
		return "", 0, err
	}
	rel := brain.SessionPath(s.wing, session)
	abs, err := s.abs(rel)
	if err != nil {
		return "", 0, err
	}
	if err := ctx.Err(); err != nil {
		return "", 0, fmt.Errorf("store: %w", err)
	}

	defer s.locks.Lock("s:" + session)()
	_, statErr := os.Lstat(abs)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_APPEND|os.O_CREATE|diskfile.NoFollow, diskfile.Perm)
	if err != nil {
		return "", 0, fmt.Errorf("store: open %s: %w", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, fmt.Errorf("store: stat %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return "", 0, refusal.Refuse(refusal.ErrInvalid, "%s is not a regular file", rel)
	}
	lines, torn, err := s.countLines(session, f, fi.Size())
	if err != nil {
		return "", 0, fmt.Errorf("store: read %s: %w", rel, err)
	}
	if torn {
		// A crash interrupted an unacknowledged append: end that line so
		// ours starts on its own.
		line = append([]byte{'\n'}, line...)
		lines++
	}
	if before != nil {
		sum := sha256.Sum256(line)
		if err := before(Pending{Path: rel, Hash: hex.EncodeToString(sum[:]), Offset: fi.Size(), Size: int64(len(line)), Line: lines + 1}); err != nil {
			return "", 0, err
		}
	}
	if _, err := f.Write(line); err != nil {
		return "", 0, fmt.Errorf("store: append to %s: %w", rel, err)
	}
	if err := f.Sync(); err != nil {
		return "", 0, fmt.Errorf("store: sync %s: %w", rel, err)
	}
	if created {
		if err := atomicfile.SyncDir(filepath.Dir(abs)); err != nil {
			return "", 0, fmt.Errorf("store: sync %s: %w", rel, err)
		}
	}
	lines++
	s.mu.Lock()
	if len(s.lines) >= maxSessCache {
		clear(s.lines)
	}
	s.lines[session] = sessCount{size: fi.Size() + int64(len(line)), lines: lines}
	s.mu.Unlock()
	return rel, lines, nil
}

// countLines returns the number of complete lines in the first size bytes
// of f and whether the last line is unterminated.
func (s *Logs) countLines(session string, f *os.File, size int64) (int, bool, error) {
	if size == 0 {
		return 0, false, nil
	}
	s.mu.Lock()
	c, ok := s.lines[session]
	s.mu.Unlock()
	if ok && c.size == size {
		return c.lines, false, nil
	}
	n := 0
	last := byte('\n')
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10)
	buf := make([]byte, 64<<10)
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, false, err
		}
	}
	return n, last != '\n', nil
}

// Info describes one session log of the wing.
type Info struct {
	Session   string
	Path      string    // sessions/<wing>/<session>.jsonl
	Size      int64     // bytes
	Modified  time.Time // the file's modification time (the listing's order)
	UpdatedAt string    // when its last line was logged (else the modification time)
	LastBy    string    // the author of the last line ("" when unreadable)
}

// List returns the wing's session logs, most recently written
// first (then by name), up to limit of them after the cursor returned by a
// previous call ("" = from the start); next is "" after the last one. It
// stops with ctx's error when ctx ends (every log costs an lstat).
func (s *Logs) List(ctx context.Context, cursor string, limit int) (logs []Info, next string, err error) {
	dir, err := s.dirOf(brain.WingDir(brain.TopSessions, s.wing))
	if err != nil {
		return nil, "", fmt.Errorf("store: list sessions: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", fmt.Errorf("store: list sessions: %w", err)
	}
	var all []Info
	for i, e := range entries {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, "", fmt.Errorf("store: list sessions: %w", ctx.Err())
		}
		name, ok := strings.CutSuffix(e.Name(), brain.SessionExt)
		if !ok || !e.Type().IsRegular() || brain.ValidSession(name) != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		all = append(all, Info{Session: name, Path: brain.SessionPath(s.wing, name), Size: fi.Size(), Modified: fi.ModTime().UTC()})
	}
	slices.SortFunc(all, func(a, b Info) int {
		return cmp.Or(b.Modified.Compare(a.Modified), cmp.Compare(a.Session, b.Session))
	})
	start, err := sessionCursor(all, cursor)
	if err != nil {
		return nil, "", err
	}
	end := min(start+limit, len(all))
	logs = all[start:end]
	for i := range logs {
		last := s.lastLine(filepath.Join(dir, logs[i].Session+brain.SessionExt))
		logs[i].LastBy, logs[i].UpdatedAt = last.By, cmp.Or(last.At, logs[i].Modified.Format(time.RFC3339Nano))
	}
	if end < len(all) { // the cursor: the modification time (Unix nanoseconds) and the name of the page's last log
		next = strconv.FormatInt(all[end-1].Modified.UnixNano(), 10) + "." + all[end-1].Session
	}
	return logs, next, nil
}

func sessionCursor(all []Info, cursor string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	ts, name, ok := strings.Cut(cursor, ".")
	ns, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || brain.ValidSession(name) != nil {
		return 0, refusal.Refuse(refusal.ErrInvalid, "cursor %q is not one this listing returned: pass next_cursor as it was, or omit it", cursor)
	}
	after := Info{Session: name, Modified: time.Unix(0, ns).UTC()}
	return sort.Search(len(all), func(i int) bool {
		return cmp.Or(after.Modified.Compare(all[i].Modified), cmp.Compare(all[i].Session, after.Session)) > 0
	}), nil
}

// lastLine reads a log's last complete line (zero when unreadable).
func (s *Logs) lastLine(abs string) sessionLine {
	f, fi, err := diskfile.Open(abs, math.MaxInt)
	if err != nil {
		return sessionLine{}
	}
	defer f.Close()
	tail := min(fi.Size(), MaxEntryBytes+4096)
	buf := make([]byte, tail)
	if _, err := f.ReadAt(buf, fi.Size()-tail); err != nil && !errors.Is(err, io.EOF) {
		return sessionLine{}
	}
	buf = bytes.TrimRight(buf, "\n")
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[i+1:]
	}
	var l sessionLine
	if json.Unmarshal(buf, &l) != nil {
		return sessionLine{}
	}
	return l
}

// Entry is one line of a session log.
type Entry struct {
	Line  int             // 1-based line number
	At    string          // when it was logged
	By    string          // its author's email
	Entry json.RawMessage // the logged object; nil when the line is not a session line
}

// Read returns up to limit entries of a session log starting after
// offset lines (0: from the first), and the total number of lines. A line
// that is not a session line (an edit by hand, an append a crash cut
// short) is returned with a nil Entry, so line numbers stay those of the
// file. A missing log is ErrNotFound.
func (s *Logs) Read(ctx context.Context, session string, offset, limit int) (entries []Entry, total int, err error) {
	if err := brain.ValidSession(session); err != nil {
		return nil, 0, refusal.Invalid(err)
	}
	rel := brain.SessionPath(s.wing, session)
	abs, err := s.abs(rel)
	if err != nil {
		return nil, 0, err
	}
	f, _, err := diskfile.Open(abs, math.MaxInt)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, refusal.Refuse(refusal.ErrNotFound, "no session log %q in wing %q (%s)", session, s.wing, rel)
		}
		return nil, 0, fmt.Errorf("store: read %s: %w", rel, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return nil, 0, fmt.Errorf("store: %w", ctx.Err())
		}
		line, err := readLine(r, MaxEntryBytes+4096)
		if errors.Is(err, io.EOF) && line == nil {
			return entries, n - 1, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, fmt.Errorf("store: read %s: %w", rel, err)
		}
		if n > offset && len(entries) < limit {
			entries = append(entries, entryOf(n, line))
		}
	}
}

// readLine reads one line without its newline, keeping at most max bytes
// of it (a longer line is not a session line: it is returned cut).
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line) < max {
			line = append(line, chunk[:min(len(chunk), max-len(line))]...)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		}
		return nil, err
	}
}

func entryOf(n int, line []byte) Entry {
	var l sessionLine
	if json.Unmarshal(line, &l) != nil || len(l.Entry) == 0 || l.Entry[0] != '{' {
		return Entry{Line: n}
	}
	return Entry{Line: n, At: l.At, By: l.By, Entry: bytes.Clone(l.Entry)}
}

// Landed reports whether the append p describes is in the log at abs: the
// bytes at its offset have its hash. A missing or shorter log means it did
// not land; errors are failures to read (the answer is then unknown).
func Landed(abs string, p Pending) (bool, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|diskfile.NoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: settle %s: %w", p.Path, err)
	}
	defer f.Close()
	if p.Size <= 0 || p.Size > MaxEntryBytes+1<<10 || p.Offset < 0 {
		return false, fmt.Errorf("store: settle %s: append of %d bytes at %d: %w", p.Path, p.Size, p.Offset, refusal.ErrInvalid)
	}
	buf := make([]byte, p.Size)
	if _, err := f.ReadAt(buf, p.Offset); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil // the log is shorter: the line never landed
		}
		return false, fmt.Errorf("store: settle %s: %w", p.Path, err)
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:]) == p.Hash, nil
}
