package config

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/oauth/keyring"
)

// Limits of the service account configuration.
const (
	// MaxServiceAccounts bounds oauth.service_accounts.
	MaxServiceAccounts = 1000
	// MaxCredentials bounds the credentials of one account: the current one
	// and, during a rotation, the next (or the previous).
	MaxCredentials = 2
	// MaxServiceAccountNameBytes bounds an account's display name.
	MaxServiceAccountNameBytes = 200
	// DefaultServiceAccountTokenTTL is the lifetime of a service account's
	// access token; there is no refresh token: a machine holds its
	// credential and asks again.
	DefaultServiceAccountTokenTTL = 10 * time.Minute
	// MaxServiceAccountTokenTTL is the most Validate accepts for
	// ServiceAccountTokenTTL.
	MaxServiceAccountTokenTTL = 15 * time.Minute
)

// ServiceAccount is a machine identity: a CI job or a scheduled agent that
// signs in with the client credentials grant (RFC 6749 §4.4) and no person
// behind it. Its OAuth client_id is ID, its identity the email
// <id>@clients.brainstem.invalid (auth.ServiceAccountEmail), which authors
// its writes, and wing policies grant it capabilities as client:<id>.
type ServiceAccount struct {
	// ID is the client_id (auth.CheckServiceAccountID: a-z, 0-9, '-', '_').
	ID string `yaml:"id"`
	// Name is shown in logs, e.g. "release notes ingester".
	Name string `yaml:"name"`
	// Credentials are the account's credentials, one or, during a rotation,
	// two: any of them authenticates it. Removing one (and restarting the
	// gateway) retires it.
	Credentials []Credential `yaml:"credentials"`
}

// Credential is one way a service account proves itself. Exactly one of
// the four sources is set.
type Credential struct {
	// SecretSHA256 is the lowercase hex SHA-256 of a client secret
	// (client_secret_basic or client_secret_post). The secret itself is
	// never configured: generate 32 random bytes ("openssl rand -hex 32"),
	// give the secret to the machine and configure its hash ("printf %s
	// "$secret" | sha256sum"). Secrets shorter than MinSecretBytes are
	// refused at the token endpoint whatever their hash.
	SecretSHA256 string `yaml:"secret_sha256"`
	// SecretSHA256File is a file holding SecretSHA256 (a mounted Secret).
	SecretSHA256File string `yaml:"secret_sha256_file"`
	// PublicKey is a PEM public key ("PUBLIC KEY", PKIX) that verifies the
	// account's client assertions (private_key_jwt, RFC 7523): Ed25519
	// (EdDSA), ECDSA P-256 (ES256) or RSA of 2048 to 8192 bits (RS256). The
	// key's type pins the one algorithm accepted.
	PublicKey string `yaml:"public_key"`
	// PublicKeyFile is a file holding PublicKey.
	PublicKeyFile string `yaml:"public_key_file"`
	// NotAfter, when set, is when the credential stops working, so that a
	// rotation's old credential ends on its own.
	NotAfter time.Time `yaml:"not_after"`
}

// sources lists which of the four sources are set.
func (c Credential) sources() []string {
	var out []string
	for _, s := range []struct{ name, v string }{
		{"secret_sha256", c.SecretSHA256}, {"secret_sha256_file", c.SecretSHA256File},
		{"public_key", c.PublicKey}, {"public_key_file", c.PublicKeyFile},
	} {
		if s.v != "" {
			out = append(out, s.name)
		}
	}
	return out
}

// validateServiceAccounts reports every problem of oauth.service_accounts.
func validateServiceAccounts(accts []ServiceAccount, bad func(key, format string, args ...any)) {
	if len(accts) > MaxServiceAccounts {
		bad("service_accounts", "%d accounts, the limit is %d", len(accts), MaxServiceAccounts)
		return
	}
	seen := map[string]int{}
	for i, a := range accts {
		key := fmt.Sprintf("service_accounts[%d]", i)
		if err := auth.CheckServiceAccountID(a.ID); err != nil {
			bad(key+".id", "%v", err)
		} else if j, dup := seen[a.ID]; dup {
			bad(key+".id", "%q is also service_accounts[%d]", a.ID, j)
		} else {
			seen[a.ID] = i
		}
		if len(a.Name) > MaxServiceAccountNameBytes || auth.HasControlChar(a.Name) {
			bad(key+".name", "over %d bytes or unprintable", MaxServiceAccountNameBytes)
		}
		switch n := len(a.Credentials); {
		case n == 0:
			bad(key+".credentials", "required: a secret_sha256(_file) or a public_key(_file)")
		case n > MaxCredentials:
			bad(key+".credentials", "%d credentials, the limit is %d (the current one and, during a rotation, one more)", n, MaxCredentials)
		}
		for j, c := range a.Credentials {
			ckey := fmt.Sprintf("%s.credentials[%d]", key, j)
			switch src := c.sources(); len(src) {
			case 0:
				bad(ckey, "set one of secret_sha256, secret_sha256_file, public_key, public_key_file")
			case 1:
			default:
				bad(ckey, "set only one of %s", strings.Join(src, ", "))
			}
			if c.SecretSHA256 != "" {
				if _, err := parseSecretHash(c.SecretSHA256); err != nil {
					bad(ckey+".secret_sha256", "%v", err)
				}
			}
			if c.PublicKey != "" {
				if _, err := parsePublicKey([]byte(c.PublicKey)); err != nil {
					bad(ckey+".public_key", "%v", err)
				}
			}
		}
	}
}

// LoadedCredential is a credential read: a secret's hash or a public key.
type LoadedCredential struct {
	Hash     []byte // SHA-256 of the secret; nil for a key
	Key      crypto.PublicKey
	Alg      jose.SignatureAlgorithm // the one algorithm of the key
	NotAfter time.Time
	ID       string // fingerprint for logs: "secret:" or "key:" + 16 hex digits
}

// Usable reports whether the credential has not passed its not_after.
func (c LoadedCredential) Usable(now time.Time) bool {
	return c.NotAfter.IsZero() || now.Before(c.NotAfter)
}

// LoadServiceAccounts reads the credentials of valid accounts (files
// included), in the order of accts, and reports every problem.
func LoadServiceAccounts(accts []ServiceAccount) ([][]LoadedCredential, error) {
	out := make([][]LoadedCredential, len(accts))
	var errs []error
	for i, a := range accts {
		if _, err := auth.ServiceAccountEmail(a.ID); err != nil {
			errs = append(errs, fmt.Errorf("oauth.service_accounts[%d].id: %w", i, err))
			continue
		}
		for j, c := range a.Credentials {
			cred, err := loadCredential(c)
			if err != nil {
				errs = append(errs, fmt.Errorf("oauth.service_accounts[%d].credentials[%d]: %w", i, j, err))
				continue
			}
			out[i] = append(out[i], cred)
		}
	}
	return out, errors.Join(errs...)
}

// CheckServiceAccounts reads every credential file of the service
// accounts and reports each one that is missing or does not hold a hash or
// a public key (`brainstem gateway --check-config`). It changes nothing
// and logs nothing.
func (c Config) CheckServiceAccounts() error {
	_, err := LoadServiceAccounts(c.ServiceAccounts)
	return err
}

func loadCredential(c Credential) (LoadedCredential, error) {
	cred := LoadedCredential{NotAfter: c.NotAfter}
	hash, pemKey := c.SecretSHA256, []byte(c.PublicKey)
	if c.SecretSHA256File != "" {
		b, err := keyring.ReadSmallFile(c.SecretSHA256File)
		if err != nil {
			return LoadedCredential{}, fmt.Errorf("secret_sha256_file: %w", err)
		}
		hash = strings.TrimSpace(string(b))
		// sha256sum's output: "<hex>  -" or "<hex>  file".
		hash, _, _ = strings.Cut(hash, " ")
	}
	if c.PublicKeyFile != "" {
		b, err := keyring.ReadSmallFile(c.PublicKeyFile)
		if err != nil {
			return LoadedCredential{}, fmt.Errorf("public_key_file: %w", err)
		}
		pemKey = b
	}
	if hash != "" {
		h, err := parseSecretHash(hash)
		if err != nil {
			return LoadedCredential{}, err
		}
		cred.Hash = h
		fp := sha256.Sum256(h)
		cred.ID = "secret:" + hex.EncodeToString(fp[:8])
		return cred, nil
	}
	pk, err := parsePublicKey(pemKey)
	if err != nil {
		return LoadedCredential{}, err
	}
	cred.Key, cred.Alg = pk.key, pk.alg
	fp := sha256.Sum256(pk.der)
	cred.ID = "key:" + hex.EncodeToString(fp[:8])
	return cred, nil
}

// parseSecretHash decodes a lowercase or uppercase hex SHA-256.
func parseSecretHash(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != sha256.Size {
		return nil, errors.New("not a hex SHA-256 (64 hex digits, e.g. from printf %s \"$secret\" | sha256sum)")
	}
	return b, nil
}

type publicKey struct {
	key crypto.PublicKey
	alg jose.SignatureAlgorithm
	der []byte
}

// parsePublicKey reads one PEM "PUBLIC KEY" block and pins its algorithm.
func parsePublicKey(data []byte) (publicKey, error) {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return publicKey{}, errors.New(`not a PEM "PUBLIC KEY" block (openssl pkey -pubout)`)
	}
	if strings.TrimSpace(string(rest)) != "" {
		return publicKey{}, errors.New("more than one PEM block: one key per credential")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return publicKey{}, fmt.Errorf("the public key does not parse: %w", err)
	}
	switch k := k.(type) {
	case ed25519.PublicKey:
		return publicKey{k, jose.EdDSA, block.Bytes}, nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return publicKey{}, errors.New("an ECDSA key must be on P-256 (ES256)")
		}
		return publicKey{k, jose.ES256, block.Bytes}, nil
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < 2048 || n > 8192 {
			return publicKey{}, fmt.Errorf("an RSA key of %d bits: 2048 to 8192 (RS256)", n)
		}
		return publicKey{k, jose.RS256, block.Bytes}, nil
	}
	return publicKey{}, fmt.Errorf("a %T key: use Ed25519, ECDSA P-256 or RSA", k)
}
