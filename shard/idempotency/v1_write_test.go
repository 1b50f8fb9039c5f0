package idempotency

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteV1Files writes, with the code of the release before issue 37
// (big-endian frame headers), the journal the migration test reads
// (testdata/v1/journal). Run it only at that release:
// BRAINSTEM_WRITE_V1=1 go test -run TestWriteV1Files ./shard/idempotency
func TestWriteV1Files(t *testing.T) {
	if os.Getenv("BRAINSTEM_WRITE_V1") == "" {
		t.Skip("writes testdata/v1 with the previous release's code")
	}
	if err := os.MkdirAll(filepath.Join("testdata", "v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeGoldenJournal(t, filepath.Join("testdata", "v1", "journal"))
}
