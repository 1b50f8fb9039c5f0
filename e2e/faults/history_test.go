package faults

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// verifyHistory holds the wing's git history to the acknowledged writes,
// with the git CLI as the judge: every acknowledged write is the commit
// that created its file, by its author, with its content; and the head
// holds exactly what is on disk (git status is clean). It returns the
// number of the wing's commits.
func (c *cluster) verifyHistory(wing string, ws []written) int {
	c.t.Helper()
	type commit struct{ id, author string }
	created := map[string]commit{} // path → the oldest commit that touched it
	out := c.git("log", "--format=%x01%H %ae", "--name-only", "--", "wiki/"+wing+"/")
	n := 0
	for _, rec := range strings.Split(out, "\x01")[1:] {
		lines := strings.Split(strings.TrimSpace(rec), "\n")
		id, author, _ := strings.Cut(lines[0], " ")
		n++
		for _, p := range lines[1:] {
			if p = strings.TrimSpace(p); p != "" {
				created[p] = commit{id, author} // log is newest first: the last seen is the oldest
			}
		}
	}
	var batch bytes.Buffer
	var asked []written
	for _, w := range ws {
		cm, ok := created[w.Path]
		switch {
		case !ok:
			c.t.Errorf("acknowledged write %s is in no commit", w.Path)
			continue
		case cm.author != w.Author:
			c.t.Errorf("acknowledged write %s was committed by %s, written by %s", w.Path, cm.author, w.Author)
		}
		fmt.Fprintf(&batch, "%s:%s\n", cm.id, w.Path)
		asked = append(asked, w)
	}
	cmd := exec.Command("git", "-C", c.brain, "cat-file", "--batch")
	cmd.Stdin = &batch
	raw, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("git cat-file --batch: %v", err)
	}
	r := bufio.NewReader(bytes.NewReader(raw))
	for _, w := range asked {
		hdr, err := r.ReadString('\n')
		f := strings.Fields(hdr)
		if err != nil || len(f) != 3 {
			c.t.Fatalf("git cat-file: %q (%v)", hdr, err)
		}
		size, _ := strconv.Atoi(f[2])
		body := make([]byte, size+1)
		if _, err := io.ReadFull(r, body); err != nil {
			c.t.Fatal(err)
		}
		if sum := sha256.Sum256(body[:size]); hex.EncodeToString(sum[:]) != w.Hash {
			c.t.Errorf("acknowledged write %s: its commit holds other content (%x, acknowledged %s)", w.Path, sum, w.Hash)
		}
	}
	if st := c.git("status", "--porcelain", "--untracked-files=all", "--", "wiki/"+wing, "inbox/"+wing); strings.TrimSpace(st) != "" {
		c.t.Errorf("history and disk disagree for wing %s:\n%s", wing, st)
	}
	if out, err := exec.Command("git", "-C", c.brain, "fsck", "--strict").CombinedOutput(); err != nil {
		c.t.Errorf("git fsck: %v\n%s", err, out)
	}
	return n
}

// git runs the git CLI in the brain.
func (c *cluster) git(args ...string) string {
	c.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", c.brain}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+c.dir)
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
