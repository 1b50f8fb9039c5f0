package remote

import (
	"context"
	"errors"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Probe tells an operator whether cfg's remote can be reached with its
// credentials, without a repository or any write: it lists the remote's
// refs (`brainstem shard --check-config`). The error says why not
// (ErrCredentials, ErrSecretFile, the network's), never quoting a secret.
func Probe(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	r := &Remote{cfg: cfg.WithDefaults()}
	auth, err := r.auth()
	if err != nil {
		return err
	}
	rem := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: remoteName, URLs: []string{cfg.URL}})
	_, err = rem.ListContext(ctx, &git.ListOptions{Auth: auth})
	if err == nil || errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil
	}
	return r.wrap("list", err)
}
