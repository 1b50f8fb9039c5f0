package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
)

// maxReasonBytes bounds the stop hook's reason.
const maxReasonBytes = 6 << 10

// stop is the Stop hook: it blocks once per session, asking the agent to
// capture what it learned, when the session did real work and wrote
// nothing to the brain. It never blocks while the agent is already
// continuing because of a Stop hook, a second time in a session, when the
// transcript cannot be read (the session's captures are then unknown), or
// when the person may write to no wing.
func (r *runner) stop(ctx context.Context) Output {
	if r.in.StopHookActive {
		return Output{}
	}
	st := loadState(r.cacheDir, r.in.SessionID, r.now())
	if st.StopBlocked || r.in.SessionID == "" {
		return Output{}
	}
	t, err := scanTranscript(ctx, r.in.TranscriptPath)
	if err != nil || t.Writes > 0 {
		return Output{}
	}
	digest, _ := gitStatus(ctx, r.opt.Git, r.cwd())
	changed := digest != "" && digest != st.GitStatus
	if !changed && t.Edits == 0 && t.ToolUses < r.es.MinToolUses {
		return Output{}
	}
	acct, msg := r.signIn(ctx, true)
	if acct == nil {
		return r.warn(ctx, msg)
	}
	home, w := acct.writableHome(ctx, st.HomeWing)
	if len(w) == 0 {
		return Output{}
	}
	steps, err := acct.gw.getPrompt(ctx, promptCapture, map[string]string{"wing": home, "session": sessionName(r.in.SessionID)})
	if err != nil {
		if ctxDone(err) {
			return Output{}
		}
		steps = fmt.Sprintf("Use the brain's capture_learnings prompt for wing %s: write each durable learning to its inbox with brain_write (\"inbox\": true), after checking with brain_query that the brain does not have it already.", jsonString(home))
	}
	st.StopBlocked, st.HomeWing = true, home
	if st.save(ctx, r.cacheDir) != nil {
		return Output{} // unremembered, it could block again: never
	}
	return Output{Decision: "block", Reason: stopReason(changed || t.Edits > 0, home, w, steps)}
}

// stopReason is the agent's next instruction.
func stopReason(edited bool, home string, wings []string, steps string) string {
	var b strings.Builder
	b.WriteString("Brainstem: ")
	if edited {
		b.WriteString("this session changed files")
	} else {
		b.WriteString("this session did a lot of work")
	}
	b.WriteString(" and wrote nothing to the team brain. Before you stop, capture what it learned that others will need " +
		"(or, if nothing is worth keeping, say so in one line and stop). This is asked once per session.\n")
	if others := slices.DeleteFunc(slices.Clone(wings), func(x string) bool { return x == home }); len(others) > 0 {
		fmt.Fprintf(&b, "The inbox of %s is suggested; you may also write to %s.\n", home, strings.Join(others, ", "))
	}
	b.WriteString("\n")
	b.WriteString(injection.Clean(steps))
	return clip(b.String(), maxReasonBytes)
}

// sessionName is the session id a session's log is kept under: Claude
// Code's session id when it is a valid session name, else its digest.
func sessionName(id string) string {
	if brain.ValidSession(id) == nil {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "claude-" + hex.EncodeToString(sum[:16])
}
