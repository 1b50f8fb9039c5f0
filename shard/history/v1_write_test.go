package history

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteV1Files writes, with the code of the release before issue 37,
// the files the migration tests read: a pending log of two segments
// (testdata/v1/pending) and a version-index snapshot
// (testdata/v1/history.snapshot). Run it only at that release:
// BRAINSTEM_WRITE_V1=1 go test -run TestWriteV1Files ./shard/history
func TestWriteV1Files(t *testing.T) {
	if os.Getenv("BRAINSTEM_WRITE_V1") == "" {
		t.Skip("writes testdata/v1 with the previous release's code")
	}
	dir := filepath.Join("testdata", "v1", "pending")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := openPendingLog(dir, 1, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	recs := seedRecords()
	l.mu.Lock()
	for i, r := range recs {
		if i == 2 {
			if err := l.rotateLocked(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.appendLocked(r); err != nil {
			t.Fatal(err)
		}
	}
	l.mu.Unlock()
	if err := l.close(0); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	k := snapKey{"pay", "", "refs/heads/main"}
	raw := encodeSnapshotBytes(t, k, sampleIndex())
	buf.Write(raw)
	if err := os.WriteFile(filepath.Join("testdata", "v1", snapshotName), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
