package tools

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/shard/history"
	"github.com/brainstem/brainstem/shard/idempotency"
	"github.com/brainstem/brainstem/shard/store"
)

// The history tools: brain_history, brain_diff (read), brain_restore
// (write), brain_archive, brain_move and brain_purge (curate). brain_get's
// version and brain_list's archived are in handlers.go. docs/history.md
// says what history is; docs/tools.md is generated from these specs.

// History limits (part of the tools' contract).
const (
	HistoryDefaultLimit = 20
	HistoryMaxLimit     = 100
	// DiffMaxBytes bounds brain_diff's diff; a longer one is cut on a line
	// boundary and flagged.
	DiffMaxBytes = 128 << 10
)

// refArg is the note a history tool names: an id or a path, now or from
// before a move; it routes the call.
func refArg(missing string) toolspec.Arg {
	return toolspec.Arg{Name: "id", Type: toolspec.String, Required: true, Min: toolspec.Int(1), Missing: missing, Route: toolspec.RouteRef,
		Desc: "The note: its id wing/hall/slug or its path (wiki/wing/hall/slug.md, or inbox/wing/name.md for an inbox note), " +
			"now or from before a move."}
}

func versionArg(name string, required bool, desc string) toolspec.Arg {
	return toolspec.Arg{Name: name, Type: toolspec.String, Required: required, Min: minOne(required), Pattern: "^[0-9a-fA-F]{40}$",
		Check: func(arg, v string) error {
			if err := brain.ValidVersion(v); err != nil {
				e, _ := brain.As(err)
				return brain.Wrap(err, e.Code, "%s: %s", arg, e.Message)
			}
			return nil
		}, Desc: desc}
}

// versionInfo is one version as the tools show it.
type versionInfo struct {
	Version     string `json:"version"`
	Path        string `json:"path"`
	ContentHash string `json:"content_hash"`
	At          string `json:"at"`
	By          string `json:"by"`
	Action      string `json:"action"`
	Tool        string `json:"tool"`
	Reason      string `json:"reason"`
	From        string `json:"from"`
	Removed     bool   `json:"removed"`
	Purged      bool   `json:"purged"`
}

// historyHint completes a refusal of a note that is not there.
func historyHint(err error) error {
	return hint(err, store.ErrNotFound, "brain_history lists what history knows of a note, brain_list with archived true the archived notes")
}

// ---- brain_history

func (s *Set) historySpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_history", Title: "Versions of a note", Needs: brain.CapRead, ReadOnly: true, Idempotent: true, Result: historyResult{},
		Description: "List the versions of a note, newest first, a page at a time, following it across moves and its " +
			"promotion from the inbox (an archived note too). Every change is a version: who made it (by), when (at), " +
			"how (action: create, update, promote, restore, archive, move, purge, outside for an edit made behind " +
			"Brainstem, initial), with which tool and why. Returns {id, path, versions:[{version, path, content_hash, at, " +
			"by, action, tool, reason, from, removed, purged}], next_cursor}: id and path are the note's now; a version's " +
			"path is where the note was then (from: where it came from when it moved); removed marks an archive, purged a " +
			"version whose content was purged. Read a version with brain_get's version, compare two with brain_diff.",
		Args: []toolspec.Arg{
			refArg("a note id wing/hall/slug or its path"),
			{Name: "limit", Type: toolspec.Integer, Min: toolspec.Int(1), Max: toolspec.Int(HistoryMaxLimit), Default: HistoryDefaultLimit, Desc: "Maximum number of versions."},
			{Name: "cursor", Type: toolspec.String, Desc: "The next_cursor of the previous page; omit for the newest versions."},
			wingArg(),
		},
	}
}

type historyArgs struct {
	ID     string `json:"id"`
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
	WingArg
}

type historyResult struct {
	ID         string        `json:"id"`
	Path       string        `json:"path"`
	Versions   []versionInfo `json:"versions"`
	NextCursor string        `json:"next_cursor"`
}

func (s *Set) history(ctx context.Context, _ Caller, a *historyArgs) (any, error) {
	h, err := s.st.Versions(ctx, a.ID, a.Cursor, a.Limit)
	if err != nil {
		return nil, historyHint(err)
	}
	res := historyResult{ID: h.Ref, Path: h.Path, Versions: make([]versionInfo, len(h.Versions)), NextCursor: h.Next}
	for i, v := range h.Versions {
		res.Versions[i] = versionInfo{Version: v.ID, Path: v.Path, ContentHash: v.ContentHash, At: v.At.UTC().Format(time.RFC3339), By: v.Author,
			Action: v.Action, Tool: v.Tool, Reason: v.Reason, From: v.From, Removed: v.Removed, Purged: v.Purged}
	}
	return res, nil
}

// ---- brain_diff

func (s *Set) diffSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_diff", Title: "Compare two versions", Needs: brain.CapRead, ReadOnly: true, Idempotent: true, Result: diffResult{},
		Description: fmt.Sprintf("Show what changed in a note between two of its versions, as a unified diff of the whole file "+
			"(frontmatter included): from an older version to a newer one, to the current version when to is omitted. "+
			"A version that archived the note compares as empty. Returns {id, from, to, diff, cut, too_different, "+
			"from_bytes, from_lines, from_hash, to_bytes, to_lines, to_hash}: cut is true when the diff was longer than "+
			"%d bytes and was cut at a line. too_different is true when the versions differ too much for a line diff: "+
			"in more than %d lines (lines removed plus lines added, a changed line counting two), or in so many repeated "+
			"lines that comparing them would take more than %d steps; diff is then one line saying so, and no hunk. "+
			"from_bytes, from_lines and from_hash (to_*: the same of to) are the size in bytes and lines and the "+
			"content_hash of each version compared (0, 0 and \"\" for a version that archived the note): compare those, "+
			"or read both versions with brain_get's version, when there is no diff.",
			DiffMaxBytes, history.DiffMaxEdits, history.DiffMaxWork),
		Args: []toolspec.Arg{refArg("a note id wing/hall/slug or its path"),
			versionArg("from", true, "The version to compare from, as brain_history lists it."),
			versionArg("to", false, "The version to compare to; omit for the current one."), wingArg()},
	}
}

type diffArgs struct {
	ID   string `json:"id"`
	From string `json:"from"`
	To   string `json:"to"`
	WingArg
}

type diffResult struct {
	ID           string `json:"id"`
	From         string `json:"from"`
	To           string `json:"to"`
	Diff         string `json:"diff"`
	Cut          bool   `json:"cut"`
	TooDifferent bool   `json:"too_different"`
	FromBytes    int    `json:"from_bytes"`
	FromLines    int    `json:"from_lines"`
	FromHash     string `json:"from_hash"`
	ToBytes      int    `json:"to_bytes"`
	ToLines      int    `json:"to_lines"`
	ToHash       string `json:"to_hash"`
}

func (s *Set) diff(ctx context.Context, _ Caller, a *diffArgs) (any, error) {
	d, err := s.st.Diff(ctx, a.ID, a.From, a.To, DiffMaxBytes)
	if err != nil {
		return nil, historyHint(err)
	}
	return diffResult{ID: d.Ref, From: d.From.ID, To: d.To.ID, Diff: d.Text, Cut: d.Cut, TooDifferent: d.TooDifferent,
		FromBytes: d.FromSize.Bytes, FromLines: d.FromSize.Lines, FromHash: d.FromSize.Hash,
		ToBytes: d.ToSize.Bytes, ToLines: d.ToSize.Lines, ToHash: d.ToSize.Hash}, nil
}

// ---- brain_restore

func (s *Set) restoreSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_restore", Title: "Restore an old version", Needs: brain.CapWrite, Destructive: true, Result: restoreResult{},
		Description: "Make an old version of a note its current one: its content comes back as a new version (history is " +
			"never rewritten, so the restore itself can be undone the same way). Brings back an archived note too. The " +
			"content is the version's bytes, with the wing and hall fields set to the note's place if it moved since. " +
			"Pass the content_hash you read as expected_hash to fail with conflict if the note changed meanwhile. Returns " +
			"{id, path, content_hash, restored, unchanged}: restored is the version restored; unchanged is true when the " +
			"note already had that content (nothing was written).",
		Args: []toolspec.Arg{refArg("a note id wing/hall/slug or its path"),
			versionArg("version", true, "The version to restore, as brain_history lists it."), s.reasonArg("Why, recorded in history"),
			expectedHashArg("the restore fails with conflict if the note changed."), wingArg(), s.keyArg()},
	}
}

type restoreArgs struct {
	ID           string `json:"id"`
	Version      string `json:"version"`
	Reason       string `json:"reason"`
	ExpectedHash string `json:"expected_hash"`
	WingArg
	KeyArg
}

type restoreResult struct {
	ID          string `json:"id"`
	Path        string `json:"path"`
	ContentHash string `json:"content_hash"`
	Restored    string `json:"restored"`
	Unchanged   bool   `json:"unchanged"`
}

func (s *Set) restore(ctx context.Context, c Caller, a *restoreArgs) (any, error) {
	return s.keyed(ctx, c, "brain_restore", &a.KeyArg, &a.WingArg, a, func(k *keyCall) (any, error) {
		ref := func(n *store.Note) string { return cmp.Or(n.ID, n.Path) }
		n, v, unchanged, err := s.st.Restore(ctx, store.Restoration{Ref: a.ID, Version: a.Version, Reason: a.Reason, ExpectedHash: a.ExpectedHash, By: c.Email,
			Hook: k.hook(idempotency.Whole, func(in store.Intent) any {
				return restoreResult{ID: ref(in.Note), Path: in.Note.Path, ContentHash: in.Note.Hash, Restored: a.Version}
			}), Prov: k.prov("brain_restore", a.Reason)})
		if err != nil {
			return nil, historyHint(err)
		}
		return restoreResult{ID: ref(n), Path: n.Path, ContentHash: n.Hash, Restored: v.ID, Unchanged: unchanged}, nil
	})
}

// ---- brain_archive

func (s *Set) archiveSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_archive", Title: "Archive a note", Needs: brain.CapCurate, Destructive: true, Result: archiveResult{},
		Description: "Curators only: retire a note that is outdated or wrong, or reject an inbox note (by its inbox path). " +
			"It leaves the wiki, search, brain_list and _index.md; its versions stay in history, brain_list with archived " +
			"true lists it, and brain_restore brings it back. Returns {id, path, content_hash, archived, linked_from}: " +
			"content_hash is that of the version archived, linked_from the notes of the wing whose links to it now lead " +
			"to an archived note (update or move them as needed).",
		Args: []toolspec.Arg{refArg("a note id wing/hall/slug, or an inbox path"), s.reasonArg("Why, recorded in history"),
			expectedHashArg("the archive fails with conflict if the note changed."), wingArg(), s.keyArg()},
	}
}

type archiveArgs struct {
	ID           string `json:"id"`
	Reason       string `json:"reason"`
	ExpectedHash string `json:"expected_hash"`
	WingArg
	KeyArg
}

type archiveResult struct {
	ID          string   `json:"id"`
	Path        string   `json:"path"`
	ContentHash string   `json:"content_hash"`
	Archived    bool     `json:"archived"`
	LinkedFrom  []string `json:"linked_from"`
}

func (s *Set) archive(ctx context.Context, c Caller, a *archiveArgs) (any, error) {
	return curate(s, ctx, c, "brain_archive", a.Reason, &a.KeyArg, &a.WingArg, a, archiveResultOf,
		func(hook store.Hook, p store.Provenance) (store.Archived, error) {
			return s.st.Archive(ctx, store.Archival{Ref: a.ID, Reason: a.Reason, ExpectedHash: a.ExpectedHash, By: c.Email, Hook: hook, Prov: p})
		})
}

// curate runs a history-changing curation under its idempotency key: change
// makes the store's change with the hook and provenance given, and result
// turns its outcome into the answer, the same answer a replay gives.
func curate[O, R any](s *Set, ctx context.Context, c Caller, tool, reason string, ka *KeyArg, wa *WingArg, args any,
	result func(O) R, change func(store.Hook, store.Provenance) (O, error)) (any, error) {
	return s.keyed(ctx, c, tool, ka, wa, args, func(k *keyCall) (any, error) {
		hook := k.hook(idempotency.Whole, func(in store.Intent) any { return result(in.Outcome.(O)) })
		out, err := change(hook, k.prov(tool, reason))
		if err != nil {
			return nil, historyHint(err)
		}
		return result(out), nil
	})
}

func archiveResultOf(a store.Archived) archiveResult {
	return archiveResult{ID: a.Ref, Path: a.Path, ContentHash: a.Hash, Archived: true, LinkedFrom: a.LinkedFrom}
}

// ---- brain_move

func (s *Set) moveSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_move", Title: "Move or rename a note", Needs: brain.CapCurate, Destructive: true, Result: moveResult{},
		Description: "Curators only: file a note under another hall, give it another slug, or both, in one change of " +
			"history that keeps its versions. Every [[link]] to it from a note of this wing is rewritten to the new id in " +
			"the same change; links from other wings keep the old id, and brain_get of it answers moved with the new " +
			"one. A move onto an existing note is already_exists. " +
			"Returns {id, path, content_hash, moved_from, links_rewritten, rewritten_in, linked_from_other_wings}: " +
			"links_rewritten counts the links changed, rewritten_in lists the notes they are in, " +
			"linked_from_other_wings the notes of your other wings that still link to the old id (through the " +
			"gateway; linked_from_other_wings_unchecked names wings that could not say).",
		CrossLinks: &toolspec.CrossLinks{From: "moved_from", Ask: "brain_links", Into: "linked_from_other_wings"},
		Args: []toolspec.Arg{idArg("the note id wing/hall/slug"), hallArg("The hall it goes to; omit to keep its hall.", false),
			{Name: "slug", Type: toolspec.String, Check: slugCheck, Desc: "Its new slug; omit to keep it."},
			s.reasonArg("Why, recorded in history"), wingArg(), s.keyArg()},
	}
}

type moveArgs struct {
	ID     string `json:"id"`
	Hall   string `json:"hall"`
	Slug   string `json:"slug"`
	Reason string `json:"reason"`
	WingArg
	KeyArg
}

type moveResult struct {
	ID             string   `json:"id"`
	Path           string   `json:"path"`
	ContentHash    string   `json:"content_hash"`
	MovedFrom      string   `json:"moved_from"`
	LinksRewritten int      `json:"links_rewritten"`
	RewrittenIn    []string `json:"rewritten_in"`
	// Added by the gateway (the spec's CrossLinks), never set here.
	LinkedFromOtherWings []string `json:"linked_from_other_wings,omitempty"`
	Unchecked            []string `json:"linked_from_other_wings_unchecked,omitempty"`
}

func (s *Set) move(ctx context.Context, c Caller, a *moveArgs) (any, error) {
	if a.Hall == "" && a.Slug == "" {
		return nil, invalid("give hall, slug or both: where the note goes")
	}
	return curate(s, ctx, c, "brain_move", a.Reason, &a.KeyArg, &a.WingArg, a, moveResultOf,
		func(hook store.Hook, p store.Provenance) (store.Moved, error) {
			return s.st.Move(ctx, store.Relocation{ID: a.ID, Hall: a.Hall, Slug: a.Slug, Reason: a.Reason, By: c.Email, Hook: hook, Prov: p})
		})
}

func moveResultOf(m store.Moved) moveResult {
	return moveResult{ID: m.Note.ID, Path: m.Note.Path, ContentHash: m.Note.Hash, MovedFrom: m.From, LinksRewritten: m.Links, RewrittenIn: m.Rewritten}
}

// ---- brain_purge

func (s *Set) purgeSpec() *toolspec.Spec {
	return &toolspec.Spec{
		Name: "brain_purge", Title: "Purge content from history", Needs: brain.CapCurate, Destructive: true, Result: purgeResult{},
		Description: "Curators only, and only where an operator enabled purging: remove a leaked secret or personal data " +
			"from history for good, the one change that rewrites history. With version, that version's content (update " +
			"or archive the note first if it is the current one); without, every version's, and the note is removed. " +
			"The versions stay listed, marked purged, with a notice of who purged them, when and why, and an audit " +
			"version records the purge; afterwards the bytes are gone from the shard's disk. Version ids after the purged " +
			"one change. Returns {id, path, purged_versions, removed}.",
		Args: []toolspec.Arg{refArg("a note id wing/hall/slug or its path"),
			s.reasonArg("Why, recorded in the purge notice and the audit version"),
			versionArg("version", false, "The version whose content is purged, as brain_history lists it; omit to purge every version and remove the note."),
			wingArg(), s.keyArg()},
	}
}

type purgeArgs struct {
	ID      string `json:"id"`
	Reason  string `json:"reason"`
	Version string `json:"version"`
	WingArg
	KeyArg
}

type purgeResult struct {
	ID             string `json:"id"`
	Path           string `json:"path"`
	PurgedVersions int    `json:"purged_versions"`
	Removed        bool   `json:"removed"`
}

func (s *Set) purge(ctx context.Context, c Caller, a *purgeArgs) (any, error) {
	return curate(s, ctx, c, "brain_purge", a.Reason, &a.KeyArg, &a.WingArg, a, purgeResultOf,
		func(hook store.Hook, p store.Provenance) (store.Purged, error) {
			return s.st.Purge(ctx, store.Purging{Ref: a.ID, Version: a.Version, Reason: a.Reason, By: c.Email, Hook: hook, Prov: p})
		})
}

func purgeResultOf(p store.Purged) purgeResult {
	return purgeResult{ID: p.Ref, Path: p.Path, PurgedVersions: p.Versions, Removed: p.Removed}
}
