package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/brainstem/brainstem/brain"
	"gopkg.in/yaml.v3"
)

// Policy limits.
const (
	// MaxPolicyFileBytes bounds the size of a policy file read by LoadPolicy.
	MaxPolicyFileBytes = 1 << 20
	// MaxPrincipals bounds the number of principals across the three lists.
	MaxPrincipals = 10000
	// MaxPrincipalBytes bounds the length of one principal string.
	MaxPrincipalBytes = 512
)

// Policy errors.
var (
	// ErrBadPrincipal reports a principal string that is not one of "*",
	// "email:<address>", "domain:<name>", "group:<name>" or "client:<id>".
	ErrBadPrincipal = errors.New("auth: bad principal")
	// ErrPolicyTooLarge reports a policy file or list over the limits above.
	ErrPolicyTooLarge = errors.New("auth: policy too large")
)

// Policy says who may read, write and curate one wing. Each list holds
// principals:
//
//	"*"              everyone with a verified email
//	"email:a@b.c"    one person (the address must pass CanonicalEmail)
//	"domain:b.c"     everyone whose email's part after the last '@' is exactly b.c
//	"group:name"     members of an IdP group (exact, case-sensitive)
//	"client:id"      one service account (the gateway's client credentials grant)
//
// Service accounts (emails at ServiceAccountDomain) match client:<id> and
// nothing else: not "*", no domain and no group, so a machine reaches only
// the wings whose policy names it. No person matches client:<id>, and
// email: and domain: principals at ServiceAccountDomain are refused.
//
// Capabilities imply each other (brain.Caps.Implied): a curator can also
// write and read, a writer can also read.
type Policy struct {
	Readers  []string `yaml:"readers" json:"readers"`
	Writers  []string `yaml:"writers" json:"writers"`
	Curators []string `yaml:"curators" json:"curators"`
}

// PrincipalKind is the kind of a parsed principal.
type PrincipalKind uint8

// The principal kinds.
const (
	PrincipalAnyone PrincipalKind = iota + 1 // "*"
	PrincipalEmail                           // "email:"
	PrincipalDomain                          // "domain:"
	PrincipalGroup                           // "group:"
	PrincipalClient                          // "client:"
)

// Principal is one parsed policy entry.
type Principal struct {
	Kind  PrincipalKind
	Value string // canonical email, lowercased domain, group name or service account id; "" for anyone
}

// ParsePrincipal parses one policy entry. Emails are canonicalised by
// CanonicalEmail (an address it refuses is a bad principal) and domains are
// lowercased; group names are kept exactly as written (trimmed); a service
// account id must pass CheckServiceAccountID.
func ParsePrincipal(s string) (Principal, error) {
	if len(s) > MaxPrincipalBytes {
		return Principal{}, fmt.Errorf("%w: %d bytes, the limit is %d", ErrPolicyTooLarge, len(s), MaxPrincipalBytes)
	}
	t := trimASCIISpace(s)
	if t == "*" {
		return Principal{Kind: PrincipalAnyone}, nil
	}
	kind, value, ok := strings.Cut(t, ":")
	if !ok {
		return Principal{}, fmt.Errorf("%w %q: want \"*\", \"email:<address>\", \"domain:<name>\", \"group:<name>\" or \"client:<id>\"", ErrBadPrincipal, s)
	}
	switch strings.ToLower(trimASCIISpace(kind)) {
	case "email":
		e, err := CanonicalEmail(value)
		if err != nil {
			return Principal{}, fmt.Errorf("%w %q: not an email address (want email:name@example.com): %w", ErrBadPrincipal, s, err)
		}
		if id, ok := ServiceAccountID(e); ok {
			return Principal{}, fmt.Errorf("%w %q: a service account is named client:%s", ErrBadPrincipal, s, id)
		} else if IsServiceAccountDomain(e) {
			return Principal{}, fmt.Errorf("%w %q: the domain %s is reserved for service accounts (client:<id>)", ErrBadPrincipal, s, ServiceAccountDomain)
		}
		return Principal{Kind: PrincipalEmail, Value: e}, nil
	case "domain":
		// The domain of an address CanonicalEmail accepts, so that exactly
		// the addresses at that domain match.
		d := trimASCIISpace(value)
		e, err := CanonicalEmail("x@" + d)
		if d == "" || err != nil {
			return Principal{}, fmt.Errorf("%w %q: not a domain name (want domain:example.com, without '@', in ASCII: xn-- for an internationalised one)", ErrBadPrincipal, s)
		}
		if IsServiceAccountDomain(e) {
			return Principal{}, fmt.Errorf("%w %q: the domain %s is reserved for service accounts; name each one as client:<id>", ErrBadPrincipal, s, ServiceAccountDomain)
		}
		return Principal{Kind: PrincipalDomain, Value: e[len("x@"):]}, nil
	case "group":
		value = trimASCIISpace(value)
		if value == "" || HasControlChar(value) {
			return Principal{}, fmt.Errorf("%w %q: empty or unprintable group name (want group:<name>)", ErrBadPrincipal, s)
		}
		return Principal{Kind: PrincipalGroup, Value: value}, nil
	case "client":
		value = trimASCIISpace(value)
		if err := CheckServiceAccountID(value); err != nil {
			return Principal{}, fmt.Errorf("%w %q: not a service account id (want client:<id>): %w", ErrBadPrincipal, s, err)
		}
		return Principal{Kind: PrincipalClient, Value: value}, nil
	default:
		return Principal{}, fmt.Errorf("%w %q: unknown kind %q (want \"*\", email:, domain:, group: or client:)", ErrBadPrincipal, s, kind)
	}
}

// HasControlChar reports whether s holds a control character.
func HasControlChar(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f })
}

// matches reports whether the principal admits a caller with a canonical
// email, its domain and groups. A service account (domain
// ServiceAccountDomain) matches only its client: principal.
func (p Principal) matches(email, domain string, groups []string) bool {
	if domain == ServiceAccountDomain {
		id, ok := ServiceAccountID(email)
		return ok && p.Kind == PrincipalClient && p.Value == id
	}
	switch p.Kind {
	case PrincipalAnyone:
		return true
	case PrincipalEmail:
		return p.Value == email
	case PrincipalDomain:
		return p.Value == domain
	case PrincipalGroup:
		return slices.Contains(groups, p.Value)
	}
	return false
}

// Validate checks every principal of every list and reports all problems at
// once (errors.Join), each naming its list and index, e.g.
// "auth: policy: writers[2]: auth: bad principal ...".
func (p Policy) Validate() error {
	var errs []error
	if n := len(p.Readers) + len(p.Writers) + len(p.Curators); n > MaxPrincipals {
		errs = append(errs, fmt.Errorf("auth: policy: %w: %d principals, the limit is %d", ErrPolicyTooLarge, n, MaxPrincipals))
	}
	for _, l := range p.lists() {
		for i, s := range l.entries {
			if _, err := ParsePrincipal(s); err != nil {
				errs = append(errs, fmt.Errorf("auth: policy: %s[%d]: %w", l.name, i, err))
			}
		}
	}
	return errors.Join(errs...)
}

type namedList struct {
	name    string
	entries []string
	caps    brain.Caps
}

func (p Policy) lists() [3]namedList {
	return [3]namedList{
		{"readers", p.Readers, brain.CapRead.Implied()},
		{"writers", p.Writers, brain.CapWrite.Implied()},
		{"curators", p.Curators, brain.CapCurate.Implied()},
	}
}

// emailDomain is the canonical form of email and its domain; ok is false
// for what is not an email.
func emailDomain(email string) (canonical, domain string, ok bool) {
	canonical, err := CanonicalEmail(email)
	if at := strings.LastIndexByte(canonical, '@'); at >= 0 {
		domain = canonical[at+1:]
	}
	return canonical, domain, err == nil
}

// Caps returns the capabilities the policy grants to a caller. The email is
// canonicalised here (CanonicalEmail); an address the rule refuses gets no
// capabilities, not even through "*". Entries that do not parse grant
// nothing (Validate reports them).
func (p Policy) Caps(email string, groups []string) brain.Caps {
	email, domain, ok := emailDomain(email)
	if !ok {
		return 0
	}
	var c brain.Caps
	for _, l := range p.lists() {
		if c.Has(l.caps) {
			continue
		}
		for _, s := range l.entries {
			pr, err := ParsePrincipal(s)
			if err == nil && pr.matches(email, domain, groups) {
				c |= l.caps
				break
			}
		}
	}
	return c
}

// LoadPolicy reads a YAML policy file with the keys readers, writers and
// curators. Unknown keys, a second YAML document and invalid principals are
// errors; nothing is returned unless the whole policy is valid.
func LoadPolicy(path string) (Policy, error) {
	return loadFile("policy", path, MaxPolicyFileBytes, ErrPolicyTooLarge, ParsePolicy)
}

// ParsePolicy decodes and validates a YAML policy document (see LoadPolicy).
func ParsePolicy(data []byte) (Policy, error) {
	if len(data) > MaxPolicyFileBytes {
		return Policy{}, fmt.Errorf("%w: over %d bytes", ErrPolicyTooLarge, MaxPolicyFileBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Policy
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return Policy{}, errors.New("auth: policy: empty document (want readers, writers and curators lists)")
		}
		return Policy{}, fmt.Errorf("auth: policy: %w%s", err, yamlHint(err))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Policy{}, errors.New("auth: policy: more than one YAML document in the file")
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// yamlHint adds advice for the two YAML mistakes policies invite: an unquoted
// "*" (an alias in YAML) and "email: x" with a space (a map, not a string).
func yamlHint(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "alphabetic or numeric character"), strings.Contains(msg, "unknown anchor"):
		return ` (quote the wildcard in YAML: - "*")`
	case strings.Contains(msg, "!!map into string"):
		return ` (write principals without a space after the colon, e.g. - email:ann@example.com, or quote them)`
	}
	return ""
}

// Groups carried by a shard token (see CompiledPolicy.Grant).
const (
	// MaxTokenGroups bounds the groups a shard token carries.
	MaxTokenGroups = 32
	// MaxTokenGroupBytes bounds their total length, so a token stays well
	// under MaxShardTokenBytes.
	MaxTokenGroupBytes = 1536
)

// CompiledPolicy is a validated Policy prepared for evaluation on every
// call: principals parsed once, emails, domains and groups in sets. It is
// immutable and safe for concurrent use.
type CompiledPolicy struct {
	src    Policy
	lists  [3]compiledList // readers, writers, curators
	groups map[string]struct{}
}

type compiledList struct {
	caps                    brain.Caps
	anyone                  bool
	emails, domains, groups map[string]struct{}
	clients                 map[string]struct{} // service account ids
}

// CompilePolicy validates p (reporting every problem, as Validate does) and
// compiles it.
func CompilePolicy(p Policy) (*CompiledPolicy, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	cp := &CompiledPolicy{src: p, groups: map[string]struct{}{}}
	for i, l := range p.lists() {
		cl := compiledList{caps: l.caps, emails: map[string]struct{}{}, domains: map[string]struct{}{},
			groups: map[string]struct{}{}, clients: map[string]struct{}{}}
		for _, s := range l.entries {
			pr, err := ParsePrincipal(s)
			if err != nil {
				return nil, err // Validate accepted it: not reached
			}
			switch pr.Kind {
			case PrincipalAnyone:
				cl.anyone = true
			case PrincipalEmail:
				cl.emails[pr.Value] = struct{}{}
			case PrincipalDomain:
				cl.domains[pr.Value] = struct{}{}
			case PrincipalGroup:
				cl.groups[pr.Value] = struct{}{}
				cp.groups[pr.Value] = struct{}{}
			case PrincipalClient:
				cl.clients[pr.Value] = struct{}{}
			}
		}
		cp.lists[i] = cl
	}
	return cp, nil
}

// Policy returns the policy it was compiled from.
func (cp *CompiledPolicy) Policy() Policy { return cp.src }

// Caps returns the capabilities the policy grants to a caller, exactly as
// Policy.Caps does.
func (cp *CompiledPolicy) Caps(email string, groups []string) brain.Caps {
	c, _ := cp.grant(email, groups, false)
	return c
}

// grant returns the caps and, if via, per list that granted them through a
// group only, the caller's first group in that list.
func (cp *CompiledPolicy) grant(email string, groups []string, via bool) (brain.Caps, []string) {
	email, domain, ok := emailDomain(email)
	if !ok {
		return 0, nil
	}
	var c brain.Caps
	if domain == ServiceAccountDomain {
		// A service account: its client: principal only, no groups carried.
		id, ok := ServiceAccountID(email)
		for i := range cp.lists {
			if _, named := cp.lists[i].clients[id]; ok && named {
				c |= cp.lists[i].caps
			}
		}
		return c, nil
	}
	var through []string
	for i := len(cp.lists) - 1; i >= 0; i-- { // strongest first
		l := &cp.lists[i]
		if c.Has(l.caps) {
			continue
		}
		_, byEmail := l.emails[email]
		_, byDomain := l.domains[domain]
		if l.anyone || byEmail || byDomain {
			c |= l.caps
			continue
		}
		if len(l.groups) == 0 {
			continue
		}
		for _, g := range groups {
			if _, ok := l.groups[g]; ok {
				c |= l.caps
				if via {
					through = append(through, g)
				}
				break
			}
		}
	}
	return c, through
}

// Grant returns the capabilities the policy grants a caller and the groups
// a shard token must carry so that evaluating this policy again with them
// grants the same: the groups through which a capability was granted, then
// the caller's other groups the policy names, sorted, within
// MaxTokenGroups and MaxTokenGroupBytes. Groups the policy does not name
// are never carried. A shard re-evaluates its current policy with the
// token's groups on every call, so a later policy change is enforced at
// once; a token carrying fewer groups than the caller has can only be
// granted less, and is then minted again.
func (cp *CompiledPolicy) Grant(email string, groups []string) (brain.Caps, []string) {
	c, via := cp.grant(email, groups, true)
	if c == 0 {
		return 0, nil
	}
	out := make([]string, 0, len(via))
	size := 0
	add := func(g string) {
		if slices.Contains(out, g) || len(out) >= MaxTokenGroups || size+len(g) > MaxTokenGroupBytes {
			return
		}
		out = append(out, g)
		size += len(g)
	}
	for _, g := range via {
		add(g)
	}
	named := slices.DeleteFunc(slices.Clone(groups), func(g string) bool { _, ok := cp.groups[g]; return !ok })
	slices.Sort(named)
	for _, g := range named {
		add(g)
	}
	slices.Sort(out)
	return c, out
}
