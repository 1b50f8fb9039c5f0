package shardserver

import (
	"errors"
	"io"
	"net/http"

	"github.com/brainstem/brainstem/shard/remote"
)

// webhook answers POST /remote/webhook: a git host's push event, signed
// with the wing's webhook secret (read from its file at each call, so a
// rotated Secret takes effect), triggers a pull at once.
func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	syncer, cfg := s.svc.Remote(), s.cfg.Shard.Remote
	if syncer == nil || cfg == nil || cfg.WebhookSecretFile == "" {
		http.Error(w, "no webhook: the wing has no remote or no webhook secret", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, remote.MaxWebhookBody))
	if err != nil {
		s.log.Warn("remote: webhook refused", "err", remote.ErrWebhookBody)
		http.Error(w, remote.ErrWebhookBody.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	secret, err := remote.ReadSecret(cfg.WebhookSecretFile)
	if err != nil {
		s.log.Error("remote: webhook secret", "err", err)
		http.Error(w, "webhook secret unavailable", http.StatusInternalServerError)
		return
	}
	a := remote.WebhookAuth{HubSignature256: r.Header.Get("X-Hub-Signature-256"),
		GiteaSignature: r.Header.Get("X-Gitea-Signature"), GitLabToken: r.Header.Get("X-Gitlab-Token")}
	if err := a.Verify([]byte(secret), body); err != nil {
		s.log.Warn("remote: webhook refused", "err", err, "remote_addr", r.RemoteAddr)
		code := http.StatusUnauthorized
		if errors.Is(err, remote.ErrWebhookSignature) {
			code = http.StatusForbidden
		}
		http.Error(w, err.Error(), code)
		return
	}
	syncer.Trigger()
	w.WriteHeader(http.StatusAccepted)
}
