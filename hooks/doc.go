// Package hooks is `brainstem hook <event>`: Claude Code's hooks for the
// team brain, and `brainstem hooks install|uninstall`, which merges them
// into a Claude Code settings file and takes them out again
// (docs/agents.md).
//
// Each hook reads the JSON Claude Code sends on stdin (its hooks
// reference: session_id, transcript_path, cwd, hook_event_name and the
// event's own fields) and writes exactly one JSON object on stdout:
//
//	session-start (SessionStart: startup, resume, clear, compact)
//	    hookSpecificOutput.additionalContext: a brief of at most 6 KB — the
//	    wings the person reaches (brain_wings), the notes most relevant to
//	    the repository in the working directory (one brain_query of its
//	    name, branch, recent commit subjects and README title), how to
//	    consult and capture; after a compaction, the notes captured earlier.
//	prompt (UserPromptSubmit)
//	    additionalContext with the top three hits of a brain_query of the
//	    prompt that clear the relevance bar; nothing for a short or trivial
//	    prompt, or when the time box ends first.
//	stop (Stop)
//	    {"decision":"block","reason":…} once per session, when the session
//	    changed files (or ran long) and wrote nothing to the brain: the
//	    reason is the capture_learnings prompt of the shards.
//	pre-compact (PreCompact)
//	    {}: it records the compaction and the notes captured so far in the
//	    session's log (session_log) and in the person's cache directory,
//	    where the compact session start reads them.
//
// Every hook calls the gateway as the person (their stored sign-in, package
// signin), over one stateless MCP request per tool call (protocol revision
// 2026-07-28), so it sees exactly the wings they may read.
//
// Fail-soft is the contract: whatever goes wrong — a gateway down or
// stalled, an expired sign-in, garbage on stdin, the time box — the hook
// answers {} (at most with a systemMessage naming the fix) and the command
// exits 0. What a hook injects is reference data, never instructions: only
// reviewed wiki notes, each quoted with its id, cleaned of hidden
// characters and comments (brain/injection), bounded in size; a hit the
// shard flags, or that injection.Scan flags, is named, never quoted. The
// hooks write nowhere but the brain and the person's cache directory
// (<user cache dir>/brainstem/hooks); a sign-in refreshed on the way is
// saved where `brainstem login` keeps it, as `brainstem token` does.
package hooks
