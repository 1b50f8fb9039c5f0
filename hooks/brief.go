package hooks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/brainstem/brainstem/search"
)

// briefQueryExtra: the brief's query asks for this many hits more than it
// quotes, so that flagged and low hits leave enough.
const briefQueryExtra = 4

// sessionStart is the session-start hook: the brief.
func (r *runner) sessionStart(ctx context.Context) Output {
	acct, msg := r.signIn(ctx, true)
	if acct == nil {
		return r.warn(ctx, msg)
	}
	st := loadState(r.cacheDir, r.in.SessionID, r.now())
	dir := r.cwd()
	var wa wingsAnswer
	var werr error
	var repo repoInfo
	var wg sync.WaitGroup
	wg.Go(func() { werr = acct.callJSON(ctx, toolWings, map[string]any{}, &wa) })
	wg.Go(func() {
		repo = readRepo(ctx, r.opt.Git, dir)
		if st.GitStatus == "" && r.in.Source != "compact" {
			st.GitStatus, _ = gitStatus(ctx, r.opt.Git, dir)
		}
	})
	wg.Wait()
	if werr != nil {
		return r.warn(ctx, r.gatewayProblem(acct, werr))
	}
	ws := wa.wings()
	var kept []hit
	var skipped []string
	if q := repo.query(); q != "" && len(ws) > 0 {
		var qa queryAnswer
		if err := acct.callJSON(ctx, search.Tool, map[string]any{"query": q, "scope": search.ScopeWiki, "limit": r.es.MaxNotes + briefQueryExtra}, &qa); err == nil {
			var flagged []hit
			kept, flagged = screen(qa.Hits, r.es.MinScore)
			skipped = ids(flagged)
		}
	}
	kept = kept[:min(len(kept), r.es.MaxNotes)]
	st.HomeWing = homeWing(ws, kept, st.HomeWing)
	var captured []string
	if r.in.Source == "compact" {
		captured = st.captured()
		if t, err := scanTranscript(ctx, r.in.TranscriptPath); err == nil {
			captured = union(captured, t.Captured)
		}
	}
	if r.in.Source == "startup" {
		pruneStates(ctx, r.cacheDir, r.now())
	}
	_ = st.save(ctx, r.cacheDir)
	b := brief{acct: acct, repo: repo, wings: ws, notes: kept, skipped: skipped, home: st.HomeWing, captured: captured}
	return withContext(r.ev, b.render())
}

// callJSON calls a tool and decodes its text as JSON into v.
func (a *account) callJSON(ctx context.Context, tool string, args map[string]any, v any) error {
	text, err := a.gw.callTool(ctx, tool, args)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return fmt.Errorf("%w: %s's answer does not decode", errGateway, tool)
	}
	return nil
}

// gatewayProblem is the message for a failed first call: a refused token
// is the person's to fix; a gateway that cannot be reached is named with
// the command that shows why.
func (r *runner) gatewayProblem(a *account, err error) string {
	switch {
	case errors.Is(err, errRefused):
		return fmt.Sprintf("Brainstem hooks: %s refused your sign-in; run `brainstem login %s`.", a.gw.url, a.gw.url)
	case ctxDone(err):
		return ""
	default:
		return fmt.Sprintf("Brainstem hooks: the brain at %s did not answer, so this session starts without it; `brainstem doctor %s` shows why.", a.gw.url, a.gw.url)
	}
}

func ctxDone(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// homeWing is where the session's captures go: the wing kept from before
// if still writable, else the writable wing of the best note, else the
// first writable wing.
func homeWing(ws []wing, notes []hit, before string) string {
	w := writable(ws)
	if slices.Contains(w, before) {
		return before
	}
	for _, n := range notes {
		if slices.Contains(w, n.Wing) {
			return n.Wing
		}
	}
	if len(w) > 0 {
		return w[0]
	}
	return ""
}

// writableHome asks the gateway for the person's wings: the writable ones
// and the home wing among them (homeWing with no notes); none when the
// gateway did not answer.
func (a *account) writableHome(ctx context.Context, before string) (home string, w []string) {
	var wa wingsAnswer
	if a.callJSON(ctx, toolWings, map[string]any{}, &wa) != nil {
		return "", nil
	}
	ws := wa.wings()
	return homeWing(ws, nil, before), writable(ws)
}

func union(a, b []string) []string {
	for _, x := range b {
		if !slices.Contains(a, x) {
			a = append(a, x)
		}
	}
	return a
}

// brief is session-start's context.
type brief struct {
	acct     *account
	repo     repoInfo
	wings    []wing
	notes    []hit
	skipped  []string
	home     string
	captured []string
}

// render writes the brief, at most MaxBriefBytes: notes that would pass
// the bound are left out.
func (b *brief) render() string {
	var head strings.Builder
	who := cmp.Or(b.acct.email, "you")
	fmt.Fprintf(&head, "Brainstem, the team brain, is connected (%s, signed in as %s).\n", b.acct.gw.url, who)
	if len(b.wings) == 0 {
		head.WriteString("No wing admits you yet: ask the curators of the wing you need.\n")
	} else {
		ws := make([]string, len(b.wings))
		for i, w := range b.wings {
			ws[i] = fmt.Sprintf("%s (%s)", w.Name, strings.Join(w.Caps.Strings(), ", "))
		}
		head.WriteString("Wings you can use: " + strings.Join(ws, "; ") + ".\n")
	}
	tail := b.howTo() + b.capturedLine()
	var notes strings.Builder
	if len(b.notes) > 0 {
		fmt.Fprintf(&notes, "Notes most relevant to this repository (%s). %s\n%s\n", b.repo.Name, referenceNote, openMarker)
		budget := MaxBriefBytes - head.Len() - len(tail) - len(skippedLine(b.skipped)) - len(closeMarker) - 1 - notes.Len()
		for _, n := range b.notes {
			line := quoted(n, briefLineRunes)
			if len(line) > budget {
				break
			}
			budget -= len(line)
			notes.WriteString(line)
		}
		notes.WriteString(closeMarker + "\n")
	}
	return clip(head.String()+notes.String()+skippedLine(b.skipped)+tail, MaxBriefBytes)
}

// howTo is the brief's line on consulting and capturing.
func (b *brief) howTo() string {
	s := "Consult it before a task: brain_query {\"query\": <key words>} searches every wing you read; brain_get {\"id\": <id>} reads a note.\n"
	if b.home == "" {
		return s + "You may write to no wing, so this session captures nothing.\n"
	}
	return s + fmt.Sprintf("Capture what you learn that outlasts this session (a decision and why, a failure and its fix, a fact) into the inbox, "+
		"where curators review it: brain_write {\"wing\": %s, \"inbox\": true, \"hall\": <facts|decisions|failures|hypotheses|sources>, "+
		"\"title\": <one line>, \"body\": <markdown>}.\n", jsonString(b.home))
}

// maxCapturedLine bounds the line naming the captured notes: the latest
// are named, the others counted.
const maxCapturedLine = 1200

// capturedLine names the notes captured before a compaction.
func (b *brief) capturedLine() string {
	if len(b.captured) == 0 {
		return ""
	}
	const head = "Captured earlier in this session, before the context was compacted (do not write them again): "
	names := b.captured
	for len(names) > 1 && len(head)+len(strings.Join(names, ", "))+40 > maxCapturedLine {
		names = names[1:]
	}
	more := ""
	if n := len(b.captured) - len(names); n > 0 {
		more = fmt.Sprintf(" and %d before them", n)
	}
	return clip(head+strings.Join(names, ", ")+more+".\n", maxCapturedLine)
}

// clip cuts s to at most n bytes, at the end of a line when it can, else
// of a character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	if i := strings.LastIndexByte(s, '\n'); i > n/2 {
		return s[:i+1]
	}
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
