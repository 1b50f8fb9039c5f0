package auth

import (
	"strings"
	"time"
)

// Identity is a verified caller. Email is the one identity dimension used
// everywhere: cache keys, authorship, audit lines and rate limits.
type Identity struct {
	Email   string    // canonical: trimmed and lowercased, verified by the issuer
	Groups  []string  // from the configured groups claim
	Issuer  string    // for logs only
	Subject string    // for logs only
	Expiry  time.Time // when the SSO token that proved this identity expires
}

// CanonicalEmail trims and lowercases an email address.
func CanonicalEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
