package hooks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/internal/jsontext"
	"github.com/brainstem/brainstem/internal/smallfile"
)

// Installing the hooks into a Claude Code settings file: `brainstem hooks
// install` merges one entry per hook into the file's "hooks", keeping
// every other byte as it is (jsonedit.go); running it again changes
// nothing; `brainstem hooks uninstall` takes out exactly those entries. An
// install remembers the file's bytes before it (in the person's
// configuration directory), so that an uninstall of a file nothing else
// changed since gives back those bytes exactly, or removes the file it
// created.

const (
	// maxClaudeSettingsBytes bounds a settings file read.
	maxClaudeSettingsBytes = 4 << 20
	// claudeTimeout is the timeout, in seconds, of each installed entry:
	// past every time box (MaxTimeout), so the hook always answers first.
	claudeTimeout = 30
)

// Scopes of a settings file.
const (
	ScopeUser    = "user"    // ~/.claude/settings.json
	ScopeProject = "project" // .claude/settings.json in the current directory
)

// ErrSettingsFile: the Claude Code settings file cannot be merged into (not
// a JSON object, "hooks" not an object, an event's entry not an array, too
// large); nothing was written.
var ErrSettingsFile = errors.New("hooks: the settings file cannot be merged into")

// ClaudeSettingsPath is the settings file of scope: home's for the user,
// dir's for the project.
func ClaudeSettingsPath(scope, home, dir string) (string, error) {
	switch scope {
	case ScopeUser:
		return filepath.Join(home, ".claude", "settings.json"), nil
	case ScopeProject:
		return filepath.Join(dir, ".claude", "settings.json"), nil
	}
	return "", fmt.Errorf("%w: scope %q is not user or project", ErrUsage, scope)
}

// InstallOptions say which file and which command.
type InstallOptions struct {
	Path string // the settings file
	// Command runs brainstem in the entries; "" means DefaultCommand().
	Command string
	// URL, when set, is passed to every hook as --url.
	URL string
	// RecordDir keeps what install replaced; "" means
	// <user config dir>/brainstem/hooks-installed.
	RecordDir string
}

// Result says what install or uninstall did.
type Result struct {
	Path     string
	Changed  bool // the file was written (or removed)
	Restored bool // uninstall gave back the bytes from before install
}

// DefaultCommand is how the entries call this binary: "brainstem" when
// that is what $PATH finds, else its absolute path.
func DefaultCommand() string {
	self, err := os.Executable()
	if err != nil {
		return "brainstem"
	}
	if found, err := exec.LookPath("brainstem"); err == nil {
		a, errA := filepath.EvalSymlinks(found)
		b, errB := filepath.EvalSymlinks(self)
		if errA == nil && errB == nil && a == b {
			return "brainstem"
		}
	}
	return shellQuote(self)
}

// hookGroup and hookHandler are a settings entry, as Claude Code's hooks
// reference defines them.
type hookGroup struct {
	Matcher string        `json:"matcher,omitempty"`
	Hooks   []hookHandler `json:"hooks"`
}

type hookHandler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
}

// command is how the entries call this binary.
func (o *InstallOptions) command() string {
	if o.Command == "" {
		return DefaultCommand()
	}
	return o.Command
}

// group is the entry of ev.
func (o *InstallOptions) group(ev Event) hookGroup {
	cmd := o.command() + " hook " + ev.Name
	if o.URL != "" {
		cmd += " --url " + shellQuote(o.URL)
	}
	return hookGroup{Matcher: ev.Matcher, Hooks: []hookHandler{{Type: "command", Command: cmd, Timeout: claudeTimeout}}}
}

// Fragment is the settings that install merges, as a JSON document of its
// own (`brainstem hooks install --print`).
func (o *InstallOptions) Fragment() string {
	out, _, err := o.merge("")
	if err != nil {
		return "{}\n" // merging into nothing cannot fail
	}
	return out
}

// merge returns doc with the entries merged in ("" is a new file), and
// the containers it created: "hooks", and the events' names.
func (o *InstallOptions) merge(doc string) (string, []string, error) {
	pre, top, post, err := splitDocument(doc)
	if err != nil {
		return "", nil, err
	}
	l := detectLayout(top)
	var created []string
	hooksAt := top.find("hooks")
	if hooksAt < 0 {
		top.add("hooks", func(indent string) string { return "{}" }, "", l)
		hooksAt, created = len(top.members)-1, append(created, "hooks")
	}
	hm := &top.members[hooksAt]
	ho, err := parseContainer(hm.value)
	if err != nil || ho.array {
		return "", nil, fmt.Errorf("%w: \"hooks\" is not an object", ErrSettingsFile)
	}
	for _, ev := range Events() {
		made, err := o.mergeEvent(ho, ev, indentOf(hm.lead), l)
		if err != nil {
			return "", nil, err
		}
		if made {
			created = append(created, ev.Claude)
		}
	}
	hm.value = ho.render()
	return pre + top.render() + post, created, nil
}

// mergeEvent adds ev's entry to the hooks object ho (own: its line's
// indentation), or updates the entry install made before; created says it
// added the event's list.
func (o *InstallOptions) mergeEvent(ho *jsonContainer, ev Event, own string, l layout) (created bool, err error) {
	want := o.group(ev)
	at := ho.find(ev.Claude)
	if at < 0 {
		ho.add(ev.Claude, func(indent string) string { return renderValue([]hookGroup{want}, indent, l) }, own, l)
		return true, nil
	}
	em := &ho.members[at]
	arr, err := parseContainer(em.value)
	if err != nil || !arr.array {
		return false, fmt.Errorf("%w: hooks.%s is not an array", ErrSettingsFile, ev.Claude)
	}
	for i := range arr.members {
		el := &arr.members[i]
		if name, ok := ourGroup(el.value, o.command()); ok && name == ev.Name {
			var have hookGroup
			if json.Unmarshal([]byte(el.value), &have) != nil || !reflect.DeepEqual(have, want) {
				el.value = renderValue(want, indentOf(el.lead), l)
				em.value = arr.render()
			}
			return false, nil
		}
	}
	arr.add("", func(indent string) string { return renderValue(want, indent, l) }, indentOf(em.lead), l)
	em.value = arr.render()
	return false, nil
}

// unmerge takes every entry install makes out of doc (self: the command
// they call this binary by). An event list or "hooks" object left empty
// goes too when install created it (created names them) or, with created
// nil (the install's record is lost), always.
func unmerge(doc, self string, created []string) (string, error) {
	made := func(name string) bool { return created == nil || slices.Contains(created, name) }
	pre, top, post, err := splitDocument(doc)
	if err != nil {
		return "", err
	}
	at := top.find("hooks")
	if at < 0 {
		return doc, nil
	}
	ho, err := parseContainer(top.members[at].value)
	if err != nil || ho.array {
		return doc, nil
	}
	for i := len(ho.members) - 1; i >= 0; i-- {
		arr, err := parseContainer(ho.members[i].value)
		if err != nil || !arr.array {
			continue
		}
		removed := false
		for j := len(arr.members) - 1; j >= 0; j-- {
			if _, ok := ourGroup(arr.members[j].value, self); ok {
				arr.remove(j)
				removed = true
			}
		}
		switch {
		case removed && len(arr.members) == 0 && made(ho.members[i].key):
			ho.remove(i)
		case removed:
			ho.members[i].value = arr.render()
		}
	}
	if len(ho.members) == 0 && made("hooks") {
		top.remove(at)
	} else {
		top.members[at].value = ho.render()
	}
	return pre + top.render() + post, nil
}

// ourGroup reports whether an entry's bytes are a group install makes:
// every handler of it runs `brainstem hook <event>`, or self (the command
// install writes, whatever the binary's name) hook <event>; it returns the
// event.
func ourGroup(value, self string) (string, bool) {
	var g struct {
		Hooks []struct {
			Type    string `json:"type"`
			Command string `json:"command"`
		} `json:"hooks"`
	}
	if json.Unmarshal([]byte(value), &g) != nil || len(g.Hooks) == 0 {
		return "", false
	}
	name := ""
	for _, h := range g.Hooks {
		ev, ok := ourCommand(h.Command)
		if rest, found := strings.CutPrefix(h.Command, self+" hook "); !ok && found && self != "" {
			ev, _, _ = strings.Cut(rest, " ")
			_, ok = LookupEvent(ev)
		}
		if h.Type != "command" || !ok || name != "" && ev != name {
			return "", false
		}
		name = ev
	}
	return name, true
}

// ourCommand reports whether cmd runs `brainstem hook <event>` (brainstem
// by name or by a path, quoted or not) and returns the event.
func ourCommand(cmd string) (string, bool) {
	cmd = strings.TrimSpace(cmd)
	var prog, rest string
	if q := cmd[:min(1, len(cmd))]; q == "'" || q == `"` {
		end := strings.Index(cmd[1:], q)
		if end < 0 {
			return "", false
		}
		prog, rest = cmd[1:1+end], cmd[2+end:]
	} else {
		prog, rest, _ = strings.Cut(cmd, " ")
	}
	if base := prog[strings.LastIndexAny(prog, `/\`)+1:]; strings.TrimSuffix(base, ".exe") != "brainstem" {
		return "", false
	}
	f := strings.Fields(rest)
	if len(f) < 2 || f[0] != "hook" {
		return "", false
	}
	if _, ok := LookupEvent(f[1]); !ok {
		return "", false
	}
	return f[1], true
}

// splitDocument splits a settings file into the whitespace before its top
// object, the object and what follows; "" (or only whitespace) is a new
// file: an empty object followed by a newline.
func splitDocument(doc string) (pre string, top *jsonContainer, post string, err error) {
	if strings.TrimSpace(doc) == "" {
		top, _ = parseContainer("{}")
		return "", top, "\n", nil
	}
	if !json.Valid([]byte(doc)) {
		return "", nil, "", fmt.Errorf("%w: it is not valid JSON", ErrSettingsFile)
	}
	start := jsontext.SkipSpace(doc, 0)
	end := skipValue(doc, start)
	if doc[start] != '{' {
		return "", nil, "", fmt.Errorf("%w: it is not a JSON object", ErrSettingsFile)
	}
	top, err = parseContainer(doc[start:end])
	return doc[:start], top, doc[end:], err
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// readSettingsFile reads a settings file ("" and false when it does not
// exist), following a symbolic link to the file it names.
func readSettingsFile(path string) (real string, doc string, exists bool, err error) {
	real = path
	if p, err := filepath.EvalSymlinks(path); err == nil {
		real = p
	}
	b, err := smallfile.Read(real, maxClaudeSettingsBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return real, "", false, nil
	case errors.Is(err, smallfile.ErrTooLarge):
		return real, "", false, fmt.Errorf("%w: %w", ErrSettingsFile, err)
	case err != nil:
		return real, "", false, fmt.Errorf("hooks: %w", err)
	}
	return real, string(b), true, nil
}

// writeSettingsFile writes doc to path atomically, keeping an existing
// file's mode.
func writeSettingsFile(path, doc string) error {
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("hooks: %w", err)
	}
	if err := atomicfile.WriteFile(path, []byte(doc), mode); err != nil {
		return fmt.Errorf("hooks: writing %s: %w", path, err)
	}
	return nil
}

func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
