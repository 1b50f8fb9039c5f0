package devenv

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/oauth"
)

// ServiceAccountID is the demo service account `brainstem dev` configures
// (oauth.service_accounts): a machine that signs in with the client
// credentials grant. The sample policies let client:ci-bot write platform.
const ServiceAccountID = "ci-bot"

// credentials gives the gateway an operator token for its /signins admin
// endpoints and the demo service account, each secret in a file of the
// data directory (made on the first run, kept with --data).
func (e *Env) credentials(gcfg *config.Config) error {
	keys := filepath.Join(e.DataDir, "keys")
	if err := os.MkdirAll(keys, 0o700); err != nil {
		return fmt.Errorf("devenv: %w", err)
	}
	e.AdminTokenFile = filepath.Join(keys, "admin-token")
	if _, err := secretFile(e.AdminTokenFile); err != nil {
		return err
	}
	gcfg.Signins.AdminTokenFile = e.AdminTokenFile
	e.ServiceAccountSecretFile = filepath.Join(keys, ServiceAccountID+".secret")
	secret, err := secretFile(e.ServiceAccountSecretFile)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(secret))
	gcfg.OAuth.ServiceAccounts = append(gcfg.OAuth.ServiceAccounts, oauth.ServiceAccount{
		ID: ServiceAccountID, Name: "brainstem dev's demo service account",
		Credentials: []oauth.Credential{{SecretSHA256: hex.EncodeToString(sum[:])}},
	})
	return nil
}

// secretFile returns the secret held in path, first writing a new random
// one there (64 hex digits, mode 0600) when there is no such file.
func secretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		s := randomSecret()
		if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("devenv: %w", err)
		}
		return s, nil
	}
	if err != nil {
		return "", fmt.Errorf("devenv: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
