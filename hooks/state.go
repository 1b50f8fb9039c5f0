package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/internal/smallfile"
)

// What the hooks remember of a session, in the person's cache directory:
// <user cache dir>/brainstem/hooks/<digest of the session id>.json, one
// small private file per session, removed after stateTTL.
const (
	stateVersion  = 1
	maxStateBytes = 256 << 10
	stateTTL      = 14 * 24 * time.Hour
	// maxCompactions and maxCaptured bound a state file.
	maxCompactions = 32
	maxCaptured    = 200
	// statePruneScan bounds the files one session start looks at to prune.
	statePruneScan = 500
)

// sessionState is what one session's hooks tell each other.
type sessionState struct {
	Version   int       `json:"version"`
	SessionID string    `json:"session_id"`
	Started   time.Time `json:"started"`
	// GitStatus is the digest of `git status --porcelain` at the session's
	// start, so that stop counts only the files changed since.
	GitStatus string `json:"git_status,omitempty"`
	// HomeWing is the wing the session's captures go to: the writable
	// wing of the brief's best note, else the first writable wing.
	HomeWing    string       `json:"home_wing,omitempty"`
	StopBlocked bool         `json:"stop_blocked,omitempty"`
	Warned      bool         `json:"warned,omitempty"`
	Compactions []compaction `json:"compactions,omitempty"`
}

// compaction is one PreCompact: when, why and the notes captured by then.
type compaction struct {
	At       time.Time `json:"at"`
	Trigger  string    `json:"trigger,omitempty"`
	Captured []string  `json:"captured,omitempty"`
}

// stateDir is the directory of the session files under the cache
// directory (<user cache dir>/brainstem).
func stateDir(cacheDir string) string { return filepath.Join(cacheDir, "hooks") }

func statePath(cacheDir, sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	return filepath.Join(stateDir(cacheDir), hex.EncodeToString(sum[:16])+".json")
}

// loadState reads a session's state; a missing or unusable file is a new
// state (a hook never fails for its cache).
func loadState(cacheDir, sessionID string, now time.Time) *sessionState {
	fresh := &sessionState{Version: stateVersion, SessionID: sessionID, Started: now}
	if cacheDir == "" || sessionID == "" {
		return fresh
	}
	b, err := smallfile.Read(statePath(cacheDir, sessionID), maxStateBytes)
	var st sessionState
	if err != nil || json.Unmarshal(b, &st) != nil || st.Version != stateVersion || st.SessionID != sessionID {
		return fresh
	}
	return &st
}

// save writes the state durably and privately, unless ctx has ended (a
// hook past its time box writes nothing more).
func (st *sessionState) save(ctx context.Context, cacheDir string) error {
	if cacheDir == "" || st.SessionID == "" {
		return errors.New("hooks: no cache directory or no session id")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(st.Compactions) > maxCompactions {
		st.Compactions = st.Compactions[len(st.Compactions)-maxCompactions:]
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("hooks: %w", err)
	}
	if err := os.MkdirAll(stateDir(cacheDir), 0o700); err != nil {
		return fmt.Errorf("hooks: %w", err)
	}
	if err := atomicfile.WriteFile(statePath(cacheDir, st.SessionID), b, 0o600); err != nil {
		return fmt.Errorf("hooks: saving the session state: %w", err)
	}
	return nil
}

// captured returns the notes captured before the compactions, in order,
// without repeats.
func (st *sessionState) captured() []string {
	var out []string
	for _, c := range st.Compactions {
		out = union(out, c.Captured)
	}
	return out
}

// pruneStates removes the session files not written for stateTTL, looking
// at most at statePruneScan of them.
func pruneStates(ctx context.Context, cacheDir string, now time.Time) {
	dir := stateDir(cacheDir)
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	ents, _ := f.ReadDir(statePruneScan)
	_ = f.Close()
	for _, e := range ents {
		if ctx.Err() != nil {
			return
		}
		info, err := e.Info()
		if err != nil || !e.Type().IsRegular() {
			continue
		}
		left := strings.HasPrefix(e.Name(), atomicfile.TempPrefix) && now.Sub(info.ModTime()) > time.Hour
		if left || filepath.Ext(e.Name()) == ".json" && now.Sub(info.ModTime()) > stateTTL {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
