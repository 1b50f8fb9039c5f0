// Package smallfile reads the small files a process is configured with
// (keys, policies, settings, sign-ins, certificates) without trusting
// their size: one read of at most the limit plus a byte.
package smallfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge: the file holds more than the limit.
var ErrTooLarge = errors.New("file too large")

// Read returns the content of the file at path, or an error wrapping
// ErrTooLarge when it holds more than limit bytes. Failing to open or read
// it returns os's error, which names the path (errors.Is(err,
// fs.ErrNotExist) tells a missing file).
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w: over %d bytes", path, ErrTooLarge, limit)
	}
	return b, nil
}
