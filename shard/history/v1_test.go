package history

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestV1PendingLog: a pending log the release before issue 37 wrote
// (testdata/v1/pending: two segments, a change landed and a change
// abandoned) is read whole, and today's code writes the same bytes.
func TestV1PendingLog(t *testing.T) {
	src := filepath.Join("testdata", "v1", "pending")
	dir := t.TempDir()
	names, err := segmentNames(src)
	if err != nil || len(names) != 2 {
		t.Fatalf("segments %v: %v", names, err)
	}
	var old []byte
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, b...)
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := readPendingLog(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.segments) != 2 || rec.maxSeq != 2 || !rec.landed[1] || !rec.abandoned[2] || len(rec.changes) != 2 {
		t.Fatalf("recovered %+v", rec)
	}
	var now []byte
	for _, r := range seedRecords() {
		if r.kind == kindChange && !reflect.DeepEqual(normalise(rec.changes[r.seq]), normalise(r)) {
			t.Errorf("change %d:\n%+v\n%+v", r.seq, rec.changes[r.seq], r)
		}
		now = appendRecord(now, r)
	}
	if !bytes.Equal(now, old) {
		t.Error("today's pending-log records differ from the previous release's: the format must not change")
	}
}

// TestV1Snapshot: a version-index snapshot the release before issue 37
// wrote (testdata/v1/history.snapshot) loads, and encodes back to the
// same bytes.
func TestV1Snapshot(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "v1", snapshotName))
	if err != nil {
		t.Fatal(err)
	}
	k := snapKey{"pay", "", "refs/heads/main"}
	ix, err := decodeSnapshot(bytes.NewReader(raw), k)
	if err != nil {
		t.Fatal(err)
	}
	if to, _, ok := ix.movedTo("wiki/pay/facts/a.md"); !ok || to != "wiki/pay/decisions/a.md" || ix.lastSeq != 2 || ix.head != sampleIndex().head {
		t.Fatalf("decoded %+v (moved to %q %v)", ix, to, ok)
	}
	if again := encodeSnapshotBytes(t, k, ix); !bytes.Equal(again, raw) {
		t.Error("the previous release's snapshot encodes to other bytes: the format must not change")
	}
}
