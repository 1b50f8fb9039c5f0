package remote

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strings"
)

// MaxWebhookBody bounds a webhook call's body (git hosts send push events
// well under it).
const MaxWebhookBody = 1 << 20

// Named webhook errors.
var (
	ErrWebhookUnsigned  = errors.New("remote: webhook call carries no signature (X-Hub-Signature-256, X-Gitea-Signature or X-Gitlab-Token)")
	ErrWebhookSignature = errors.New("remote: webhook signature does not match the shared secret")
	ErrWebhookBody      = errors.New("remote: webhook body over the size limit")
)

// WebhookAuth is what a git host sends to prove a call is its own: GitHub
// (and Gitea, Forgejo) X-Hub-Signature-256 "sha256=<hex HMAC-SHA256 of
// the body>", Gitea's X-Gitea-Signature (the bare hex), GitLab's
// X-Gitlab-Token (the secret itself, GitLab signs nothing).
type WebhookAuth struct {
	HubSignature256, GiteaSignature, GitLabToken string
}

// Verify checks a against the shared secret for body, in constant time.
func (a WebhookAuth) Verify(secret, body []byte) error {
	switch {
	case len(secret) == 0:
		return ErrWebhookSignature
	case a.HubSignature256 != "":
		hexSig, ok := strings.CutPrefix(a.HubSignature256, "sha256=")
		if !ok {
			return ErrWebhookSignature
		}
		return verifyHMAC(secret, body, hexSig)
	case a.GiteaSignature != "":
		return verifyHMAC(secret, body, a.GiteaSignature)
	case a.GitLabToken != "":
		if subtle.ConstantTimeCompare([]byte(a.GitLabToken), secret) != 1 {
			return ErrWebhookSignature
		}
		return nil
	}
	return ErrWebhookUnsigned
}

func verifyHMAC(secret, body []byte, hexSig string) error {
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return ErrWebhookSignature
	}
	if !hmac.Equal(got, Sign(secret, body)) {
		return ErrWebhookSignature
	}
	return nil
}

// Sign is the HMAC-SHA256 of body with secret (what a git host sends, hex
// encoded).
func Sign(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}
