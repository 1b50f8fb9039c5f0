package oauth

import (
	"slices"
	"time"

	"github.com/brainstem/brainstem/auth/offboard"
	"github.com/brainstem/brainstem/gateway/oauth/keyring"
)

// SignIn is offboard.SignIn: one sign-in as this replica saw it.
type SignIn = offboard.SignIn

// recordSignIn remembers an issuance of family (bounded: the least
// recently used is forgotten first).
func (s *Server) recordSignIn(family, email, clientID, grant string, now, accessExp time.Time, familyExp int64) {
	id := keyring.Digest("sign-in", family)
	si, ok := s.signins.Get(id)
	if !ok {
		si = SignIn{ID: id, Email: email, Client: ClientLabel(clientID), FirstSeen: now}
	}
	si.Grant, si.LastSeen, si.AccessExpires = grant, now, accessExp
	if familyExp > 0 {
		si.Expires = time.Unix(familyExp, 0)
	}
	s.signins.Add(id, si)
}

// SignIns are the sign-ins of email this replica saw that may still be in
// use (an access token not expired, or a sign-in not ended), newest first.
// An empty email lists everyone's.
func (s *Server) SignIns(email string) []SignIn {
	now := s.now()
	var out []SignIn
	for _, si := range s.signins.Values() {
		if email != "" && si.Email != email {
			continue
		}
		if now.After(si.AccessExpires) && (si.Expires.IsZero() || now.After(si.Expires)) {
			continue
		}
		_, si.Ended = s.ended.Ended(si.Email, si.LastSeen)
		out = append(out, si)
	}
	slices.SortFunc(out, func(a, b SignIn) int { return b.LastSeen.Compare(a.LastSeen) })
	return out
}
