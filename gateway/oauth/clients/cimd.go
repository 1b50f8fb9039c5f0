package clients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/brainstem/brainstem/gateway/oauth/config"
	"github.com/brainstem/brainstem/internal/loopback"
)

// Limits of client ID metadata document fetches.
const (
	// MaxMetadataDocumentBytes bounds a client metadata document.
	MaxMetadataDocumentBytes = 5 << 10
	// MetadataFetchTimeout bounds one fetch, connection included.
	MetadataFetchTimeout = 5 * time.Second
	// MetadataCacheSize bounds the documents (and failures) remembered.
	MetadataCacheSize = 1000
	// Documents are cached for their Cache-Control max-age, kept within
	// these bounds; failures are remembered for metadataFailureTTL so that a
	// flood of requests naming one bad URL causes one fetch.
	metadataMinTTL     = time.Minute
	metadataMaxTTL     = 24 * time.Hour
	metadataDefaultTTL = 10 * time.Minute
	metadataFailureTTL = 30 * time.Second
)

// ErrMetadataDocument reports a client metadata document that cannot be
// used; the message says why.
var ErrMetadataDocument = errors.New("oauth: client metadata document refused")

// Fetcher fetches client ID metadata documents with SSRF
// protection: https only (loopback http when allowed), every address a
// connection is made to checked after DNS resolution (so a name that
// resolves to an internal address, or changes to one, is refused), no
// redirects, no proxies, bounded size and time, and a bounded cache.
type Fetcher struct {
	hc            *http.Client
	FetchTimeout  time.Duration
	allowLoopback bool
	allowedHosts  map[string]bool // nil: any public host
	now           func() time.Time
	cache         *lru.Cache[string, metadataEntry]
	flight        singleflight.Group
}

type metadataEntry struct {
	client *Client
	err    error
	until  time.Time
}

func NewFetcher(cfg config.ClientMetadataConfig, now func() time.Time) *Fetcher {
	f := &Fetcher{allowLoopback: cfg.AllowLoopback, now: now, FetchTimeout: MetadataFetchTimeout}
	if len(cfg.AllowedHosts) > 0 {
		f.allowedHosts = map[string]bool{}
		for _, h := range cfg.AllowedHosts {
			f.allowedHosts[strings.ToLower(h)] = true
		}
	}
	dialer := &net.Dialer{Timeout: MetadataFetchTimeout, Control: f.checkDial}
	f.hc = &http.Client{
		Timeout: MetadataFetchTimeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            dialer.DialContext,
			TLSHandshakeTimeout:    MetadataFetchTimeout,
			ResponseHeaderTimeout:  MetadataFetchTimeout,
			MaxResponseHeaderBytes: 16 << 10,
			DisableCompression:     true,
			MaxIdleConns:           10,
			IdleConnTimeout:        30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return fmt.Errorf("%w: the document must be served at its URL, without redirects", ErrMetadataDocument)
		},
	}
	f.cache, _ = lru.New[string, metadataEntry](MetadataCacheSize)
	return f
}

// checkDial runs after DNS resolution, before each connection: it refuses
// any address that is not public.
func (f *Fetcher) checkDial(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: cannot parse address %q", ErrMetadataDocument, host)
	}
	ip = ip.Unmap()
	if f.allowLoopback && ip.IsLoopback() {
		return nil
	}
	if !publicAddr(ip) {
		return fmt.Errorf("%w: its host resolves to %s, which is not a public address", ErrMetadataDocument, ip)
	}
	return nil
}

// nonPublic lists address ranges that are never fetched from, besides what
// netip classifies as loopback, private, link-local, multicast and
// unspecified.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may reach IPv4 private space
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: embeds any IPv4 address
	netip.MustParsePrefix("2001::/32"),       // Teredo: embeds any IPv4 address
	netip.MustParsePrefix("100::/64"),        // discard
}

// publicAddr reports whether ip is a globally routable unicast address.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || !ip.IsGlobalUnicast() {
		return false
	}
	return !slices.ContainsFunc(nonPublic, func(p netip.Prefix) bool { return p.Contains(ip) })
}

// CheckURL validates a client id that is a metadata document URL:
// https with a path, no fragment, user info or dot segments; loopback http
// only when allowed.
func (f *Fetcher) CheckURL(id string) (*url.URL, error) {
	if len(id) > MaxClientIDBytes {
		return nil, fmt.Errorf("%w: the client id is over %d bytes", ErrMetadataDocument, MaxClientIDBytes)
	}
	u, err := url.Parse(id)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%w: the client id %.100q is not a URL", ErrMetadataDocument, id)
	}
	loopback := loopback.Is(u.Hostname())
	switch {
	case loopback && !f.allowLoopback:
		return nil, fmt.Errorf("%w: %.100q is on a loopback address", ErrMetadataDocument, id)
	case u.Scheme == "http" && !loopback, u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("%w: %.100q must use https", ErrMetadataDocument, id)
	case u.User != nil || u.Fragment != "" || strings.Contains(id, "#"):
		return nil, fmt.Errorf("%w: %.100q must not carry user info or a fragment", ErrMetadataDocument, id)
	case u.Path == "" || u.Path == "/":
		return nil, fmt.Errorf("%w: %.100q must have a path", ErrMetadataDocument, id)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("%w: %.100q must not have dot segments", ErrMetadataDocument, id)
		}
	}
	if f.allowedHosts != nil && !f.allowedHosts[strings.ToLower(u.Hostname())] {
		return nil, fmt.Errorf("%w: host %q is not in oauth.client_metadata.allowed_hosts", ErrMetadataDocument, u.Hostname())
	}
	return u, nil
}

// ErrFetchLimit: the caller's address made too many uncached fetches.
var ErrFetchLimit = errors.New("oauth: too many client metadata document fetches from this address")

// Client returns the client a metadata document URL describes, from the
// cache or fetched (one fetch per URL at a time). mayFetch is asked before
// a fetch (a per-address limit); a cached document needs no permission.
func (f *Fetcher) Client(ctx context.Context, id string, mayFetch func() bool, allowed func(redirect string) error) (*Client, error) {
	u, err := f.CheckURL(id)
	if err != nil {
		return nil, err
	}
	now := f.now()
	if e, ok := f.cache.Get(id); ok && now.Before(e.until) {
		return e.client, e.err
	}
	if !mayFetch() {
		return nil, ErrFetchLimit
	}
	ch := f.flight.DoChan(id, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.FetchTimeout)
		defer cancel()
		c, ttl, err := f.fetch(fctx, u, id, allowed)
		if err != nil {
			ttl = metadataFailureTTL
		}
		f.cache.Add(id, metadataEntry{client: c, err: err, until: f.now().Add(ttl)})
		return c, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*Client), nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// metadataDocument is the part of a client metadata document read.
type metadataDocument struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
}

func (f *Fetcher) fetch(ctx context.Context, u *url.URL, id string, allowed func(string) error) (*Client, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrMetadataDocument, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.hc.Do(req)
	if err != nil {
		if errors.Is(err, ErrMetadataDocument) {
			return nil, 0, unwrapURLError(err)
		}
		return nil, 0, fmt.Errorf("%w: fetching %s failed: %v", ErrMetadataDocument, u.Host, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%w: %s answered %s", ErrMetadataDocument, id, resp.Status)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return nil, 0, fmt.Errorf("%w: %s is served as %q, not application/json", ErrMetadataDocument, id, resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxMetadataDocumentBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: reading %s: %v", ErrMetadataDocument, id, err)
	}
	if len(body) > MaxMetadataDocumentBytes {
		return nil, 0, fmt.Errorf("%w: %s is over %d bytes", ErrMetadataDocument, id, MaxMetadataDocumentBytes)
	}
	var doc metadataDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, 0, fmt.Errorf("%w: %s is not a JSON client metadata document: %v", ErrMetadataDocument, id, err)
	}
	if doc.ClientID != id {
		return nil, 0, fmt.Errorf("%w: the document's client_id %.100q is not its URL %.100q", ErrMetadataDocument, doc.ClientID, id)
	}
	if m := doc.TokenEndpointAuthMethod; m != "" && m != "none" {
		return nil, 0, fmt.Errorf("%w: token_endpoint_auth_method %.40q is not supported; this server only has public clients (none)", ErrMetadataDocument, m)
	}
	name, err := CleanName(doc.ClientName)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrMetadataDocument, err)
	}
	if len(doc.RedirectURIs) > MaxRedirectURIs {
		return nil, 0, fmt.Errorf("%w: %d redirect URIs; the limit is %d", ErrMetadataDocument, len(doc.RedirectURIs), MaxRedirectURIs)
	}
	c := &Client{ID: id, Name: name, MetadataHost: u.Host, Device: slices.Contains(doc.GrantTypes, GrantTypeDevice)}
	for _, r := range doc.RedirectURIs {
		// A document may name https redirect URIs on its own host; anything
		// else must pass the same rules as a registration.
		if ru, err := url.Parse(r); err == nil && ru.Scheme == "https" && strings.EqualFold(ru.Host, u.Host) && ru.Fragment == "" && ru.User == nil && len(r) <= MaxRedirectURIBytes ||
			allowed(r) == nil {
			c.RedirectURIs = append(c.RedirectURIs, r)
		}
	}
	if len(c.RedirectURIs) == 0 {
		return nil, 0, fmt.Errorf("%w: %s lists no redirect URI this server allows", ErrMetadataDocument, id)
	}
	return c, cacheTTL(resp.Header.Get("Cache-Control")), nil
}

// cacheTTL reads max-age from a Cache-Control header, within bounds.
func cacheTTL(h string) time.Duration {
	ttl := metadataDefaultTTL
	for _, d := range strings.Split(h, ",") {
		d = strings.TrimSpace(strings.ToLower(d))
		if d == "no-store" || d == "no-cache" {
			return metadataMinTTL
		}
		if v, ok := strings.CutPrefix(d, "max-age="); ok {
			if n, err := strconv.Atoi(v); err == nil {
				ttl = time.Duration(n) * time.Second
			}
		}
	}
	return min(max(ttl, metadataMinTTL), metadataMaxTTL)
}

// unwrapURLError drops net/http's "Get URL:" wrapping, which repeats the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
