package surfaces

import (
	"cmp"
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/rpc"
	"github.com/brainstem/brainstem/internal/workers"
)

// Gateway is what the surfaces ask of the gateway for the caller of a
// request, whom the gateway finds in the request's context.
type Gateway interface {
	// Caller is the request's caller; false without one.
	Caller(ctx context.Context) (route.Caller, bool)
	// Tool runs a shard tool for the caller as tools/call does, with its
	// audit line under the name method.
	Tool(ctx context.Context, method, tool string, args []byte) *mcp.CallToolResult
	// Audit writes the audit line and the metrics of a request served
	// since start.
	Audit(ctx context.Context, rec *Record, start time.Time)
}

// Record is the audit record of a request a surface serves (or a tool
// call), but for its time, caller and latency, which the gateway adds.
type Record struct {
	Tool     string // the method (and the prompt's name)
	Wing     string // "*" for every wing
	Outcome  string // ok or a gateway error code ("" is ok)
	BytesIn  int
	BytesOut int
	Args     []byte
	Err      *edge.Error
}

// Fail records e as rec's outcome and returns it.
func (rec *Record) Fail(e *edge.Error) *edge.Error {
	rec.Outcome, rec.Err = string(e.Code), e
	return e
}

// Surfaces serves resources/list and resources/read, prompts/list and
// prompts/get, and the cross links of a tool's answer, over the wings.
type Surfaces struct {
	Gateway Gateway
	Wings   []*route.Wing // in config order
	ByName  map[string]*route.Wing
	Shards  *route.Sender // sends for a route.Caller (the gateway's)
	Grants  *route.GrantCache
	Catalog *atomic.Pointer[route.Catalog] // the tools, as last registered
	Workers *workers.Pool                  // the goroutines of cross-wing steps (route.EachWing)
	Cursors *CursorSigner
	prompts atomic.Pointer[promptCatalog] // the union of the wings' prompts, as last registered
	// The limits: limits.resources_page_size, fanout_timeout and
	// fanout_concurrency, shards.call_timeout and watch_interval.
	PageSize, FanoutConcurrency               int
	FanoutTimeout, CallTimeout, WatchInterval time.Duration
	// The change notifications' counters: wing changes seen, notifications
	// sent, and those a full stream did not take.
	Changes, Notified, Dropped prometheus.Counter
}

// Caps is the caller's capabilities in every wing (minting where needed),
// and why a wing could not say, bounded like a cross-wing search by
// limits.fanout_timeout: a wing that cannot say in time counts as
// unreachable, so brain_wings, tools/list, prompts/list and the
// unknown_wing hint never wait for one stuck shard.
func (s *Surfaces) Caps(ctx context.Context, c route.Caller) ([]brain.Caps, []error) {
	ctx, cancel := context.WithTimeout(ctx, min(s.FanoutTimeout, s.CallTimeout))
	defer cancel()
	return s.Grants.CapsAll(ctx, c.ID, c.RequestID, s.FanoutConcurrency)
}

// NoWing is the answer for a wing the caller cannot reach: one that is not
// configured, one whose policy does not admit the caller, and one that could
// not be asked while the caller holds no grant for it all get this same
// unknown_wing error, listing the wings the caller can reach, so that the
// answer tells nobody which wings exist.
func (s *Surfaces) NoWing(ctx context.Context, c route.Caller, name string) *edge.Error {
	caps, _ := s.Caps(ctx, c)
	var reach []string
	for i, c := range caps {
		if c != 0 {
			reach = append(reach, s.Wings[i].Name)
		}
	}
	return edge.NewError(brain.CodeUnknownWing, edge.ErrUnknownWing,
		"there is no wing %q that you can reach; wings you can reach: %s (a wing's curators grant access)", name, cmp.Or(strings.Join(reach, ", "), "none"))
}

// writes reports whether a call of tool changes a wing (route.Spec.Writes).
func (s *Surfaces) writes(tool string) bool { return s.Catalog.Load().Spec(tool).Writes() }

// prepared is what Prepare computed for a request mcp-go then answers.
type prepared struct {
	list     *mcp.ListResourcesResult
	contents []mcp.ResourceContents
	prompt   *mcp.GetPromptResult
}

type preparedKey struct{}

func preparedFrom(ctx context.Context) *prepared {
	if p, _ := ctx.Value(preparedKey{}).(*prepared); p != nil {
		return p
	}
	return &prepared{}
}

// Prepare serves the gateway's part of resources/list, resources/read and
// prompts/get (q, whose envelope is msg): it returns ctx with the answer
// mcp-go's handler of the method returns (ReadTemplate, preparedPrompt,
// ResourceHooks), or answers an error itself and returns false. What it
// leaves to mcp-go (a notification, params mcp-go refuses itself, a prompt
// the caller may not see) comes back as ctx.
func (s *Surfaces) Prepare(ctx context.Context, q *edge.Request, msg *rpc.Message) (context.Context, bool) {
	var p *prepared
	var err error
	switch {
	case msg.ID == nil:
		return ctx, true // a notification
	case q.Method == string(mcp.MethodPromptsGet):
		p, err = s.preparePrompt(ctx, msg.Params)
	default:
		p, err = s.prepareResources(ctx, q.Method, msg.Params)
	}
	if err != nil {
		e := edge.Classify(err, "")
		edge.WriteRPCError(&q.Rec, msg.ID, edge.RPCCodeOf(e, mcp.IsModernProtocol(q.R.Header.Get(mcp.HeaderProtocolVersion))), e)
		return ctx, false
	}
	if p != nil {
		ctx = context.WithValue(ctx, preparedKey{}, p)
	}
	return ctx, true
}
