package auth

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/brain"
)

func FuzzParsePrincipal(f *testing.F) {
	for _, s := range []string{"*", "email:a@b.c", "EMAIL: A@B.C", "domain:acme.com", "group:eng", "group:realm:x",
		"email:", "domain:@x", "grp:x", "", " * ", "email:a@b@c", "group:\x00", "domain:.x", "email:\u00e9@\u00e9.fr",
		"client:ci", "CLIENT: release-bot ", "client:", "client:Ci", "client:-x", "email:ci@clients.brainstem.invalid",
		"domain:clients.brainstem.invalid", "email:x.y@clients.brainstem.invalid"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePrincipal(s)
		if err != nil {
			if !errors.Is(err, ErrBadPrincipal) && !errors.Is(err, ErrPolicyTooLarge) {
				t.Fatalf("error %v wraps neither sentinel", err)
			}
			if p != (Principal{}) {
				t.Fatalf("principal %+v returned with an error", p)
			}
			return
		}
		// A parsed principal re-formatted parses to itself.
		var again string
		switch p.Kind {
		case PrincipalAnyone:
			again = "*"
		case PrincipalEmail:
			again = "email:" + p.Value
			if e, err := CanonicalEmail(p.Value); err != nil || e != p.Value {
				t.Fatalf("email %q not canonical: %q, %v", p.Value, e, err)
			}
		case PrincipalDomain:
			again = "domain:" + p.Value
		case PrincipalGroup:
			again = "group:" + p.Value
		case PrincipalClient:
			again = "client:" + p.Value
		default:
			t.Fatalf("unknown kind %d", p.Kind)
		}
		if p2, err := ParsePrincipal(again); err != nil || p2 != p {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, p, again, p2, err)
		}
		// A policy of just that principal admits the matching caller.
		pol := Policy{Writers: []string{s}}
		switch p.Kind {
		case PrincipalEmail:
			if pol.Caps(p.Value, nil) != brain.CapRead|brain.CapWrite {
				t.Fatalf("email principal %q does not admit %q", s, p.Value)
			}
		case PrincipalGroup:
			if pol.Caps("x@y.z", []string{p.Value}) != brain.CapRead|brain.CapWrite {
				t.Fatalf("group principal %q does not admit its group", s)
			}
		case PrincipalDomain:
			if pol.Caps("x@"+p.Value, nil) != brain.CapRead|brain.CapWrite {
				t.Fatalf("domain principal %q does not admit x@%s", s, p.Value)
			}
		case PrincipalClient:
			email, err := ServiceAccountEmail(p.Value)
			if err != nil || pol.Caps(email, nil) != brain.CapRead|brain.CapWrite {
				t.Fatalf("client principal %q does not admit %q (%v)", s, email, err)
			}
		}
		// Only a client: principal admits a service account, and it admits
		// no one else.
		for _, email := range []string{"ci@" + ServiceAccountDomain, p.Value + "@" + ServiceAccountDomain} {
			id, isSA := ServiceAccountID(email)
			got := pol.Caps(email, []string{p.Value})
			if want := isSA && p.Kind == PrincipalClient && p.Value == id; (got != 0) != want {
				t.Fatalf("principal %q gives service account %q caps %v", s, email, got)
			}
		}
	})
}

// FuzzCanonicalEmail: whatever CanonicalEmail accepts is printable ASCII
// without upper case, one '@' between non-empty parts, within the limits,
// canonical already (a fixed point), and equal to the input up to ASCII
// white space around it and ASCII case; whatever it refuses wraps
// ErrBadEmail.
func FuzzCanonicalEmail(f *testing.F) {
	for _, s := range []string{"ann@acme.com", " Ann@Acme.COM\n", "\u212aate@example.com", "a\nb@c.d", "@", "a@", "a@b..c",
		"a@b.c.", "\xff@x", "a@b@c", "ann@xn--bcher-kva.example", strings.Repeat("a", 70) + "@b.c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := CanonicalEmail(s)
		if err != nil {
			if !errors.Is(err, ErrBadEmail) || e != "" {
				t.Fatalf("CanonicalEmail(%q) = %q, %v", s, e, err)
			}
			return
		}
		again, err := CanonicalEmail(e)
		if err != nil || again != e {
			t.Fatalf("CanonicalEmail(%q) = %q is not a fixed point: %q, %v", s, e, again, err)
		}
		at := strings.IndexByte(e, '@')
		if len(e) > brain.MaxEmailBytes || at <= 0 || at > MaxEmailLocalPart || at == len(e)-1 || strings.Count(e, "@") != 1 {
			t.Fatalf("CanonicalEmail(%q) = %q breaks the shape", s, e)
		}
		for i := 0; i < len(e); i++ {
			if c := e[i]; c <= ' ' || c >= 0x7f || 'A' <= c && c <= 'Z' {
				t.Fatalf("CanonicalEmail(%q) = %q holds byte %#x", s, e, c)
			}
		}
		if !strings.EqualFold(strings.Trim(s, " \t\n\v\f\r"), e) || len(strings.Trim(s, " \t\n\v\f\r")) != len(e) {
			t.Fatalf("CanonicalEmail(%q) = %q is more than trimming and ASCII lower-casing", s, e)
		}
	})
}

func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{
		"readers: [\"*\"]\n", "readers:\n  - *\n", "writers: [group:eng]\ncurators: [email:a@b.c]\n",
		"readers: [x]\n", "admins: []\n", "---\n---\n", "readers: {a: b}\n", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "auth: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParsePolicy returned an invalid policy: %v", err)
		}
	})
}

// FuzzTokenVerify feeds arbitrary strings, seeded with real tokens, to the
// shard-token verifier: it must never panic, and anything it accepts must
// carry exactly the claims that were signed.
func FuzzTokenVerify(f *testing.F) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	kp := KeyPair{ID: KeyID(key.Public().(ed25519.PublicKey)), Private: key}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	m := NewMinter("w", kp, time.Minute, clock)
	tok, exp, err := m.Mint("ann@acme.com", brain.CapRead|brain.CapWrite, time.Time{})
	if err != nil {
		f.Fatal(err)
	}
	other, _, _ := NewMinter("x", kp, time.Minute, clock).Mint("ann@acme.com", brain.CapRead, time.Time{})
	for _, s := range []string{tok, other, "", ".", "..", "a.b.c", tok + "x", strings.Replace(tok, ".", "..", 1),
		"eyJhbGciOiJub25lIn0.e30.", "eyJhbGciOiJFZERTQSIsImtpZCI6IngifQ.e30.AAAA"} {
		f.Add(s)
	}
	v := NewTokenVerifier("w", clock, kp.Public())
	f.Fuzz(func(t *testing.T, s string) {
		c, err := v.Verify(s)
		if err != nil {
			if !errors.Is(err, ErrTokenInvalid) && !errors.Is(err, ErrTokenExpired) && !errors.Is(err, ErrWrongWing) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if c.Email != "ann@acme.com" || c.Wing != "w" || c.Caps != brain.CapRead|brain.CapWrite || !c.Expiry.Equal(exp) {
			t.Fatalf("accepted %q with claims %+v that were never signed", s, c)
		}
	})
}
