package hooks

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/install/*.golden")

// installCase is a settings file of testdata/install ("" for none).
type installCase struct {
	name, original string
	exists         bool
	// structural: taking the entries out (knowing the containers install
	// made) gives back the original bytes: every case but a new file.
	structural bool
}

func installCases(t *testing.T) []installCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "install", "*.json"))
	if err != nil || len(files) < 5 {
		t.Fatalf("testdata/install: %v %v", files, err)
	}
	cases := []installCase{{name: "new-file"}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		cases = append(cases, installCase{name: name, original: string(b), exists: true, structural: true})
	}
	return cases
}

func readFile(t *testing.T, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "install", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s changed; review it and run go test -update:\n%s", path, got)
	}
}

// TestInstallGolden: install merges the entries as the golden file shows,
// a second install changes nothing, every setting and hook of the file
// stays (the decoded file less the entries is the original), taking the
// entries out gives back the original bytes, and uninstall restores them
// (or removes the file it created).
func TestInstallGolden(t *testing.T) {
	for _, tc := range installCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".claude", "settings.json")
			if tc.exists {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tc.original), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			opt := InstallOptions{Path: path, Command: "brainstem", RecordDir: t.TempDir()}
			if res, err := Install(opt); err != nil || !res.Changed {
				t.Fatalf("Install: %+v, %v", res, err)
			}
			got, _ := readFile(t, path)
			golden(t, tc.name, got)
			if res, err := Install(opt); err != nil || res.Changed {
				t.Fatalf("a second Install: %+v, %v", res, err)
			}
			if again, _ := readFile(t, path); again != got {
				t.Fatalf("a second Install changed the file:\n%s", again)
			}
			checkOthersKept(t, tc.original, got)
			_, created, _ := opt.merge(tc.original)
			if out, err := unmerge(got, opt.command(), created); err != nil || tc.structural && out != tc.original {
				t.Errorf("taking the entries out: %v\n%q\nwant\n%q", err, out, tc.original)
			}
			if st, err := os.Stat(path); err != nil || tc.exists && st.Mode().Perm() != 0o600 {
				t.Errorf("the file's mode changed: %v %v", st.Mode(), err)
			}
			res, err := Uninstall(opt)
			after, exists := readFile(t, path)
			if err != nil || !res.Restored || exists != tc.exists || after != tc.original {
				t.Fatalf("Uninstall: %+v, %v; exists %v:\n%q\nwant\n%q", res, err, exists, after, tc.original)
			}
		})
	}
}

// checkOthersKept: merged, decoded, less the groups install makes, is
// original decoded (with no event list or "hooks" left empty by them).
func checkOthersKept(t *testing.T, original, merged string) {
	t.Helper()
	var want, got map[string]any
	if original != "" {
		if err := json.Unmarshal([]byte(original), &want); err != nil {
			t.Fatal(err)
		}
	}
	if err := json.Unmarshal([]byte(merged), &got); err != nil {
		t.Fatalf("the merged file is not JSON: %v", err)
	}
	hooks, _ := got["hooks"].(map[string]any)
	ours := 0
	for ev, v := range hooks {
		var keep []any
		for _, g := range v.([]any) {
			b, _ := json.Marshal(g)
			if _, ok := ourGroup(string(b), "brainstem"); ok {
				ours++
				continue
			}
			keep = append(keep, g)
		}
		if keep == nil {
			keep = []any{}
		}
		hooks[ev] = keep
	}
	if ours != len(Events()) {
		t.Errorf("%d entries of ours, want %d", ours, len(Events()))
	}
	wantHooks, _ := want["hooks"].(map[string]any)
	for ev, v := range hooks {
		if _, had := wantHooks[ev]; !had && len(v.([]any)) == 0 {
			delete(hooks, ev)
		}
	}
	if _, had := want["hooks"]; !had && len(hooks) == 0 {
		delete(got, "hooks")
	}
	if want == nil {
		want = map[string]any{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the other settings changed:\n%v\nwant\n%v", got, want)
	}
}

// TestUninstallKeepsLaterEdits: when the file changed after the install,
// uninstall takes out the entries alone and keeps the edit.
func TestUninstallKeepsLaterEdits(t *testing.T) {
	original, _ := readFile(t, filepath.Join("testdata", "install", "other-hooks.json"))
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	opt := InstallOptions{Path: path, Command: "/opt/brainstem/bin/brainstem", RecordDir: t.TempDir()}
	if _, err := Install(opt); err != nil {
		t.Fatal(err)
	}
	merged, _ := readFile(t, path)
	edited := strings.Replace(merged, `"includeCoAuthoredBy": false`, `"includeCoAuthoredBy": true`, 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Uninstall(opt)
	got, _ := readFile(t, path)
	want := strings.Replace(original, `"includeCoAuthoredBy": false`, `"includeCoAuthoredBy": true`, 1)
	if err != nil || res.Restored || !res.Changed || got != want {
		t.Fatalf("Uninstall: %+v, %v:\n%s\nwant\n%s", res, err, got, want)
	}
	if res, err := Uninstall(opt); err != nil || res.Changed {
		t.Fatalf("a second Uninstall: %+v, %v", res, err)
	}
}

// TestInstallUpdatesItsEntries: installing with another URL rewrites the
// entries install made, in place, and adds none.
func TestInstallUpdatesItsEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	rec := t.TempDir()
	for _, u := range []string{"https://brain.acme.com/mcp", "https://brain.example.org/mcp"} {
		if _, err := Install(InstallOptions{Path: path, Command: "brainstem", URL: u, RecordDir: rec}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := readFile(t, path)
	if strings.Count(got, "brainstem hook ") != 4 || strings.Contains(got, "acme") || strings.Count(got, "--url https://brain.example.org/mcp") != 4 {
		t.Fatalf("the entries:\n%s", got)
	}
	if res, err := Uninstall(InstallOptions{Path: path, RecordDir: rec}); err != nil || !res.Restored {
		t.Fatalf("Uninstall: %+v, %v", res, err)
	}
	if _, exists := readFile(t, path); exists {
		t.Fatal("the file install created is still there")
	}
}

// TestInstallRefuses: a file that is not a settings object is left alone.
func TestInstallRefuses(t *testing.T) {
	for _, tc := range []struct{ name, doc string }{
		{"not json", "{\"model\": \"opus\",}\n"},
		{"an array", "[]\n"},
		{"hooks not an object", `{"hooks": []}`},
		{"event not an array", `{"hooks": {"Stop": {"hooks": []}}}`},
		{"comments", "// my settings\n{}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			if err := os.WriteFile(path, []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Install(InstallOptions{Path: path, Command: "brainstem", RecordDir: t.TempDir()})
			if got, _ := readFile(t, path); !errors.Is(err, ErrSettingsFile) || got != tc.doc {
				t.Fatalf("Install: %v; file %q", err, got)
			}
		})
	}
}

func TestOurCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd, event string
	}{
		{"brainstem hook prompt", NamePrompt},
		{"/usr/local/bin/brainstem hook stop --url https://b.example/mcp", NameStop},
		{"'/Users/a b/bin/brainstem' hook pre-compact", NamePreCompact},
		{`"C:\tools\brainstem.exe" hook session-start`, NameSessionStart},
		{"brainstem hooks install", ""},
		{"brainstem hook nothing", ""},
		{"echo brainstem hook stop", ""},
		{"brainstemx hook stop", ""},
		{"'unterminated hook stop", ""},
		{"", ""},
	} {
		ev, ok := ourCommand(tc.cmd)
		if ok != (tc.event != "") || ev != tc.event {
			t.Errorf("ourCommand(%q) = %q, %v; want %q", tc.cmd, ev, ok, tc.event)
		}
	}
}

// TestInstallAnyBinaryName: entries that call the binary by another name
// (a renamed or versioned binary) are recognised as install's: a second
// install adds none, uninstall takes them out.
func TestInstallAnyBinaryName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	opt := InstallOptions{Path: path, Command: "/opt/tools/bs-2.1", RecordDir: t.TempDir()}
	for range 2 {
		if _, err := Install(opt); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := readFile(t, path)
	if strings.Count(got, "/opt/tools/bs-2.1 hook ") != len(Events()) {
		t.Fatalf("the entries:\n%s", got)
	}
	if out, err := unmerge(got, opt.Command, nil); err != nil || out != "{}\n" {
		t.Fatalf("unmerge: %q, %v", out, err)
	}
}

// FuzzInstall: for any settings object, the merged file is JSON, merging
// it again changes nothing, and taking the entries out gives back a
// document that decodes to the original.
func FuzzInstall(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "install", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}],"a":"\"}{"}}`)
	f.Add("\t{ \"k\" : [ 1 , {\"hooks\" : 2} ] }\r\n")
	opt := InstallOptions{Command: "brainstem"}
	f.Fuzz(func(t *testing.T, doc string) {
		var orig map[string]any
		if json.Unmarshal([]byte(doc), &orig) != nil || strings.Contains(doc, "hook") && strings.Contains(doc, "brainstem") || duplicateKeys(doc) {
			return // not an object; holds entries like ours already; duplicate keys (decoders differ)
		}
		merged, created, err := opt.merge(doc)
		if errors.Is(err, ErrSettingsFile) {
			return
		}
		if err != nil || !json.Valid([]byte(merged)) {
			t.Fatalf("merge(%q) = %q, %v", doc, merged, err)
		}
		if again, _, err := opt.merge(merged); err != nil || again != merged {
			t.Fatalf("merging twice changed %q into %q (%v)", merged, again, err)
		}
		out, err := unmerge(merged, opt.Command, created)
		var back map[string]any
		if err != nil || json.Unmarshal([]byte(out), &back) != nil || !reflect.DeepEqual(back, orig) {
			t.Fatalf("unmerge(merge(%q)) = %q, %v", doc, out, err)
		}
	})
}

// duplicateKeys reports whether an object of doc repeats a key.
func duplicateKeys(doc string) bool {
	dec := json.NewDecoder(strings.NewReader(doc))
	var stack []map[string]bool
	expectKey := []bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack, expectKey = append(stack, map[string]bool{}), append(expectKey, true)
				continue
			case '[':
				stack, expectKey = append(stack, nil), append(expectKey, false)
				continue
			default:
				stack, expectKey = stack[:len(stack)-1], expectKey[:len(expectKey)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1] != nil && expectKey[n-1] {
				if stack[n-1][v] {
					return true
				}
				stack[n-1][v] = true
				expectKey[n-1] = false
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1] != nil {
			expectKey[n-1] = true
		}
	}
}
