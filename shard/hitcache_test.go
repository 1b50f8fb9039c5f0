package shard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/shard/remote"
	"github.com/brainstem/brainstem/shard/store"
)

// TestHitCachePull: a note served from the hit cache, then changed by a
// pull from the wing's git remote, is found as the pull left it.
func TestHitCachePull(t *testing.T) {
	ctx := context.Background()
	settle := func(cfg *Config) { // old files: out of the racy window, so cached
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(cfg.Brain, "wiki/payments/facts/retry-budgets.md"), old, old); err != nil {
			t.Fatal(err)
		}
	}
	g := newRemoteRigWith(t, 100*time.Millisecond, remote.MinPullInterval, settle)
	search := func() store.Hit {
		hits, err := g.svc.store.Search(ctx, "budget", store.SearchOptions{})
		if err != nil || len(hits) != 1 {
			t.Fatalf("search: %+v %v", hits, err)
		}
		return hits[0]
	}
	search()
	if search(); g.svc.store.HitCacheStats().Hits == 0 {
		t.Fatalf("the note was not served from memory: %+v", g.svc.store.HitCacheStats())
	}
	edited := strings.Replace(strings.Replace(note, "with a budget", "with a budget of ten percent", 1), "title: ", "title: Pulled ", 1)
	mustWrite(t, filepath.Join(g.clone, "wiki/payments/facts/retry-budgets.md"), []byte(edited), 0o644)
	adaGit(t, g.clone, "commit", "--quiet", "-am", "ten percent")
	adaGit(t, g.clone, "push", "--quiet", "origin", "main")
	g.svc.Remote().Trigger()
	path := filepath.Join(g.svc.cfg.Brain, "wiki/payments/facts/retry-budgets.md")
	eventually(t, "the pull", func() bool { b, _ := os.ReadFile(path); return string(b) == edited })
	h := search()
	sum := sha256.Sum256([]byte(edited))
	if want := hex.EncodeToString(sum[:]); h.Hash != want || !strings.Contains(h.Snippet, "ten percent") || !strings.HasPrefix(h.Title, "Pulled ") {
		t.Fatalf("after the pull: %+v, want hash %s", h, want)
	}
}
