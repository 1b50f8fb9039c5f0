package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/internal/smallfile"
)

// installRecord is what an install replaced in one settings file.
type installRecord struct {
	Path    string `json:"path"`
	Existed bool   `json:"existed"`
	Before  []byte `json:"before"`       // the file's bytes before the first install
	After   string `json:"after_sha256"` // the digest of the bytes the install wrote
	// Created are the containers the installs made ("hooks", events).
	Created []string `json:"created"`
}

func (o *InstallOptions) recordPath(settings string) string {
	dir := o.RecordDir
	if dir == "" {
		if d, err := os.UserConfigDir(); err == nil {
			dir = filepath.Join(d, "brainstem", "hooks-installed")
		}
	}
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, digestOf(settings)[:32]+".json")
}

func (o *InstallOptions) loadRecord(settings string) *installRecord {
	p := o.recordPath(settings)
	if p == "" {
		return nil
	}
	b, err := smallfile.Read(p, 2*maxClaudeSettingsBytes+1024)
	var rec installRecord
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Path != settings {
		return nil
	}
	return &rec
}

func (o *InstallOptions) saveRecord(rec *installRecord) error {
	p := o.recordPath(rec.Path)
	if p == "" {
		return errors.New("hooks: no configuration directory to remember the install in")
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("hooks: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("hooks: %w", err)
	}
	if err := atomicfile.WriteFile(p, b, 0o600); err != nil { // it may hold the settings' secrets
		return fmt.Errorf("hooks: remembering the install: %w", err)
	}
	return nil
}

func (o *InstallOptions) dropRecord(settings string) {
	if p := o.recordPath(settings); p != "" {
		_ = os.Remove(p)
	}
}

// Install merges the hooks' entries into the settings file, creating it if
// needed. It changes nothing when they are there already.
func Install(opt InstallOptions) (Result, error) {
	path, doc, existed, err := readSettingsFile(opt.Path)
	res := Result{Path: path}
	if err != nil {
		return res, err
	}
	out, created, err := opt.merge(doc)
	if err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	if out == doc {
		return res, nil
	}
	rec := opt.loadRecord(path)
	if rec == nil || rec.After != digestOf(doc) {
		rec = &installRecord{Path: path, Existed: existed, Before: []byte(doc), Created: []string{}}
	}
	rec.After, rec.Created = digestOf(out), union(rec.Created, created)
	if err := opt.saveRecord(rec); err != nil {
		return res, err
	}
	if err := writeSettingsFile(path, out); err != nil {
		return res, err
	}
	res.Changed = true
	return res, nil
}

// Uninstall takes the hooks' entries out of the settings file. When the
// file is as the last install left it, its bytes from before are written
// back (and a file the install created is removed); otherwise exactly the
// entries are taken out, and every other byte stays.
func Uninstall(opt InstallOptions) (Result, error) {
	path, doc, existed, err := readSettingsFile(opt.Path)
	res := Result{Path: path}
	if err != nil || !existed {
		return res, err
	}
	rec := opt.loadRecord(path)
	if rec != nil && rec.After == digestOf(doc) {
		if rec.Existed {
			err = writeSettingsFile(path, string(rec.Before))
		} else {
			err = os.Remove(path)
		}
		if err != nil {
			return res, fmt.Errorf("hooks: restoring %s: %w", path, err)
		}
		opt.dropRecord(path)
		res.Changed, res.Restored = true, true
		return res, nil
	}
	var created []string // nil: no record, every emptied container goes
	if rec != nil {
		created = rec.Created
	}
	out, err := unmerge(doc, opt.command(), created)
	if err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	opt.dropRecord(path)
	if out == doc {
		return res, nil
	}
	if err := writeSettingsFile(path, out); err != nil {
		return res, err
	}
	res.Changed = true
	return res, nil
}
