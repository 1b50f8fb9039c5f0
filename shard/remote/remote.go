package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/gitstore"
)

// remoteName names the in-memory remote: the repository's config is
// never changed, and the fetched head is kept at refs/remotes/<it>/<branch>.
const remoteName = "brainstem"

// Named errors of Open, Fetch and Push.
var (
	// ErrRemoteMoved: the remote branch has commits the wing's branch does
	// not; they must be fetched and integrated before a push.
	ErrRemoteMoved = errors.New("remote: the remote branch moved; fetch and integrate first")
	// ErrCredentials: the remote refused the credentials (or wants some).
	ErrCredentials = errors.New("remote: the remote refused the credentials")
	// ErrSecretFile: a credential file cannot be read or is empty.
	ErrSecretFile = errors.New("remote: cannot read a credential file")
	// ErrNestedRoot: the brain directory is not the root of its git
	// worktree, so its paths would not map to wiki/<wing>/ in the remote.
	ErrNestedRoot = errors.New("remote: the brain directory must be the root of its git repository")
	// ErrDetached: the repository's HEAD names no branch.
	ErrDetached = errors.New("remote: the repository's HEAD is detached")
	// ErrPurgeNeedsForcePush: a purge rewrites pushed history; with a
	// remote set it needs Config.ForcePushOnPurge.
	ErrPurgeNeedsForcePush = errors.New("remote: a purge with a remote set rewrites the remote's history and needs the force-push-on-purge setting (--git-force-push-on-purge, with a remote branch that accepts force pushes), or turn purge off")
)

// refWait bounds the wait for a ref another process has locked (the
// history engine holds the branch's for the milliseconds of a commit).
const refWait = time.Second

// Remote pushes and fetches one wing's branch.
type Remote struct {
	cfg    Config
	log    *slog.Logger
	repo   *git.Repository
	store  *filesystem.Storage // repo's storage
	objs   *gitstore.Store     // where the remote's merges are written
	git    gitstore.Refs       // the refs under git's lock protocol
	refs   refStorer           // store as the fetch and the push see it
	rem    *git.Remote
	local  plumbing.ReferenceName // the branch the wing commits on
	track  plumbing.ReferenceName // where the fetched remote head is kept
	secret string                 // read at each use; scrubbed from errors
	now    func() time.Time       // the clock of merge commits
	root   string                 // the brain directory
	dirs   []string               // wiki/<w>/ and inbox/<w>/ of each wing
}

// Open connects the repository of the brain directory dir to cfg's
// remote. Nothing is sent until Fetch or Push.
func Open(dir string, cfg Config, log *slog.Logger) (*Remote, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("remote: open the repository of %s: %w", dir, err)
	}
	if err := checkRoot(repo, dir); err != nil {
		return nil, err
	}
	head, err := repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return nil, fmt.Errorf("remote: read HEAD: %w", err)
	}
	if head.Type() != plumbing.SymbolicReference {
		return nil, ErrDetached
	}
	fs, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return nil, errNotOnDisk
	}
	local, track := head.Target(), plumbing.NewRemoteReferenceName(remoteName, cfg.Branch)
	refs := refStorer{Storage: fs, names: []plumbing.ReferenceName{local, track}}
	rem := git.NewRemote(refs, &gitconfig.RemoteConfig{Name: remoteName, URLs: []string{cfg.URL}})
	var dirs []string
	for _, w := range cfg.Wings() {
		dirs = append(dirs, brain.TopWiki+"/"+w+"/", brain.TopInbox+"/"+w+"/")
	}
	gitDir := fs.Filesystem().Root()
	return &Remote{cfg: cfg, log: log, repo: repo, store: fs, refs: refs, rem: rem, local: local,
		objs: gitstore.Open(gitDir, gitDir), git: gitstore.Refs{Common: gitDir, Locks: gitstore.LockTimes{Timeout: refWait, Stale: gitstore.DefaultStaleLock}},
		track: track, now: time.Now, root: dir, dirs: dirs}, nil
}

func checkRoot(repo *git.Repository, dir string) error {
	wt, err := repo.Worktree()
	if err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	want, err1 := filepath.EvalSymlinks(dir)
	got, err2 := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	if want != got {
		return fmt.Errorf("%w (%s is under %s)", ErrNestedRoot, dir, got)
	}
	return nil
}

// localRoundTimeout bounds a round with a remote on this machine (a
// repository path: see roundContext).
const localRoundTimeout = 2 * time.Minute

// roundContext is the context of one round. Over the file transport (a
// repository path) go-git runs git's receive-pack and upload-pack as child
// processes, and a transfer cut mid-stream by a cancelled context makes it
// wait for them with no bound (their own children hold the pipes open):
// the shard's Close hung. So a round on a path is not cut by shutdown; it
// ends within localRoundTimeout. Network transports are cut at once.
func (r *Remote) roundContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ep, err := transport.NewEndpoint(r.cfg.URL); err == nil && ep.Protocol == "file" {
		return context.WithTimeout(context.WithoutCancel(ctx), localRoundTimeout)
	}
	return context.WithCancel(ctx)
}

// Config returns the remote's configuration, defaults filled.
func (r *Remote) Config() Config { return r.cfg }

// CheckPurge refuses a purge unless the force-push setting allows it.
func (r *Remote) CheckPurge() error {
	if !r.cfg.ForcePushOnPurge {
		return ErrPurgeNeedsForcePush
	}
	return nil
}

func (r *Remote) auth() (transport.AuthMethod, error) {
	c := r.cfg
	switch {
	case c.TokenFile != "":
		tok, err := ReadSecret(c.TokenFile)
		if err != nil {
			return nil, err
		}
		r.secret = tok
		return &githttp.BasicAuth{Username: c.Username, Password: tok}, nil
	case c.SSHKeyFile != "":
		user := "git"
		if ep, err := transport.NewEndpoint(c.URL); err == nil && ep.User != "" {
			user = ep.User
		}
		keys, err := gitssh.NewPublicKeysFromFile(user, c.SSHKeyFile, "")
		if err != nil {
			return nil, fmt.Errorf("%w: the SSH key %s does not parse (an unencrypted private key is needed)", ErrSecretFile, c.SSHKeyFile)
		}
		if keys.HostKeyCallback, err = gitssh.NewKnownHostsCallback(c.KnownHostsFile); err != nil {
			return nil, fmt.Errorf("%w: known_hosts %s: %w", ErrSecretFile, c.KnownHostsFile, err)
		}
		return keys, nil
	}
	return nil, nil
}

// ReadSecret reads a secret from its file (surrounding space trimmed);
// errors name the file, never the content.
func ReadSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrSecretFile, path, errors.Unwrap(err))
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%w: %s is empty", ErrSecretFile, path)
	}
	return s, nil
}

// Fetch brings the remote branch's new commits into the repository's
// objects and returns the remote head (zero when the remote has no such
// branch yet).
func (r *Remote) Fetch(ctx context.Context) (plumbing.Hash, error) {
	auth, err := r.auth()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	spec := gitconfig.RefSpec("+" + plumbing.NewBranchReferenceName(r.cfg.Branch).String() + ":" + r.track.String())
	opts := &git.FetchOptions{RemoteName: remoteName, RefSpecs: []gitconfig.RefSpec{spec}, Auth: auth}
	purged, err := r.purged()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if len(purged) > 0 {
		return r.fetchQuarantined(ctx, opts, purged)
	}
	if done, head, err := r.fetched(r.rem.FetchContext(ctx, opts)); done {
		return head, err
	}
	ref, err := r.repo.Storer.Reference(r.track)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("remote: read %s: %w", r.track, err)
	}
	return ref.Hash(), nil
}

// fetched sorts a fetch's error: done when the fetch has no head to
// read (the remote is empty or lacks the branch: head zero, or it failed:
// err).
func (r *Remote) fetched(err error) (done bool, head plumbing.Hash, _ error) {
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return false, plumbing.ZeroHash, nil
	case errors.Is(err, transport.ErrEmptyRemoteRepository), errors.As(err, new(git.NoMatchingRefSpecError)):
		return true, plumbing.ZeroHash, nil
	default:
		return true, plumbing.ZeroHash, r.wrap("fetch", err)
	}
}

// Pushed is what one Push did.
type Pushed struct {
	// From is the remote head before, To the wing's head pushed (equal
	// when there was nothing to push).
	From, To plumbing.Hash
}

// Push asks the remote for its branch's head and, when the wing's branch
// contains it, pushes the branch to it. The remote is fetched only when
// its head is not the one last seen (a push of the wing's own commits
// costs one exchange, not a fetch and a push). A remote with commits the
// branch lacks gives ErrRemoteMoved (nothing is pushed): integrate them,
// then push again.
func (r *Remote) Push(ctx context.Context) (Pushed, error) {
	sess, ar, remote, err := r.receivePack(ctx, "push")
	if err != nil {
		return Pushed{}, err
	}
	defer sess.Close()
	if !r.seen(remote) {
		if remote, err = r.Fetch(ctx); err != nil {
			return Pushed{}, err
		}
	}
	local, err := r.head()
	if err != nil {
		return Pushed{}, err
	}
	p := Pushed{From: remote, To: local}
	if remote == p.To {
		return p, nil
	}
	if local.IsZero() { // a wing with no commit yet: the remote's are its first
		return Pushed{From: remote, To: remote}, ErrRemoteMoved
	}
	if ok, err := r.contains(p.To, remote); err != nil || !ok {
		return Pushed{From: remote, To: remote}, errors.Join(err, ErrRemoteMoved)
	}
	// The head checked above: the branch may have moved since.
	err = r.sendPack(ctx, sess, ar, remote, p.To)
	switch {
	case err == nil:
	case errors.Is(err, ErrRemoteMoved), strings.Contains(err.Error(), "non-fast-forward"), strings.Contains(err.Error(), "fetch first"):
		return Pushed{From: remote, To: remote}, ErrRemoteMoved // moved again since the fetch
	default:
		return Pushed{From: remote, To: remote}, r.wrap("push", err)
	}
	if err := r.git.Set(context.Background(), r.track, p.To); err != nil {
		return p, fmt.Errorf("remote: record the pushed head: %w", err)
	}
	return p, nil
}

// seen reports whether the remote head h is the one last fetched or
// pushed (or none, and none was).
func (r *Remote) seen(h plumbing.Hash) bool {
	ref, err := r.repo.Storer.Reference(r.track)
	if err != nil {
		return false
	}
	return ref.Hash() == h
}

// contains reports whether commit head has ancestor (or is it).
func (r *Remote) contains(head, ancestor plumbing.Hash) (bool, error) {
	if ancestor.IsZero() || head == ancestor {
		return true, nil
	}
	w, err := r.newCommits(head, ancestor)
	if err != nil {
		return false, err
	}
	return w.Ancestor, nil
}

// Commit returns a commit of the repository (a fetched one included).
func (r *Remote) Commit(h plumbing.Hash) (*object.Commit, error) { return r.repo.CommitObject(h) }

// wrap names what failed and where, maps refused credentials to
// ErrCredentials, and scrubs the secret from the message in any case.
func (r *Remote) wrap(op string, err error) error {
	if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) {
		err = fmt.Errorf("%w (%s %s: check the token or key file and its access to the repository): %w", ErrCredentials, op, r.cfg.Redacted(), err)
	} else {
		err = fmt.Errorf("remote: %s %s: %w", op, r.cfg.Redacted(), err)
	}
	return scrub(err, r.secret)
}

// scrubbed is an error whose message has the secret replaced.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

func scrub(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &scrubbed{msg: strings.ReplaceAll(err.Error(), secret, "[secret]"), err: err}
}
