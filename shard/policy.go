package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brainstem/brainstem/auth"
)

// DefaultPolicyPoll is how often a shard checks its policy file for a new
// version when Config.PolicyPoll is 0.
const DefaultPolicyPoll = 2 * time.Second

// livePolicy is the policy in force and where it comes from. The policy is
// swapped atomically; every call evaluates the one in force.
type livePolicy struct {
	path string // "" when the policy is fixed (Config.Policy)

	ptr atomic.Pointer[policyVersion]

	mu       sync.Mutex  // serialises reloads
	seen     fileVersion // the version in force
	bad      *fileVersion
	badErr   error // why bad was refused (logged and counted once)
	reloadOK func()
	reloadKO func()
}

func (lp *livePolicy) current() *policyVersion { return lp.ptr.Load() }
func (lp *livePolicy) store(v *policyVersion)  { lp.ptr.Store(v) }

// policyVersion is one loaded policy.
type policyVersion struct {
	compiled *auth.CompiledPolicy
	sha256   string // of the file's bytes ("" for a fixed policy)
	loadedAt time.Time
}

// fileVersion identifies one version of the policy file: the file its path
// resolves to (a Kubernetes ConfigMap mount swaps a symlink), that file's
// identity (device and inode where the platform has them), size and mtime.
type fileVersion struct {
	resolved string
	fi       fs.FileInfo
}

func (a fileVersion) same(b fileVersion) bool {
	if a.fi == nil || b.fi == nil {
		return a.fi == nil && b.fi == nil && a.resolved == b.resolved
	}
	return a.resolved == b.resolved && os.SameFile(a.fi, b.fi) && a.fi.Size() == b.fi.Size() && a.fi.ModTime().Equal(b.fi.ModTime())
}

// statPolicy resolves path and stats the file it names.
func statPolicy(path string) (fileVersion, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fileVersion{resolved: path}, err
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return fileVersion{resolved: resolved}, err
	}
	return fileVersion{resolved: resolved, fi: fi}, nil
}

// loadPolicyFile reads, validates and compiles the policy at path.
func loadPolicyFile(path string, now time.Time) (*policyVersion, fileVersion, error) {
	v, err := statPolicy(path)
	if err != nil {
		return nil, v, fmt.Errorf("shard: policy file: %w", err)
	}
	data, err := os.ReadFile(v.resolved)
	if err != nil {
		return nil, v, fmt.Errorf("shard: policy file: %w", err)
	}
	if len(data) > auth.MaxPolicyFileBytes {
		return nil, v, fmt.Errorf("shard: policy file %s: %w: over %d bytes", path, auth.ErrPolicyTooLarge, auth.MaxPolicyFileBytes)
	}
	p, err := auth.ParsePolicy(data)
	if err != nil {
		return nil, v, fmt.Errorf("shard: policy file %s: %w", path, err)
	}
	cp, err := auth.CompilePolicy(p)
	if err != nil {
		return nil, v, fmt.Errorf("shard: policy file %s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	return &policyVersion{compiled: cp, sha256: hex.EncodeToString(sum[:]), loadedAt: now}, v, nil
}

// ReloadPolicy re-reads the policy file (Config.PolicyFile) if it changed
// since it was last read — another file behind the path, another inode,
// size or mtime — or always if force (SIGHUP). A valid new policy is in
// force for the next call. A broken one is logged (as an error, once per
// version of the file) and counted, and the policy in force stays. It
// reports whether the policy in force changed. A shard with a fixed policy
// (no file) reports false.
func (s *Service) ReloadPolicy(force bool) (bool, error) {
	lp := &s.policy
	if lp.path == "" {
		return false, nil
	}
	lp.mu.Lock()
	defer lp.mu.Unlock()
	v, serr := statPolicy(lp.path)
	if !force {
		if serr == nil && v.same(lp.seen) {
			return false, nil
		}
		if lp.bad != nil && v.same(*lp.bad) {
			return false, lp.badErr // refused already: logged and counted then
		}
	}
	next, v, err := loadPolicyFile(lp.path, s.cfg.Now())
	if err != nil {
		lp.reloadKO()
		s.log.Error("policy file rejected; the previous policy stays in force until the file is fixed",
			"path", lp.path, "resolved", v.resolved, "err", err, "policy_sha256", lp.current().sha256)
		lp.bad, lp.badErr = &v, err
		return false, err
	}
	lp.seen, lp.bad, lp.badErr = v, nil, nil
	prev := lp.current()
	if next.sha256 == prev.sha256 {
		return false, nil // touched, not changed
	}
	lp.store(next)
	lp.reloadOK()
	p := next.compiled.Policy()
	s.log.Info("policy reloaded", "path", lp.path, "resolved", v.resolved, "policy_sha256", next.sha256, "previous_sha256", prev.sha256,
		"readers", len(p.Readers), "writers", len(p.Writers), "curators", len(p.Curators))
	return true, nil
}

// PolicySHA256 returns the sha256 of the policy file in force ("" for a
// fixed policy) and when it was loaded.
func (s *Service) PolicySHA256() (string, time.Time) {
	v := s.policy.current()
	return v.sha256, v.loadedAt
}

// watchPolicy polls the policy file until stop is closed.
func (s *Service) watchPolicy(every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			_, _ = s.ReloadPolicy(false) // errors are logged by ReloadPolicy
		}
	}
}
