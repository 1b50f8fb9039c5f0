package hooks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/brainstem/brainstem/search"
)

// promptQueryTerms bounds the words of a prompt searched (the gateway
// refuses a query of more than 32).
const promptQueryTerms = 24

// prompt is the UserPromptSubmit hook: the notes relevant to the prompt.
func (r *runner) prompt(ctx context.Context) Output {
	terms := promptTerms(r.in.Prompt)
	if len(terms) < r.es.MinWords || trivial(r.in.Prompt, terms) {
		return Output{}
	}
	acct, msg := r.signIn(ctx, false)
	if acct == nil {
		return r.warn(ctx, msg)
	}
	var qa queryAnswer
	if err := acct.callJSON(ctx, search.Tool, map[string]any{"query": strings.Join(terms, " "), "scope": search.ScopeWiki, "limit": r.es.MaxNotes + 2}, &qa); err != nil {
		return Output{}
	}
	kept, flagged := screen(qa.Hits, r.es.MinScore)
	var relevant []hit
	for _, h := range kept {
		if len(relevant) < r.es.MaxNotes && covers(h, terms, r.es.MinCoverage) {
			relevant = append(relevant, h)
		}
	}
	var skipped []string
	for _, h := range flagged {
		if covers(h, terms, r.es.MinCoverage) {
			skipped = append(skipped, h.ID)
		}
	}
	if len(relevant) == 0 && len(skipped) == 0 {
		return Output{}
	}
	var b strings.Builder
	if len(relevant) > 0 {
		fmt.Fprintf(&b, "Brainstem: notes of the team brain that match this prompt. %s\n%s\n", referenceNote, openMarker)
		for _, h := range relevant {
			b.WriteString(quoted(h, MaxSnippetRunes))
		}
		b.WriteString(closeMarker + "\n")
	} else {
		b.WriteString("Brainstem: notes of the team brain match this prompt. ")
	}
	b.WriteString(skippedLine(skipped))
	return withContext(r.ev, b.String())
}

// promptTerms are the distinct searchable words of a prompt, as the
// gateway tokenizes them, at most promptQueryTerms.
func promptTerms(prompt string) []string {
	t := search.Terms(prompt)
	return t[:min(len(t), promptQueryTerms)]
}

// trivial reports whether a prompt is one the hook stays quiet for: a
// slash command or shell escape, or only words of acknowledgement and
// greeting ("thanks", "yes please", "ok go ahead").
func trivial(prompt string, terms []string) bool {
	p := strings.TrimSpace(prompt)
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "!") || strings.HasPrefix(p, "#") {
		return true
	}
	return !slices.ContainsFunc(terms, func(t string) bool { return !chatter(t) })
}

// chatter are words that carry no topic.
func chatter(term string) bool {
	switch term {
	case "hi", "hello", "hey", "thanks", "thank", "thx", "ty", "cheers", "ok", "okay", "yes", "yeah", "yep", "yup", "no", "nope", "sure",
		"please", "pls", "continue", "go", "ahead", "proceed", "done", "great", "good", "nice", "cool", "perfect", "awesome", "lgtm",
		"morning", "afternoon", "evening", "right", "correct", "exactly", "fine", "alright", "agreed", "much", "lot", "sounds", "looks",
		"let", "lets", "s", "do", "it", "that", "this", "again", "keep", "going", "carry", "on", "stop", "wait", "retry", "try":
		return true
	}
	return false
}

// covers reports whether a hit's title and snippet hold at least share of
// the prompt's searchable words, and at least two of them (one, for a
// one-word prompt).
func covers(h hit, terms []string, share float64) bool {
	seen := map[string]bool{}
	for _, t := range search.Tokenize(h.Title + " " + h.Snippet) {
		seen[t] = true
	}
	n := 0
	for _, t := range terms {
		if seen[t] {
			n++
		}
	}
	return n >= min(2, len(terms)) && float64(n) >= share*float64(len(terms))
}
