package idempotency

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/internal/durable"
)

var update = flag.Bool("update", false, "rewrite testdata/journal.golden")

// TestV1Journal: a journal the release before issue 37 wrote, with
// big-endian frame headers (testdata/v1/journal, the same calls as
// journal.golden), reads record for record as the golden one, and a
// journal opened on it answers the same and converts the file to
// little-endian headers: the golden file's records, compacted.
func TestV1Journal(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "v1", "journal"))
	must(t, err)
	golden, err := os.ReadFile(filepath.Join("testdata", "journal.golden"))
	must(t, err)
	if !durable.Legacy(bytes.NewReader(old), MaxRecordBytes) {
		t.Fatal("the v1 journal is not recognised as legacy")
	}
	if durable.Legacy(bytes.NewReader(golden), MaxRecordBytes) {
		t.Fatal("the golden journal is taken for legacy")
	}
	var again []byte
	good, err := readRecords(bytes.NewReader(old), true, func(r *record) error {
		again, err = appendRecord(again, r)
		return err
	})
	if err != nil || good != int64(len(old)) || !bytes.Equal(again, golden) {
		t.Fatalf("read %d of %d bytes (%v); equal to the golden records: %v", good, len(old), err, bytes.Equal(again, golden))
	}
	path := filepath.Join(t.TempDir(), "j")
	must(t, os.WriteFile(path, old, 0o600))
	checkGoldenAnswers(t, path)
	now, err := os.ReadFile(path)
	must(t, err)
	if durable.Legacy(bytes.NewReader(now), MaxRecordBytes) {
		t.Fatal("the journal was not converted")
	}
	n := 0
	if good, err := readRecords(bytes.NewReader(now), false, func(*record) error { n++; return nil }); err != nil || good != int64(len(now)) || n == 0 {
		t.Fatalf("the converted journal reads %d records, %d of %d bytes: %v", n, good, len(now), err)
	}
}

// goldenEmail is an email of 254 bytes, the longest a canonical email is.
var goldenEmail = strings.Repeat("l", 64) + "@" + strings.Repeat("d", 185) + ".com"

// writeGoldenJournal writes, through the journal's API and at a fixed
// time, one record of every kind: a whole write committed and finished, an
// ingest whose first page committed and whose second aborted, an error
// answer, and an intent left open as by a crash.
func writeGoldenJournal(t *testing.T, path string) {
	t.Helper()
	d, now := &disk{}, &clock{t: time.Date(2026, 11, 30, 9, 0, 0, 123456789, time.UTC)}
	j := open(t, path, d, now, nil)
	c, _, err := begin(t, j, "ann@acme.com", "k1", "brain_write", fp("a"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Intend(Whole, []byte(`{"op":"create","path":"wiki/w/facts/a.md"}`), []byte(`{"id":"w/facts/a"}`)))
	d.land(`{"op":"create","path":"wiki/w/facts/a.md"}`)
	must(t, c.Commit())
	must(t, c.Finish([]byte(`{"id":"w/facts/a"}`), false))
	c.Release()

	now.Add(time.Second)
	c, _, err = begin(t, j, goldenEmail, "k2", "brain_ingest_raw", fp("b"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Intend(0, []byte("page-0"), []byte(`{"status":"created"}`)))
	must(t, c.Commit())
	must(t, c.Intend(1, []byte("page-1"), []byte(`{"status":"created"}`)))
	if applied, err := c.Settle(); err != nil || applied {
		t.Fatalf("settle: %v %v", applied, err)
	}
	c.Release()

	now.Add(time.Second)
	c, _, err = begin(t, j, "carol@acme.com", "k3", "brain_update", fp("c"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Finish([]byte(`{"error":{"code":"conflict"}}`), true))
	c.Release()

	now.Add(time.Second)
	c, _, err = begin(t, j, "dave@acme.com", "k4", "brain_write", fp("d"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Intend(Whole, []byte("left-open"), []byte(`{"id":"w/facts/d"}`)))
	c.Release() // no commit: the crash
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestGoldenJournal holds the journal's format: a journal written by an
// earlier version (testdata/journal.golden, little-endian frame headers
// since issue 37; testdata/v1/journal is the big-endian one before, see
// TestV1Journal) still loads and answers, and the same calls still write
// exactly its bytes.
func TestGoldenJournal(t *testing.T) {
	golden := filepath.Join("testdata", "journal.golden")
	path := filepath.Join(t.TempDir(), "j")
	writeGoldenJournal(t, path)
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		must(t, os.WriteFile(golden, written, 0o644))
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(written, want) {
		t.Errorf("the journal's bytes changed (%d bytes, golden %d): the format must not change", len(written), len(want))
	}

	// Every record decodes and encodes back to its bytes.
	var again []byte
	kinds := map[kind]int{}
	good, err := readRecords(bytes.NewReader(want), false, func(r *record) error {
		kinds[r.kind]++
		again, err = appendRecord(again, r)
		return err
	})
	if err != nil || good != int64(len(want)) || !bytes.Equal(again, want) {
		t.Fatalf("read %d of %d bytes (%v); re-encoded equal: %v", good, len(want), err, bytes.Equal(again, want))
	}
	if kinds[kindIntent] != 4 || kinds[kindCommit] != 2 || kinds[kindAbort] != 1 || kinds[kindFinal] != 2 {
		t.Fatalf("records by kind: %v", kinds)
	}

	// A journal opened on the golden file answers what was recorded.
	path = filepath.Join(t.TempDir(), "j")
	must(t, os.WriteFile(path, want, 0o600))
	checkGoldenAnswers(t, path)
}

// checkGoldenAnswers opens the journal at path, a copy of a golden one,
// and checks that it answers what writeGoldenJournal recorded.
func checkGoldenAnswers(t *testing.T, path string) {
	t.Helper()
	d := &disk{}
	d.land("left-open")
	j := open(t, path, d, &clock{t: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}, nil)
	for _, c := range []struct {
		email, key, tool string
		f                [32]byte
		answer           string
		isErr            bool
	}{
		{"ann@acme.com", "k1", "brain_write", fp("a"), `{"id":"w/facts/a"}`, false},
		{"carol@acme.com", "k3", "brain_update", fp("c"), `{"error":{"code":"conflict"}}`, true},
		{"dave@acme.com", "k4", "brain_write", fp("d"), `{"id":"w/facts/d"}`, false}, // settled at Open
	} {
		_, a, err := begin(t, j, c.email, c.key, c.tool, c.f)
		if err != nil || a == nil || string(a.Bytes) != c.answer || a.IsError != c.isErr {
			t.Errorf("%s %s: answer %+v, %v", c.email, c.key, a, err)
		}
	}
	c, a, err := begin(t, j, goldenEmail, "k2", "brain_ingest_raw", fp("b"))
	if err != nil || a != nil {
		t.Fatalf("ingest: %v %v", a, err)
	}
	defer c.Release()
	if parts := c.Parts(); len(parts) != 1 || string(parts[0]) != `{"status":"created"}` {
		t.Errorf("ingest parts %v, want page 0 only", parts)
	}
}
