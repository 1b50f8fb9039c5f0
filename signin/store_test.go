package signin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func testRecord(mcpURL string) *Record {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	return &Record{
		Version: RecordVersion, MCPURL: mcpURL, Issuer: "https://brain.acme.com", TokenEndpoint: "https://brain.acme.com/token",
		ClientID: "bsc1.client", AccessToken: "access.token.sig", TokenType: "Bearer", ExpiresAt: now.Add(time.Hour),
		RefreshToken: "bsr1.refresh", Scope: "mcp", Email: "alice@example.com", SignedInAt: now,
	}
}

func TestDecodeRecord(t *testing.T) {
	good, err := EncodeRecord(testRecord("https://brain.acme.com/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeRecord(good)
	if err != nil {
		t.Fatal(err)
	}
	if r.AccessToken != "access.token.sig" || r.RefreshToken != "bsr1.refresh" || !r.ExpiresAt.Equal(testRecord("x").ExpiresAt) {
		t.Errorf("decoded %+v", r)
	}
	mutate := func(f func(*Record)) []byte {
		r := testRecord("https://brain.acme.com/mcp")
		f(r)
		b, _ := json.Marshal(r) // unchecked, to build bad files
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"not JSON", []byte("{"), "unusable"},
		{"trailing data", append(append([]byte{}, good...), []byte("{}")...), "trailing"},
		{"too large", []byte(`{"pad":"` + strings.Repeat("a", MaxRecordBytes) + `"}`), "limit"},
		{"version", mutate(func(r *Record) { r.Version = 2 }), "version 2"},
		{"no access token", mutate(func(r *Record) { r.AccessToken = "" }), "access_token is missing"},
		{"header injection", mutate(func(r *Record) { r.AccessToken = "a\r\nX-Evil: 1" }), "access_token is not a token"},
		{"http token endpoint", mutate(func(r *Record) { r.TokenEndpoint = "http://evil.example.com/token" }), "plain http"},
		{"token type", mutate(func(r *Record) { r.TokenType = "DPoP" }), "not Bearer"},
		{"mcp url", mutate(func(r *Record) { r.MCPURL = "ftp://x" }), "mcp_url"},
		{"control in email", mutate(func(r *Record) { r.Email = "a\x1b[2J@b.c" }), "control"},
	}
	for _, tt := range tests {
		_, err := DecodeRecord(tt.in)
		if !errors.Is(err, ErrRecord) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want ErrRecord mentioning %q", tt.name, err, tt.want)
		}
	}
}

// FuzzDecodeRecord: any content decodes or fails with ErrRecord, and a
// decoded record encodes and decodes to itself.
func FuzzDecodeRecord(f *testing.F) {
	good, _ := EncodeRecord(testRecord("https://brain.acme.com/mcp"))
	f.Add(good)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"mcp_url":"http://127.0.0.1:1/mcp","issuer":"http://127.0.0.1:1","token_endpoint":"http://[::1]:2/t","client_id":"c","access_token":"a","token_type":"bearer","signed_in_at":"2026-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			if !errors.Is(err, ErrRecord) {
				t.Fatalf("error %v is not ErrRecord", err)
			}
			return
		}
		enc, err := EncodeRecord(r)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		r2, err := DecodeRecord(enc)
		if err != nil {
			t.Fatalf("an encoded record does not decode: %v", err)
		}
		if r2.AccessToken != r.AccessToken || r2.RefreshToken != r.RefreshToken || r2.MCPURL != r.MCPURL || !r2.ExpiresAt.Equal(r.ExpiresAt) {
			t.Fatalf("round trip changed %+v into %+v", r, r2)
		}
	})
}

func TestStoreSaveLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "brainstem", "signins")
	s := &Store{Dir: dir}
	const u = "https://brain.acme.com/mcp"
	if _, err := s.Load(u); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("Load before any sign-in: %v, want ErrNotSignedIn", err)
	}
	if err := s.Save(testRecord(u)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Load(u)
	if err != nil || r.AccessToken != "access.token.sig" {
		t.Fatalf("Load = %+v, %v", r, err)
	}
	if runtime.GOOS != "windows" {
		for p, want := range map[string]os.FileMode{dir: DirMode, s.Path(u): FileMode} {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != want {
				t.Errorf("%s has mode %#o, want %#o", p, st.Mode().Perm(), want)
			}
		}
	}
	// The write leaves no temp file behind.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("the directory holds %d entries, want the one sign-in file", len(ents))
	}
	// Distinct URLs get distinct files, even when their readable names match.
	if s.Path("https://a.example/x_y/mcp") == s.Path("https://a.example/x/y/mcp") {
		t.Error("two URLs share a sign-in file")
	}
	// A file holding another URL's sign-in is refused.
	other := "https://other.example.com/mcp"
	b, _ := os.ReadFile(s.Path(u))
	if err := os.WriteFile(s.Path(other), b, FileMode); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(other); !errors.Is(err, ErrRecord) {
		t.Errorf("Load of a file holding another URL's sign-in: %v, want ErrRecord", err)
	}
}

// TestStoreRefusesLoosePermissions: a sign-in file others can read or
// write, or a symlink, is not used, and the error says how to fix it.
func TestStoreRefusesLoosePermissions(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no POSIX modes")
	}
	s := &Store{Dir: t.TempDir()}
	const u = "https://brain.acme.com/mcp"
	if err := s.Save(testRecord(u)); err != nil {
		t.Fatal(err)
	}
	p := s.Path(u)
	for _, mode := range []os.FileMode{0o644, 0o604, 0o620, 0o640} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		_, err := s.Load(u)
		if !errors.Is(err, ErrInsecureFile) || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %#o: %v, want ErrInsecureFile with the fix", mode, err)
		}
		c := &Client{Store: s, Now: func() time.Time { return testRecord(u).SignedInAt }}
		if _, err := c.Token(context.Background(), u); !errors.Is(err, ErrInsecureFile) {
			t.Errorf("mode %#o: Token = %v, want ErrInsecureFile", mode, err)
		}
	}
	if err := os.Chmod(p, FileMode); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(u); err != nil {
		t.Errorf("after chmod 600: %v", err)
	}
	// A symlink in its place is refused too.
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(target, b, FileMode); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(u); !errors.Is(err, ErrInsecureFile) {
		t.Errorf("symlink: %v, want ErrInsecureFile", err)
	}
	// Saving makes a loosened directory private again.
	if err := os.Chmod(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(testRecord("https://x.example/mcp")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(s.Dir); st.Mode().Perm() != DirMode {
		t.Errorf("directory mode %#o after Save, want %#o", st.Mode().Perm(), DirMode)
	}
}

func TestStoreLock(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	const u = "https://brain.acme.com/mcp"
	unlock, err := s.lock(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.lock(ctx, u); !errors.Is(err, context.Canceled) {
		t.Errorf("second lock while held: %v, want to wait until cancelled", err)
	}
	unlock()
	unlock2, err := s.lock(context.Background(), u)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock2()
	// A lock left by a dead process is taken over.
	p := s.Path(u) + ".lock"
	if err := os.WriteFile(p, []byte("1\n"), FileMode); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleLock)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	unlock3, err := s.lock(context.Background(), u)
	if err != nil {
		t.Fatalf("stale lock not taken over: %v", err)
	}
	unlock3()
}

func TestRecordFresh(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		exp     time.Time
		refresh string
		want    bool
	}{
		{now.Add(time.Hour), "r", true},
		{now.Add(30 * time.Second), "r", false},
		{now.Add(-time.Second), "r", false},
		{time.Time{}, "r", false},
		{time.Time{}, "", true},
	}
	for _, tt := range tests {
		r := &Record{ExpiresAt: tt.exp, RefreshToken: tt.refresh}
		if got := r.Fresh(now, time.Minute); got != tt.want {
			t.Errorf("Fresh(exp %v, refresh %q) = %v, want %v", tt.exp, tt.refresh, got, tt.want)
		}
	}
}
