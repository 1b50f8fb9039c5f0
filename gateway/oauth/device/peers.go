package device

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/config"
)

// A device sign-in lives in the memory of the replica that issued its
// codes (device.go), but the user's browser and the client's polls reach
// whichever replica the load balancer picks. With oauth.Options.Peers set, a
// replica that does not hold the request passes the browser's or the
// client's request to the replica that does, and relays its answer:
//
//   - a typed user code it does not hold: it asks every peer whether they
//     hold it (find), then passes the request to the one that does;
//   - an approval, an IdP callback or a poll of a request it does not hold:
//     the page, the login cookie and the device code name their holder
//     (sealed, so nobody can point a replica elsewhere), and the request is
//     passed there.
//
// Peers talk on the admin listener (PathPeer) in plain HTTP: every request
// and every answer is sealed with the replicas' shared key (AES-256-GCM,
// its own purpose each way), for one peer, once (a nonce, remembered until
// it expires), within peerTTL. So the peer channel is as strong as the key
// that already protects every sealed code and cookie, and needs no TLS of
// its own. A passed request is answered by the holder's own handlers, with
// the original client's address for its limits, and is never passed on
// again.

// PathPeer is where a replica answers its peers, on the admin listener.
const PathPeer = "/internal/oauth-peer"

// Bounds of the peer channel.
const (
	// peerTTL is how long a sealed peer request is valid.
	peerTTL = 30 * time.Second
	// peerTimeout bounds one peer call.
	peerTimeout = 5 * time.Second
	// maxPeerBytes bounds a sealed peer request or answer (a page is about
	// 10 KB; a form at most oauth.MaxFormBytes).
	maxPeerBytes = 1 << 20
	// peerNoncesRemembered bounds the peer requests a replica remembers.
	peerNoncesRemembered = 100000
)

// Sealing purposes of the peer channel.
const (
	purposePeerRequest = "peer request"
	purposePeerAnswer  = "peer answer"
)

// Named errors of the peer channel.
var (
	// ErrPeerRefused: a peer request that does not open, is stale, is for
	// another peer, or was seen before.
	ErrPeerRefused = errors.New("oauth: peer request refused")
	// ErrPeerUnreachable: the replica holding a device request did not answer.
	ErrPeerUnreachable = errors.New("oauth: the replica holding this sign-in request did not answer")
)

// Peers lets a replica reach the other replicas of the gateway
// (oauth.Options.Peers).
type Peers struct {
	// Self is this replica's peer address (host:port of its admin
	// listener) as the others reach it.
	Self string
	// List returns the peer address of every replica (Self may be among
	// them; it is skipped).
	List func(ctx context.Context) ([]string, error)
	// oauth.Client makes peer calls; nil means a client with peerTimeout.
	Client *http.Client
}

// peerRequest is a sealed call to one peer.
type peerRequest struct {
	Op     string              `json:"o"` // "find" or "forward"
	To     string              `json:"to"`
	Nonce  string              `json:"n"`
	Exp    int64               `json:"e"`
	Code   string              `json:"c,omitempty"` // find: the normalised user code
	Method string              `json:"m,omitempty"` // forward: the request
	URI    string              `json:"u,omitempty"`
	Header map[string][]string `json:"h,omitempty"`
	Body   []byte              `json:"b,omitempty"`
	IP     string              `json:"ip,omitempty"` // the original client's address
}

// peerAnswer is a peer's sealed answer, bound to the request's nonce.
type peerAnswer struct {
	Nonce  string              `json:"n"`
	Held   bool                `json:"held,omitempty"` // find
	Status int                 `json:"s,omitempty"`    // forward: the holder's answer
	Header map[string][]string `json:"h,omitempty"`
	Body   []byte              `json:"b,omitempty"`
}

// forwardable are the paths a peer may pass on: the device flow's steps.
func (s *Grant) forwardable(method, path string) bool {
	return method == http.MethodPost && path == s.srv.Base()+PathPage ||
		method == http.MethodPost && path == s.srv.Base()+oauth.PathToken ||
		method == http.MethodGet && path == s.srv.Base()+oauth.PathCallback
}

// holder is the peer address this replica stamps on what it issues; ""
// without peers.
func (s *Grant) holder() string {
	if s.peers == nil {
		return ""
	}
	return s.peers.Self
}

// elsewhere reports whether a request of a device sign-in held at h
// should be passed there: h is another replica and r was not itself
// passed on.
func (s *Grant) elsewhere(r *http.Request, h string) bool {
	return h != "" && s.mayPass(r) && h != s.peers.Self
}

// mayPass reports whether r may be passed to a peer: there are peers, and
// r was not itself passed here.
func (s *Grant) mayPass(r *http.Request) bool {
	_, passed := oauth.ForwardedIP(r)
	return s.peers != nil && !passed
}

// PeerHandler answers the peers' requests (mount it at PathPeer on the
// admin listener). Without oauth.Options.Peers it refuses everything.
func (s *Grant) PeerHandler() http.Handler {
	return http.HandlerFunc(s.servePeer)
}

func (s *Grant) servePeer(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || s.peers == nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPeerBytes))
	if err != nil {
		s.srv.Count("peer", "refused")
		http.Error(w, "peer request too large", http.StatusRequestEntityTooLarge)
		return
	}
	req, err := s.openPeerRequest(string(raw))
	if err != nil {
		s.srv.Count("peer", "refused")
		s.srv.Log().Warn("oauth: peer request refused", "err", err, "peer_ip", oauth.RemoteIP(r))
		http.Error(w, ErrPeerRefused.Error(), http.StatusForbidden)
		return
	}
	ans := peerAnswer{Nonce: req.Nonce}
	switch req.Op {
	case "find":
		g, err := s.lookupUserCode(req.Code, s.srv.Now())
		ans.Held = err == nil && g != nil
		s.srv.Count("peer", "find")
	case "forward":
		ans.Status, ans.Header, ans.Body = s.replay(r.Context(), req)
		s.srv.Count("peer", "forward")
	}
	sealed, err := s.srv.Seal(purposePeerAnswer, ans)
	if err != nil {
		s.srv.ServerError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, sealed)
}

// openPeerRequest opens and checks a sealed peer request: for this
// replica, fresh, and not seen before.
func (s *Grant) openPeerRequest(sealed string) (*peerRequest, error) {
	var req peerRequest
	if err := s.srv.Open(purposePeerRequest, sealed, maxPeerBytes, &req); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPeerRefused, err)
	}
	now := s.srv.Now()
	switch {
	case req.To != s.peers.Self:
		return nil, fmt.Errorf("%w: it is for the peer %q", ErrPeerRefused, req.To)
	case now.Unix() > req.Exp || req.Exp > now.Add(2*peerTTL).Unix():
		return nil, fmt.Errorf("%w: expired or not yet valid", ErrPeerRefused)
	case req.Op == "forward" && !s.forwardable(req.Method, pathOf(req.URI)):
		return nil, fmt.Errorf("%w: %s %q is not a step of the device flow", ErrPeerRefused, req.Method, pathOf(req.URI))
	case req.Op != "find" && req.Op != "forward":
		return nil, fmt.Errorf("%w: unknown operation %q", ErrPeerRefused, req.Op)
	}
	if prev, seen, _ := s.peerNonces.PeekOrAdd(req.Nonce, time.Unix(req.Exp, 0)); seen && now.Before(prev) {
		return nil, fmt.Errorf("%w: replayed", ErrPeerRefused)
	}
	return &req, nil
}

func pathOf(uri string) string {
	p, _, _ := strings.Cut(uri, "?")
	return p
}

// replay answers a passed request with this replica's own handlers, as
// if its client had sent it here.
func (s *Grant) replay(ctx context.Context, req *peerRequest) (int, map[string][]string, []byte) {
	ctx = oauth.Forwarded(ctx, req.IP)
	r, err := http.NewRequestWithContext(ctx, req.Method, s.srv.Issuer()+strings.TrimPrefix(req.URI, s.srv.Base()), bytes.NewReader(req.Body))
	if err != nil {
		return http.StatusBadRequest, nil, []byte("invalid passed request")
	}
	r.Header = http.Header(req.Header)
	r.RemoteAddr = net.JoinHostPort(req.IP, "0")
	rec := &peerRecorder{header: http.Header{}}
	s.srv.Endpoints().ServeHTTP(rec, r)
	return cmp.Or(rec.status, http.StatusOK), rec.header, rec.body.Bytes()
}

// peerRecorder records a handler's answer for the peer that passed the
// request, up to maxPeerBytes.
type peerRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (p *peerRecorder) Header() http.Header  { return p.header }
func (p *peerRecorder) WriteHeader(code int) { p.status = cmp.Or(p.status, code) }
func (p *peerRecorder) Write(b []byte) (int, error) {
	p.status = cmp.Or(p.status, http.StatusOK)
	if p.body.Len()+len(b) > maxPeerBytes/2 {
		return 0, errors.New("oauth: answer too large for a peer")
	}
	return p.body.Write(b)
}

// hopHeaders are not passed between replicas (RFC 9110 §7.6.1), nor is
// the length (recomputed).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length", "Host"}

func endToEnd(h http.Header) map[string][]string {
	out := h.Clone()
	for _, k := range hopHeaders {
		delete(out, k)
	}
	return out
}

// call sends a sealed request to peer and opens its sealed answer.
func (s *Grant) callPeer(ctx context.Context, peer string, req peerRequest) (*peerAnswer, error) {
	req.To, req.Nonce, req.Exp = peer, oauth.RandomString(16), s.srv.Now().Add(peerTTL).Unix()
	sealed, err := s.srv.Seal(purposePeerRequest, req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, (&url.URL{Scheme: "http", Host: peer, Path: PathPeer}).String(), strings.NewReader(sealed))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPeerUnreachable, err)
	}
	hr.Header.Set("Content-Type", "text/plain")
	resp, err := s.peers.Client.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPeerUnreachable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPeerBytes+1))
	if err != nil || resp.StatusCode != http.StatusOK || len(body) > maxPeerBytes {
		return nil, fmt.Errorf("%w: status %d", ErrPeerUnreachable, resp.StatusCode)
	}
	var ans peerAnswer
	if err := s.srv.Open(purposePeerAnswer, string(body), maxPeerBytes, &ans); err != nil || ans.Nonce != req.Nonce {
		return nil, fmt.Errorf("%w: its answer does not open", ErrPeerUnreachable)
	}
	return &ans, nil
}

// findHolder asks every other replica whether it holds the pending
// request of a typed (normalised) user code; "" when none does.
func (s *Grant) findHolder(ctx context.Context, code string) string {
	peers, err := s.peers.List(ctx)
	if err != nil {
		s.srv.Log().Warn("oauth: cannot list the gateway's replicas", "err", err)
		return ""
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	found := make(chan string, 1)
	var wg sync.WaitGroup
	asked := 0
	for _, p := range peers {
		if p == s.peers.Self || asked == config.MaxPeers {
			continue
		}
		asked++
		wg.Go(func() {
			ans, err := s.callPeer(ctx, p, peerRequest{Op: "find", Code: code})
			if err != nil {
				s.srv.Log().Warn("oauth: a replica did not answer", "peer", p, "err", err)
				return
			}
			if ans.Held {
				select {
				case found <- p:
					cancel()
				default:
				}
			}
		})
	}
	wg.Wait()
	select {
	case p := <-found:
		return p
	default:
		return ""
	}
}

// forward passes r (whose body, already read, is body) to the replica
// peer and writes its answer. It reports false, having written nothing,
// when the peer did not answer.
func (s *Grant) forward(w http.ResponseWriter, r *http.Request, peer string, body []byte) bool {
	h := endToEnd(r.Header)
	ans, err := s.callPeer(r.Context(), peer, peerRequest{Op: "forward", Method: r.Method, URI: r.URL.RequestURI(),
		Header: h, Body: body, IP: s.srv.ClientIP(r)})
	if err != nil {
		s.srv.Count("peer", "unreachable")
		s.srv.Log().Warn("oauth: cannot pass a device sign-in step to its replica", "peer", peer, "err", err)
		return false
	}
	maps.Copy(w.Header(), endToEnd(http.Header(ans.Header)))
	w.WriteHeader(ans.Status)
	_, _ = w.Write(ans.Body)
	s.srv.Count("peer", "forwarded")
	return true
}
