package sso

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// flexBool decodes true, "true", false, "false" and null. Some IdPs send
// email_verified as a string; anything else is an error.
type flexBool bool

// UnmarshalJSON implements json.Unmarshaler.
func (b *flexBool) UnmarshalJSON(data []byte) error {
	switch string(bytes.TrimSpace(data)) {
	case "true", `"true"`:
		*b = true
	case "false", `"false"`, "null":
		*b = false
	default:
		return fmt.Errorf("want true or false, got %.40s", data)
	}
	return nil
}

// audience decodes the aud claim: one string or a list of strings.
type audience []string

// UnmarshalJSON implements json.Unmarshaler.
func (a *audience) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*a = audience{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(data, &l); err != nil {
		return errors.New("aud must be a string or a list of strings")
	}
	*a = l
	return nil
}

// numericDate decodes a JWT NumericDate (RFC 7519 §2: a JSON number of
// seconds since the epoch, integer or fraction). Only a JSON number is
// accepted: encoding/json would also decode a string such as "1700000000"
// into a json.Number, and a date sent as a string is a malformed token.
type numericDate struct{ time.Time }

// UnmarshalJSON implements json.Unmarshaler.
func (d *numericDate) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || (data[0] != '-' && (data[0] < '0' || data[0] > '9')) {
		return fmt.Errorf("want a JSON number of seconds since 1970, not %.40s", data)
	}
	var n json.Number
	if err := json.Unmarshal(data, &n); err != nil {
		return errors.New("want a number of seconds since 1970")
	}
	f, err := n.Float64()
	// Bound to years 0..9999 so time arithmetic cannot overflow.
	if err != nil || math.IsNaN(f) || f < -62135596800 || f > 253402300799 {
		return fmt.Errorf("date %s out of range", n)
	}
	sec, frac := math.Modf(f)
	d.Time = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	return nil
}

// claims are the parts of an ID token's claims set the verifier uses.
type claims struct {
	Issuer        string
	Subject       string
	Audience      []string
	Expiry        *time.Time // nil when absent
	NotBefore     *time.Time
	IssuedAt      *time.Time
	Email         string // as sent (not canonicalised); the claim must be a JSON string
	HasEmail      bool
	EmailVerified bool
	// EmailVerifiedSent says whether email_verified was present at all.
	EmailVerifiedSent bool
	Groups            []string
}

// claimSet splits a claims set into its claims.
func claimSet(payload []byte) (map[string]json.RawMessage, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(payload, &raw); err != nil {
		return nil, fmt.Errorf("claims are not a JSON object: %w", err)
	}
	return raw, nil
}

// decode fills c from a claims set, iss first: when a later claim has the
// wrong type, c.Issuer is still set.
func (c *claims) decode(raw map[string]json.RawMessage, groupsClaim string) error {
	var err error
	if err = claimString(raw, "iss", &c.Issuer); err != nil {
		return err
	}
	if err = claimString(raw, "sub", &c.Subject); err != nil {
		return err
	}
	if v, ok := raw["aud"]; ok && string(v) != "null" {
		var a audience
		if err := a.UnmarshalJSON(v); err != nil {
			return err
		}
		c.Audience = a
	}
	if c.Expiry, err = claimDate(raw, "exp"); err != nil {
		return err
	}
	if c.NotBefore, err = claimDate(raw, "nbf"); err != nil {
		return err
	}
	if c.IssuedAt, err = claimDate(raw, "iat"); err != nil {
		return err
	}
	if err := c.decodeEmail(raw); err != nil {
		return err
	}
	c.Groups, err = extractGroups(raw, groupsClaim)
	return err
}

func (c *claims) decodeEmail(raw map[string]json.RawMessage) error {
	if v, ok := raw["email"]; ok && string(v) != "null" {
		if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &c.Email) != nil {
			return errors.New(`claim "email" must be a string`)
		}
		c.HasEmail = strings.TrimSpace(c.Email) != ""
	}
	if v, ok := raw["email_verified"]; ok {
		var b flexBool
		if err := b.UnmarshalJSON(v); err != nil {
			return fmt.Errorf(`claim "email_verified": %w`, err)
		}
		c.EmailVerified = bool(b)
		c.EmailVerifiedSent = string(v) != "null"
	}
	return nil
}

// claimString decodes an optional string claim.
func claimString(raw map[string]json.RawMessage, name string, dst *string) error {
	v, ok := raw[name]
	if !ok || string(v) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("claim %q must be a string", name)
	}
	return nil
}

// claimDate decodes an optional NumericDate claim; nil when absent.
func claimDate(raw map[string]json.RawMessage, name string) (*time.Time, error) {
	v, ok := raw[name]
	if !ok || string(v) == "null" {
		return nil, nil
	}
	var d numericDate
	if err := d.UnmarshalJSON(v); err != nil {
		return nil, fmt.Errorf("claim %q: %w", name, err)
	}
	return &d.Time, nil
}

// token is a JWT parsed once: its JWS (header, payload and signature,
// parsed by go-jose) and its claims, decoded from that payload. Nothing in
// it is trusted until go-oidc has verified the signature, through keySet,
// which uses this very parse (verifyCall) instead of parsing the token
// again.
type token struct {
	raw    string
	jws    *jose.JSONWebSignature
	claims claims
	// claimsErr is a claim of the wrong type after iss: the token is
	// refused for it once its signature holds, as before any other rule.
	claimsErr error
}

// parseAlgs are the algorithms a token may name to be parsed at all: every
// one go-jose knows, and "none", so that a token signed with an algorithm
// its issuer is not pinned to gets that refusal (issuerOf), not a parse
// error. No signature is ever checked with an algorithm outside the
// issuer's pinned list.
var parseAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA, jose.HS256, jose.HS384, jose.HS512, "none",
}

// parseToken parses a compact JWS and decodes its claims. A token that is
// not a JWS, whose claims are not a JSON object or whose iss is not a
// string is refused at once; another claim of the wrong type is kept in
// claimsErr.
func parseToken(raw, groupsClaim string) (*token, *Error) {
	jws, err := jose.ParseSignedCompact(raw, parseAlgs)
	if err != nil {
		var alg *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &alg) {
			return nil, NewError(BadSignature, fmt.Sprintf("the token is signed with algorithm %.20q, which no issuer is pinned to", string(alg.Got)), nil)
		}
		return nil, NewError(MalformedToken, "the token is not a signed JWT (want three base64url parts: header, claims, signature)", err)
	}
	set, err := claimSet(jws.UnsafePayloadWithoutVerification())
	if err != nil {
		return nil, NewError(MalformedToken, "the token claims do not decode", err)
	}
	tok := &token{raw: raw, jws: jws}
	if err := claimString(set, "iss", &tok.claims.Issuer); err != nil {
		return nil, NewError(MalformedToken, "the token claims do not decode", err)
	}
	tok.claimsErr = tok.claims.decode(set, groupsClaim)
	return tok, nil
}

// alg is the algorithm the token's header names.
func (t *token) alg() string { return t.jws.Signatures[0].Header.Algorithm }

// extractGroups finds the groups claim: first as a literal top-level name,
// then as a dotted path through nested objects. A list of strings or a single
// string is taken; other values give no groups.
func extractGroups(raw map[string]json.RawMessage, name string) ([]string, error) {
	if name == "" {
		return nil, nil
	}
	v, ok := raw[name]
	if !ok && strings.Contains(name, ".") {
		segs := strings.Split(name, ".")
		cur := raw
		for i, seg := range segs {
			next, found := cur[seg]
			if !found {
				return nil, nil
			}
			if i == len(segs)-1 {
				v, ok = next, true
				break
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal(next, &obj) != nil {
				return nil, nil // not an object: no groups at that path
			}
			cur = obj
		}
	}
	if !ok {
		return nil, nil
	}
	var one string
	if json.Unmarshal(v, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(v, &list) != nil {
		return nil, nil
	}
	if len(list) > MaxGroups {
		return nil, fmt.Errorf("claim %q holds %d groups, the limit is %d", name, len(list), MaxGroups)
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		var s string
		if json.Unmarshal(e, &s) == nil && s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
