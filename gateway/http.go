package gateway

import (
	"context"
	"fmt"
	"net/http"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/sso"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/rpc"
)

// callInfo is what the HTTP layer learns about a request and hands to the
// tool handlers through the request context.
type callInfo struct {
	route.Caller        // who the request is for (its identity and grant key), its request id, the gateway's logger
	method       string // JSON-RPC method of a POST ("" otherwise)
	// args are the arguments of the tools/call the lean path answers, which
	// it scanned (scanArgs) to know mcp-go would take them; the tool
	// handler reads them instead of scanning again. Valid when scanned.
	args    rpc.Args
	scanned bool
}

type callInfoKey struct{}

func callInfoFrom(ctx context.Context) *callInfo {
	ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
	return ci
}

// newEdge builds the /mcp edge (gateway/edge) over the gateway's limits,
// verifier, metrics and origins.
func (g *Gateway) newEdge() (*edge.Edge, error) {
	l := g.cfg.Limits
	return edge.New(edge.Config{
		BodyTimeout: l.BodyTimeout, MaxBodyBytes: l.MaxBodyBytes, CallsPerSecond: l.CallsPerSecond, Burst: l.Burst,
		FailedAuthPerMinute: l.FailedAuthPerMinute, ClientIPHeader: l.ClientIPHeader,
		MaxUnauthenticatedConns: l.MaxUnauthenticatedConns, Callers: g.cfg.Grants.MaxEntries, MetadataURL: g.metadataURL,
	}, edge.Deps{
		Log: g.log, Now: g.now, Authenticate: g.authenticate, Scopes: g.scopes, Parsed: g.countParse, OriginAllowed: g.originAllowed,
		Draining: &g.draining, HTTPRequests: g.metrics.httpRequests, AuthFailures: g.metrics.authFailures, RateLimited: g.metrics.rateLimited})
}

// authenticate returns the identity the request's bearer token proves.
// Whatever verifier vouched for it, the identity obeys the one email rule
// before it is used anywhere.
func (g *Gateway) authenticate(r *http.Request) (auth.Identity, error) {
	raw, err := sso.BearerToken(r.Header)
	if err != nil {
		return auth.Identity{}, err
	}
	id, err := g.verifier.Verify(r.Context(), raw)
	if err != nil {
		return auth.Identity{}, err
	}
	if id.Email, err = auth.CanonicalEmail(id.Email); err != nil {
		return auth.Identity{}, fmt.Errorf("gateway: the verifier returned an identity without an acceptable email: %w", err)
	}
	if err := g.ended.Refusal(id); err != nil {
		return auth.Identity{}, err
	}
	return id, nil
}

// scopes are the authorization server's scopes, which challenges name;
// ok is false without it.
func (g *Gateway) scopes() ([]string, bool) {
	if g.facade == nil {
		return nil, false
	}
	return g.facade.Scopes(), true
}

// requestEmail is the verified email of a request's caller, which binds
// its session ids (edge.SessionIDs).
func requestEmail(r *http.Request) string {
	if ci := callInfoFrom(r.Context()); ci != nil {
		return ci.ID.Email
	}
	return ""
}

// originAllowed reports whether a browser Origin may use the endpoint.
func (g *Gateway) originAllowed(origin string) bool {
	o, err := config.ParseOrigin(origin)
	return err == nil && g.origins[o]
}

// protectedResourceMetadata is the RFC 9728 document.
type protectedResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
}

func (g *Gateway) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(g.metadataJSON)
}

func (g *Gateway) buildPublicHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(g.mcpPath, g.serveMCP)
	mux.HandleFunc(wellKnownPRM+g.mcpPath, g.serveMetadata)
	mux.HandleFunc(wellKnownPRM, g.serveMetadata)
	if g.facade != nil {
		g.facade.Register(mux)
	}
	if g.console != nil {
		mux.Handle(g.console.Prefix(), g.console)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		b, _ := brain.Marshal(map[string]string{"error": "not_found", "error_description": "the MCP endpoint is " + g.cfg.MCPURL()})
		_, _ = w.Write(b)
	})
	return mux
}

const wellKnownPRM = "/.well-known/oauth-protected-resource"
