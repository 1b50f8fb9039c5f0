package surfaces

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/internal/workers"
)

// Gateway is what the surfaces ask of the gateway for the caller of a
// request, whom the gateway finds in the request's context.
type Gateway interface {
	// Caller is the request's caller; false without one.
	Caller(ctx context.Context) (route.Caller, bool)
	// Caps is the caller's capabilities in every wing (by index), and why
	// a wing could not say, bounded like a cross-wing search.
	Caps(ctx context.Context) ([]brain.Caps, []error)
	// Disclosable reports whether a wing that failed in Caps may be named
	// to the caller.
	Disclosable(ctx context.Context, w *route.Wing, err error) bool
	// NoWing is the unknown_wing answer for a wing the caller cannot reach.
	NoWing(ctx context.Context, name string) *edge.Error
	// Tool runs a shard tool for the caller as tools/call does, with its
	// audit line under the name method.
	Tool(ctx context.Context, method, tool string, args []byte) *mcp.CallToolResult
	// Audit writes the audit line and the metrics of a request served
	// since start.
	Audit(ctx context.Context, rec *Record, start time.Time)
}

// Record is the audit record of a request a surface serves, but for its
// time, caller and latency, which the gateway adds.
type Record struct {
	Tool     string // the method (and the prompt's name)
	Wing     string // "*" for every wing
	Outcome  string // ok or a gateway error code ("" is ok)
	BytesIn  int
	BytesOut int
	Args     []byte
	Err      *edge.Error
}

// fail records e as rec's outcome and returns it.
func (rec *Record) fail(e *edge.Error) *edge.Error {
	rec.Outcome, rec.Err = string(e.Code), e
	return e
}

// Limits are the configured bounds the surfaces keep to.
type Limits struct {
	PageSize          int           // limits.resources_page_size
	FanoutTimeout     time.Duration // limits.fanout_timeout
	FanoutConcurrency int           // limits.fanout_concurrency
	CallTimeout       time.Duration // shards.call_timeout
	WatchInterval     time.Duration // shards.watch_interval
}

// Metrics are the change notifications' counters.
type Metrics struct {
	Changes  prometheus.Counter // wing changes seen
	Notified prometheus.Counter // notifications sent
	Dropped  prometheus.Counter // notifications a full stream did not take
}

// Surfaces serves resources/list and resources/read, prompts/list and
// prompts/get, and the cross links of a tool's answer, over the wings.
type Surfaces struct {
	Gateway Gateway
	Wings   []*route.Wing // in config order
	ByName  map[string]*route.Wing
	Shards  *route.Sender // sends for a route.Caller (the gateway's)
	Grants  *route.GrantCache
	// Writes reports whether a call of tool changes a wing
	// (route.Spec.Writes).
	Writes  func(tool string) bool
	Workers *workers.Pool // the goroutines of cross-wing steps (route.EachWing)
	Cursors *CursorSigner
	// Prompts is the union of the wings' prompts, as last registered.
	Prompts atomic.Pointer[PromptCatalog]
	Limits  Limits
	Metrics Metrics
}

// prepared is what Prepare computed for a request mcp-go then answers.
type prepared struct {
	list     *mcp.ListResourcesResult
	contents []mcp.ResourceContents
	prompt   *mcp.GetPromptResult
}

type preparedKey struct{}

func preparedFrom(ctx context.Context) *prepared {
	p, _ := ctx.Value(preparedKey{}).(*prepared)
	if p == nil {
		return &prepared{}
	}
	return p
}

// Prepare serves the gateway's part of resources/list, resources/read and
// prompts/get (method, with the request's params; call is false for a
// notification): it returns ctx with the answer mcp-go's handler of the
// method returns (ReadTemplate, PreparedPrompt, ResourceHooks), or the
// error to answer instead. What it leaves to mcp-go (params mcp-go refuses
// itself, a prompt the caller may not see) comes back as ctx.
func (s *Surfaces) Prepare(ctx context.Context, method string, call bool, params []byte) (context.Context, error) {
	var p *prepared
	var err error
	switch {
	case !call:
		return ctx, nil // a notification
	case method == string(mcp.MethodPromptsGet):
		p, err = s.preparePrompt(ctx, params)
	default:
		p, err = s.prepareResources(ctx, method, params)
	}
	if err != nil || p == nil {
		return ctx, err
	}
	return context.WithValue(ctx, preparedKey{}, p), nil
}

// prepareResources lists or reads for resources/list or resources/read
// (resources.go).
func (s *Surfaces) prepareResources(ctx context.Context, method string, params []byte) (*prepared, error) {
	if params == nil && method == string(mcp.MethodResourcesRead) {
		return nil, nil // params mcp-go refuses itself
	}
	var p struct {
		Cursor string `json:"cursor"`
		URI    string `json:"uri"`
	}
	if params != nil && json.Unmarshal(params, &p) != nil {
		return nil, nil // mcp-go refuses them as it decodes them
	}
	if method == string(mcp.MethodResourcesRead) {
		contents, err := s.readResource(ctx, p.URI)
		return &prepared{contents: contents}, err
	}
	list, err := s.auditedList(ctx, p.Cursor)
	return &prepared{list: list}, err
}
