package store

import (
	"context"
	"encoding/json"

	"github.com/brainstem/brainstem/shard/store/sessionlog"
)

// AppendSession appends one line {"at","by","entry"} to
// sessions/<wing>/<session>.jsonl and fsyncs it (sessionlog.Logs.Append),
// returning the log's brain-relative path and the 1-based line number of
// the new line. hook, if set, is called before the line is written (see
// Hook).
func (s *Store) AppendSession(ctx context.Context, session, by string, entry json.RawMessage, hook Hook) (string, int, error) {
	if err := s.checkOpen(); err != nil {
		return "", 0, err
	}
	return s.sessions.Append(ctx, session, by, entry, func(p sessionlog.Pending) error {
		return runHook(hook, Intent{Mark: Mark{Op: MarkAppend, Path: p.Path, Hash: p.Hash, Offset: p.Offset, Size: p.Size}, Line: p.Line})
	})
}

// ListSessions returns the wing's session logs, most recently written
// first, up to limit of them after cursor (sessionlog.Logs.List).
func (s *Store) ListSessions(ctx context.Context, cursor string, limit int) (logs []sessionlog.Info, next string, err error) {
	if err := s.checkOpen(); err != nil {
		return nil, "", err
	}
	return s.sessions.List(ctx, cursor, limit)
}

// ReadSession returns up to limit entries of a session log after offset
// lines, and its total number of lines (sessionlog.Logs.Read).
func (s *Store) ReadSession(ctx context.Context, session string, offset, limit int) (entries []sessionlog.Entry, total int, err error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	return s.sessions.Read(ctx, session, offset, limit)
}
