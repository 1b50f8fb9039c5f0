package gitserver

import (
	"fmt"
	"os"
	"os/exec"
)

// Person runs the git CLI as a person would: their name and email are
// the author and committer of what they commit, and git never prompts.
type Person struct {
	Name, Email string
}

// Git runs git with args in dir and returns its combined output.
func (p Person) Git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME="+p.Name, "GIT_AUTHOR_EMAIL="+p.Email,
		"GIT_COMMITTER_NAME="+p.Name, "GIT_COMMITTER_EMAIL="+p.Email, "GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %v: %w: %s", args, err, out)
	}
	return string(out), nil
}
