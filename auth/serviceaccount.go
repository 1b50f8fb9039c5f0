package auth

import (
	"errors"
	"fmt"
	"strings"
)

// ServiceAccountDomain is the domain of every service account's email: the
// identity of a machine (a CI job, a scheduled agent) that signs in with
// the OAuth client credentials grant. Its top-level domain is reserved
// (RFC 2606 .invalid), so no mailbox of a person has it; the gateway's SSO
// verifier refuses it in any IdP token, so only the gateway's own
// authorization server issues identities there. A service account's email
// is its author string in the brain's history and the key of its audit
// lines, rate limits and cache entries, as a person's email is.
const ServiceAccountDomain = "clients.brainstem.invalid"

// MaxServiceAccountIDBytes bounds a service account id.
const MaxServiceAccountIDBytes = 63

// ErrBadServiceAccountID is wrapped by every refusal of CheckServiceAccountID.
var ErrBadServiceAccountID = errors.New("auth: not a service account id")

// CheckServiceAccountID accepts a service account id: 1 to 63 bytes of
// lowercase ASCII letters, digits, '-' and '_', starting with a letter or a
// digit. The id is the OAuth client_id of the account, the part before '@'
// of its email and the value of its policy principal client:<id>.
func CheckServiceAccountID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrBadServiceAccountID)
	}
	if len(id) > MaxServiceAccountIDBytes {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrBadServiceAccountID, len(id), MaxServiceAccountIDBytes)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || i > 0 && (c == '-' || c == '_')
		if !ok {
			return fmt.Errorf("%w: %.80q: only a-z, 0-9, '-' and '_' (not first) are allowed", ErrBadServiceAccountID, id)
		}
	}
	return nil
}

// ServiceAccountEmail is the email of service account id:
// <id>@clients.brainstem.invalid. It passes CanonicalEmail unchanged.
func ServiceAccountEmail(id string) (string, error) {
	if err := CheckServiceAccountID(id); err != nil {
		return "", err
	}
	return id + "@" + ServiceAccountDomain, nil
}

// ServiceAccountID reports whether a canonical email is a service
// account's, and its id.
func ServiceAccountID(email string) (string, bool) {
	id, ok := strings.CutSuffix(email, "@"+ServiceAccountDomain)
	if !ok || CheckServiceAccountID(id) != nil {
		return "", false
	}
	return id, true
}

// IsServiceAccountDomain reports whether a canonical email's domain is
// ServiceAccountDomain (whatever is before the '@'). No person may have
// such an address.
func IsServiceAccountDomain(email string) bool {
	at := strings.LastIndexByte(email, '@')
	return at >= 0 && email[at+1:] == ServiceAccountDomain
}
