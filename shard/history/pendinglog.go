package history

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/internal/durable"
)

// segmentBytes is the size past which the pending log starts a new
// segment; a segment is deleted once every record in it is committed.
const segmentBytes = 4 << 20

// errLogBroken: a write to the pending log failed and could not be undone.
var errLogBroken = errors.New("history: the pending log is unusable after a failed write; restart the shard (the log is repaired when it opens)")

// pendingLog is the append-only log of changes not yet committed, in
// segment files under its directory (internal/durable's files: concurrent
// appends share one fsync).
type pendingLog struct {
	dir string
	log *slog.Logger

	mu     sync.Mutex // guards the fields below and the order of appends
	segs   []*segment // oldest first; the last is the one appended to
	next   uint64     // the next sequence number
	broken error
	closed bool
	buf    []byte
}

// segment is one file of the log.
type segment struct {
	path string
	f    *durable.File
	max  uint64 // the highest sequence number any record in it names
}

// recovered is what the log held at open.
type recovered struct {
	changes   map[uint64]*record
	landed    map[uint64]bool
	abandoned map[uint64]bool
	maxSeq    uint64
	segments  []string
}

// readPendingLog reads every segment of dir, cutting off tails torn by a
// crash; damage in the middle of a segment keeps what precedes it (and a
// copy of the file, for inspection).
func readPendingLog(dir string, log *slog.Logger) (*recovered, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	names, err := segmentNames(dir)
	if err != nil {
		return nil, err
	}
	rec := &recovered{changes: map[uint64]*record{}, landed: map[uint64]bool{}, abandoned: map[uint64]bool{}}
	for _, name := range names {
		path := filepath.Join(dir, name)
		rec.segments = append(rec.segments, path)
		if err := rec.readSegment(path, log); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// segmentNames lists the segment files of dir, oldest first.
func segmentNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("history: read the pending log: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".log") && !e.IsDir() {
			if _, err := strconv.ParseUint(strings.TrimSuffix(n, ".log"), 10, 64); err == nil {
				names = append(names, n)
			}
		} else if strings.HasPrefix(n, atomicfile.TempPrefix) {
			os.Remove(filepath.Join(dir, n))
		}
	}
	sort.Strings(names) // fixed-width numbers sort as they count
	return names, nil
}

func (rec *recovered) readSegment(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("history: open the pending log: %w", err)
	}
	defer f.Close()
	_, _, err = durable.Repair(f, path+".corrupt", log, func(r io.Reader) (int64, error) {
		return readRecords(r, func(r *record) {
			rec.maxSeq = max(rec.maxSeq, r.seq)
			switch r.kind {
			case kindChange:
				rec.changes[r.seq] = r
			case kindLanded:
				rec.landed[r.seq] = true
			case kindAbandon:
				rec.abandoned[r.seq] = true
			}
		})
	})
	return err
}

// openPendingLog starts a log appending to a new segment; the sequence
// numbers it assigns start at next. Segments already in dir are left to
// the caller (see dropSegments).
func openPendingLog(dir string, next uint64, log *slog.Logger) (*pendingLog, error) {
	l := &pendingLog{dir: dir, log: log, next: next}
	if err := l.rotateLocked(); err != nil {
		return nil, err
	}
	return l, nil
}

// rotateLocked makes the current segment durable and starts a new one.
func (l *pendingLog) rotateLocked() error {
	if n := len(l.segs); n > 0 {
		if err := l.segs[n-1].f.Sync(); err != nil {
			return fmt.Errorf("history: fsync the pending log: %w", err)
		}
	}
	path := filepath.Join(l.dir, fmt.Sprintf("%020d.log", l.next))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// A segment of that number survives from before (all committed or
		// dropped): continue after it in a fresh name.
		path = filepath.Join(l.dir, fmt.Sprintf("%020d.log", l.next+uint64(len(l.segs))+1))
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND|os.O_EXCL, 0o600)
	}
	if err != nil {
		return fmt.Errorf("history: start a pending-log segment: %w", err)
	}
	if err := atomicfile.SyncDir(l.dir); err != nil {
		f.Close()
		return fmt.Errorf("history: start a pending-log segment: %w", err)
	}
	l.segs = append(l.segs, &segment{path: path, f: durable.NewFile(f, 0)})
	return nil
}

// appendLocked writes one record to the current segment (rotating first
// when it is full) and returns the segment and its size just past the
// record (what its SyncTo takes). A failed write is cut off again; if that
// fails too the log is broken.
func (l *pendingLog) appendLocked(r *record) (*durable.File, int64, error) {
	if l.closed {
		return nil, 0, errClosed
	}
	if l.broken != nil {
		return nil, 0, l.broken
	}
	seg := l.segs[len(l.segs)-1]
	if seg.f.Size() >= segmentBytes {
		if err := l.rotateLocked(); err != nil {
			return nil, 0, err
		}
		seg = l.segs[len(l.segs)-1]
	}
	l.buf = appendRecord(l.buf[:0], r)
	if len(l.buf)-durable.HeaderBytes > maxRecordBytes {
		return nil, 0, fmt.Errorf("history: a change of %d bytes is over the %d-byte limit of one record", len(l.buf), maxRecordBytes)
	}
	end, err := seg.f.Append(l.buf)
	if err != nil {
		if errors.Is(err, durable.ErrBroken) {
			l.broken = fmt.Errorf("%w: %w", errLogBroken, err)
		}
		return nil, 0, fmt.Errorf("history: append to the pending log: %w", err)
	}
	seg.max = max(seg.max, r.seq)
	return seg.f, end, nil
}

// appendMarker appends a landed or abandon marker without waiting for it
// to be durable: recovery settles a lost marker from the files.
func (l *pendingLog) appendMarker(kind byte, seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, _, err := l.appendLocked(&record{kind: kind, seq: seq}); err != nil && !errors.Is(err, errClosed) {
		l.log.Warn("history: could not append a marker to the pending log; recovery will settle the change from the files", "seq", seq, "err", err)
	}
}

// dropThrough deletes the oldest segments whose every record is at or
// below done (committed or abandoned), never the current one.
func (l *pendingLog) dropThrough(done uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.segs) > 1 && l.segs[0].max <= done {
		s := l.segs[0]
		s.f.Close()
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.log.Warn("history: could not delete a committed pending-log segment", "path", s.path, "err", err)
			return
		}
		l.segs = l.segs[1:]
	}
}

// rotate starts a new segment, so that every older one can be dropped
// once its records are committed.
func (l *pendingLog) rotate() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errClosed
	}
	return l.rotateLocked()
}

// close syncs and closes the log, and deletes the oldest segments whose
// every record is at or below done.
func (l *pendingLog) close(done uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var first error
	drop := true
	for _, s := range l.segs {
		if err := s.f.Close(); err != nil && first == nil {
			first = err
		}
		if drop = drop && s.max <= done; drop {
			os.Remove(s.path)
		}
	}
	return first
}

// dropSegments deletes segment files (those read at open, once settled).
func dropSegments(paths []string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("history: delete a settled pending-log segment: %w", err)
		}
	}
	return nil
}
