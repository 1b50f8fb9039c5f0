package durable

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
)

// ErrBroken reports a file whose failed append could not be cut off
// again: it takes no more appends (Repair cuts the tail off at the next open).
var ErrBroken = errors.New("durable: the file is unusable after a failed write")

// File is an append-only file of frames. Appends are the caller's to
// order (it holds its own lock around Append); Sync and SyncTo may run
// beside them, and concurrent SyncTo calls share one fsync (group commit).
type File struct {
	f      *os.File
	size   atomic.Int64 // bytes in the file
	broken error        // guarded by the caller's lock, as Append is

	syncMu sync.Mutex // one fsync at a time; guards synced
	synced int64
}

// NewFile appends to f, which holds size good bytes (opened with
// os.O_APPEND).
func NewFile(f *os.File, size int64) *File {
	a := &File{f: f}
	a.size.Store(size)
	return a
}

// Size returns the bytes in the file.
func (a *File) Size() int64 { return a.size.Load() }

// Append writes b (whole frames) at the end of the file and returns the
// file's size after it. A failed write is cut off again; when that fails
// too the file is broken, and this and every later Append return an
// error wrapping ErrBroken.
func (a *File) Append(b []byte) (int64, error) {
	if a.broken != nil {
		return 0, a.broken
	}
	size := a.size.Load()
	if _, err := a.f.Write(b); err != nil {
		if terr := a.f.Truncate(size); terr != nil {
			a.broken = fmt.Errorf("%w: %w (and cutting it off: %w)", ErrBroken, err, terr)
			return 0, a.broken
		}
		return 0, err
	}
	size += int64(len(b))
	a.size.Store(size)
	return size, nil
}

// SyncTo makes every byte up to off durable, sharing one fsync among the
// callers that wait at the same time.
func (a *File) SyncTo(off int64) error {
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	if a.synced >= off {
		return nil
	}
	target := a.size.Load()
	if err := a.f.Sync(); err != nil {
		return err
	}
	a.synced = target
	return nil
}

// Sync makes everything appended so far durable.
func (a *File) Sync() error { return a.SyncTo(a.size.Load()) }

// Close syncs (if anything is not durable yet) and closes the file.
func (a *File) Close() error {
	err := a.Sync()
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Repair reads the frames of f, opened read-write at its start, with read
// (the caller's Read or ReadLegacy, decoding each payload), and repairs
// what a crash or a disk fault left, logging it: a torn tail is cut off;
// damage in the middle is cut off too, once a copy of the whole file is
// kept at aside. It returns the size of the good frames, and whether the
// file was damaged in the middle.
func Repair(f *os.File, aside string, log *slog.Logger, read func(io.Reader) (int64, error)) (good int64, damaged bool, err error) {
	path := f.Name()
	good, rerr := read(bufio.NewReaderSize(f, 256<<10))
	switch {
	case rerr == nil:
		return good, false, nil
	case errors.Is(rerr, ErrTorn):
		log.Warn("durable: cutting off a record torn by a crash", "path", path, "offset", good)
	case errors.Is(rerr, ErrCorrupt):
		damaged = true
		log.Error("durable: a file of records is damaged; keeping the records before the damage and a copy of the file", "path", path, "offset", good, "copy", aside, "err", rerr)
		if err := CopyFile(path, aside); err != nil {
			return good, true, fmt.Errorf("durable: copy the damaged %s aside: %w", path, err)
		}
	default:
		return good, false, fmt.Errorf("durable: read %s: %w", path, rerr)
	}
	if err := f.Truncate(good); err != nil {
		return good, damaged, fmt.Errorf("durable: cut %s to its good records: %w", path, err)
	}
	return good, damaged, f.Sync()
}

// CopyFile copies src to dst (created or truncated, mode 0600) and fsyncs
// the copy: how a damaged log is kept aside for inspection before it is
// cut.
func CopyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err = io.Copy(out, in); err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
