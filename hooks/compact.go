package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// preCompact is the PreCompact hook: it records that a compaction happens
// and the notes captured so far, first in the session's state in the
// person's cache directory (which the compact session start reads), then
// in the session's log in the brain (session_log) when the person may
// write to a wing. It answers {}: it never stands in a compaction's way.
func (r *runner) preCompact(ctx context.Context) Output {
	if r.in.SessionID == "" {
		return Output{}
	}
	st := loadState(r.cacheDir, r.in.SessionID, r.now())
	captured := st.captured()
	if t, err := scanTranscript(ctx, r.in.TranscriptPath); err == nil {
		captured = union(captured, t.Captured)
	}
	if len(captured) > maxCaptured {
		captured = captured[len(captured)-maxCaptured:]
	}
	at := r.now().UTC()
	st.Compactions = append(st.Compactions, compaction{At: at, Trigger: r.in.Trigger, Captured: captured})
	_ = st.save(ctx, r.cacheDir)
	acct, _ := r.signIn(ctx, true)
	if acct == nil {
		return Output{}
	}
	home, w := acct.writableHome(ctx, st.HomeWing)
	if len(w) == 0 {
		return Output{}
	}
	if captured == nil {
		captured = []string{}
	}
	session := sessionName(r.in.SessionID)
	sum := sha256.Sum256([]byte(session + "\x00" + at.Format(time.RFC3339Nano)))
	_, _ = acct.gw.callTool(ctx, toolSessionLog, map[string]any{
		"wing": home, "session": session, "idempotency_key": "hook-compact-" + hex.EncodeToString(sum[:16]),
		"entry": map[string]any{"event": "compaction", "trigger": r.in.Trigger, "captured": captured, "by": "brainstem hook pre-compact"},
	})
	return Output{}
}
