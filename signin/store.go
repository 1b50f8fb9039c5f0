package signin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/internal/smallfile"
)

// Limits and modes of the sign-in files.
const (
	// MaxRecordBytes bounds a sign-in file.
	MaxRecordBytes = 64 << 10
	// RecordVersion is the format of the sign-in files this code writes.
	RecordVersion = 1
	// FileMode is the mode of a sign-in file: it holds tokens.
	FileMode fs.FileMode = 0o600
	// DirMode is the mode of the directory of sign-in files.
	DirMode fs.FileMode = 0o700
	// staleLock is the age past which a refresh lock is taken to be left
	// by a process that died.
	staleLock = time.Minute
	// lockPoll is how often a waiting process looks at the lock again.
	lockPoll = 50 * time.Millisecond
)

// Errors of the store.
var (
	// ErrNotSignedIn: there is no sign-in for the URL.
	ErrNotSignedIn = errors.New("signin: not signed in")
	// ErrInsecureFile: the sign-in file can be read or written by other
	// users, or is not a regular file; it is not used.
	ErrInsecureFile = errors.New("signin: the sign-in file is not private")
	// ErrRecord: the sign-in file does not decode.
	ErrRecord = errors.New("signin: unusable sign-in file")
)

// Record is one sign-in: the tokens for one MCP URL and what is needed to
// refresh them without discovering again.
type Record struct {
	Version            int       `json:"version"`
	MCPURL             string    `json:"mcp_url"`
	Issuer             string    `json:"issuer"`
	TokenEndpoint      string    `json:"token_endpoint"`
	RevocationEndpoint string    `json:"revocation_endpoint,omitempty"`
	ClientID           string    `json:"client_id"`
	AccessToken        string    `json:"access_token"`
	TokenType          string    `json:"token_type"`
	ExpiresAt          time.Time `json:"expires_at,omitzero"`
	RefreshToken       string    `json:"refresh_token,omitempty"`
	Scope              string    `json:"scope,omitempty"`
	// Email is read from the access token for display; the gateway
	// verifies the token itself.
	Email       string    `json:"email,omitempty"`
	SignedInAt  time.Time `json:"signed_in_at"`
	RefreshedAt time.Time `json:"refreshed_at,omitzero"`
}

// Fresh reports whether the access token is usable for at least margin
// more at now. A token whose expiry is unknown is fresh only when it cannot
// be refreshed anyway.
func (r *Record) Fresh(now time.Time, margin time.Duration) bool {
	if r.ExpiresAt.IsZero() {
		return r.RefreshToken == ""
	}
	return now.Add(margin).Before(r.ExpiresAt)
}

// EncodeRecord renders a record as its file content.
func EncodeRecord(r *Record) ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("signin: %w", err)
	}
	return append(b, '\n'), nil
}

// DecodeRecord parses and checks a sign-in file's content.
func DecodeRecord(b []byte) (*Record, error) {
	if len(b) > MaxRecordBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrRecord, len(b), MaxRecordBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var r Record
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrRecord)
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

func (r *Record) validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if r.Version != RecordVersion {
		bad("version %d is not %d (written by another brainstem version?)", r.Version, RecordVersion)
	}
	if u, err := url.Parse(r.MCPURL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.Fragment != "" || u.User != nil {
		bad("mcp_url %.200q is not an http(s) URL", r.MCPURL)
	}
	if err := checkEndpoint("issuer", r.Issuer); err != nil {
		bad("%v", err)
	}
	if err := checkEndpoint("token_endpoint", r.TokenEndpoint); err != nil {
		bad("%v", err)
	}
	if r.RevocationEndpoint != "" {
		if err := checkEndpoint("revocation_endpoint", r.RevocationEndpoint); err != nil {
			bad("%v", err)
		}
	}
	for _, t := range []struct {
		name, v  string
		required bool
	}{{"client_id", r.ClientID, true}, {"access_token", r.AccessToken, true}, {"refresh_token", r.RefreshToken, false}} {
		switch {
		case t.v == "" && t.required:
			bad("%s is missing", t.name)
		case len(t.v) > MaxTokenBytes || !headerSafe(t.v):
			bad("%s is not a token", t.name)
		}
	}
	if !strings.EqualFold(r.TokenType, "Bearer") {
		bad("token_type %.40q is not Bearer", r.TokenType)
	}
	if len(r.Scope) > 1024 || len(r.Email) > brain.MaxEmailBytes || strings.ContainsFunc(r.Scope+r.Email, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		bad("scope or email holds control characters or is too long")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrRecord, strings.Join(errs, "; "))
	}
	return nil
}

// Store keeps sign-ins as files, one per MCP URL, in a private directory.
type Store struct {
	Dir string
}

// DefaultStore is <user config dir>/brainstem/signins (on Linux
// ~/.config/brainstem/signins, on macOS ~/Library/Application
// Support/brainstem/signins).
func DefaultStore() (*Store, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("signin: no configuration directory to keep the sign-in in: %w", err)
	}
	return &Store{Dir: filepath.Join(d, "brainstem", "signins")}, nil
}

// Path is the file of mcpURL's sign-in: a readable name plus a digest of
// the whole URL, so distinct URLs never share a file.
func (s *Store) Path(mcpURL string) string {
	sum := sha256.Sum256([]byte(mcpURL))
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return '_'
	}, strings.TrimPrefix(strings.TrimPrefix(mcpURL, "https://"), "http://"))
	name = name[:min(len(name), 80)]
	return filepath.Join(s.Dir, name+"-"+hex.EncodeToString(sum[:4])+".json")
}

// Load reads mcpURL's sign-in. It refuses a file other users can read or
// write (ErrInsecureFile) and a file for another URL.
func (s *Store) Load(mcpURL string) (*Record, error) {
	p := s.Path(mcpURL)
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w to %s", ErrNotSignedIn, mcpURL)
	}
	if err != nil {
		return nil, fmt.Errorf("signin: %w", err)
	}
	if err := checkPrivate(p, st); err != nil {
		return nil, err
	}
	b, err := smallfile.Read(p, MaxRecordBytes)
	if errors.Is(err, smallfile.ErrTooLarge) {
		err = fmt.Errorf("%w: %w (delete it and sign in again)", ErrRecord, err)
	}
	if err != nil {
		return nil, fmt.Errorf("signin: %w", err)
	}
	r, err := DecodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (delete it and sign in again)", p, err)
	}
	if r.MCPURL != mcpURL {
		return nil, fmt.Errorf("%w: %s holds the sign-in of %s, not %s (delete it and sign in again)", ErrRecord, p, r.MCPURL, mcpURL)
	}
	return r, nil
}

// checkPrivate refuses anything but a regular file only its owner can read
// and write. Windows has no such mode bits; the user profile's ACLs apply.
func checkPrivate(p string, st fs.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%s); delete it and sign in again", ErrInsecureFile, p, st.Mode().Type())
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %#o, so other users may read your tokens; run `chmod 600 %s` if no one else could have, or delete it and sign in again",
			ErrInsecureFile, p, st.Mode().Perm(), p)
	}
	return nil
}

// Save writes the record atomically and durably (package atomicfile: a
// private temporary file in the same directory, fsync, rename over the old
// file, fsync of the directory).
func (s *Store) Save(r *Record) error {
	b, err := EncodeRecord(r)
	if err != nil {
		return err
	}
	if err := s.ensureDir(); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(s.Path(r.MCPURL), b, FileMode); err != nil {
		return fmt.Errorf("signin: saving the sign-in: %w", err)
	}
	return nil
}

// ensureDir creates the directory private, and makes an existing one so.
func (s *Store) ensureDir() error {
	if s.Dir == "" {
		return errors.New("signin: the store has no directory")
	}
	if err := os.MkdirAll(s.Dir, DirMode); err != nil {
		return fmt.Errorf("signin: %w", err)
	}
	st, err := os.Stat(s.Dir)
	if err != nil {
		return fmt.Errorf("signin: %w", err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != DirMode {
		if err := os.Chmod(s.Dir, DirMode); err != nil {
			return fmt.Errorf("signin: making %s private: %w", s.Dir, err)
		}
	}
	return nil
}

// lock takes the refresh lock of mcpURL's sign-in, so two processes (two
// `brainstem token` runs of one client) do not both redeem one rotating
// refresh token. It waits while another process holds it, takes over a
// lock older than staleLock, and returns the release function.
func (s *Store) lock(ctx context.Context, mcpURL string) (func(), error) {
	if err := s.ensureDir(); err != nil {
		return nil, err
	}
	p := s.Path(mcpURL) + ".lock"
	t := time.NewTicker(lockPoll)
	defer t.Stop()
	for {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, FileMode)
		if err == nil {
			_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
			_ = f.Close()
			return func() { _ = os.Remove(p) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("signin: refresh lock: %w", err)
		}
		if st, err := os.Stat(p); err == nil && time.Since(st.ModTime()) > staleLock {
			_ = os.Remove(p)
			continue
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("signin: waiting for another brainstem process to finish refreshing (%s): %w", p, ctx.Err())
		case <-t.C:
		}
	}
}
