package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/atomicfile"
)

// MaxSessionEntryBytes bounds one session_log entry (compact JSON).
const MaxSessionEntryBytes = 64 << 10

// maxSessCache bounds the per-session line count cache.
const maxSessCache = 4096

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
func (s *Store) encodeSessionLine(session, by string, entry json.RawMessage) ([]byte, error) {
	if err := brain.ValidSession(session); err != nil {
		return nil, invalid(err)
	}
	if by == "" {
		return nil, refuse(ErrInvalid, "a session line needs its author's email")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, entry); err != nil {
		return nil, refuse(ErrInvalid, "the session entry is not valid JSON: %v", err)
	}
	if compact.Len() == 0 || compact.Bytes()[0] != '{' {
		return nil, refuse(ErrInvalid, "the session entry must be a JSON object")
	}
	if compact.Len() > MaxSessionEntryBytes {
		return nil, refuse(ErrTooLarge, "the session entry is %d bytes, over the %d-byte limit", compact.Len(), MaxSessionEntryBytes)
	}
	line, err := json.Marshal(sessionLine{At: s.now().UTC().Format(time.RFC3339Nano), By: by, Entry: compact.Bytes()})
	if err != nil {
		return nil, fmt.Errorf("store: encode session line: %w", err)
	}
	return append(line, '\n'), nil
}

// AppendSession appends one line {"at","by","entry"} to
// sessions/<wing>/<session>.jsonl with O_APPEND and fsyncs it before
// returning. entry must be a JSON object of at most MaxSessionEntryBytes
// once compacted. It returns the log's brain-relative path and the 1-based
// line number of the new line. hook, if set, is called before the line is
// written (see Hook).
func (s *Store) AppendSession(ctx context.Context, session, by string, entry json.RawMessage, hook Hook) (string, int, error) {
	if err := s.checkOpen(); err != nil {
		return "", 0, err
	}
	line, err := s.encodeSessionLine(session, by, entry)
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

	unlock := s.locks.lock("s:" + session)
	defer unlock()
	_, statErr := os.Lstat(abs)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_APPEND|os.O_CREATE|oNoFollow, filePerm)
	if err != nil {
		return "", 0, fmt.Errorf("store: open %s: %w", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, fmt.Errorf("store: stat %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return "", 0, refuse(ErrInvalid, "%s is not a regular file", rel)
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
	sum := sha256.Sum256(line)
	mark := Mark{Op: MarkAppend, Path: rel, Hash: hex.EncodeToString(sum[:]), Offset: fi.Size(), Size: int64(len(line))}
	if err := runHook(hook, Intent{Mark: mark, Line: lines + 1}); err != nil {
		return "", 0, err
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
	s.sessMu.Lock()
	if len(s.sessLines) >= maxSessCache {
		clear(s.sessLines)
	}
	s.sessLines[session] = sessCount{size: fi.Size() + int64(len(line)), lines: lines}
	s.sessMu.Unlock()
	return rel, lines, nil
}

// countLines returns the number of complete lines in the first size bytes
// of f and whether the last line is unterminated.
func (s *Store) countLines(session string, f *os.File, size int64) (int, bool, error) {
	if size == 0 {
		return 0, false, nil
	}
	s.sessMu.Lock()
	c, ok := s.sessLines[session]
	s.sessMu.Unlock()
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
