package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/rpc"
	"github.com/brainstem/brainstem/gateway/surfaces"
	"github.com/brainstem/brainstem/proto"
)

// Notes as MCP resources.
//
// Every curated note the caller can read is a resource
// brain://<wing>/<hall>/<slug> (brain.ParseNoteURI), and the template
// brain://{wing}/{hall}/{slug} names them all. The gateway answers
// resources/list and resources/read from the shards, with the caller's
// grants, through the same shard calls as the tools (brain_list, brain_get):
// a note the caller cannot read is, to them, a resource that does not
// exist, answered exactly like a missing one.
//
// mcp-go keeps the transport, the envelope and each revision's stamping:
// the chain (prepareResources) decodes the request, asks the shards and
// either answers an error itself or leaves the result in the call info,
// which mcp-go's handler for the method returns (resourceHooks,
// readTemplateHandler).

// noteMIMEType is every note's media type.
const noteMIMEType = "text/markdown"

// listNote is one note of brain_list's answer.
type listNote struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	UpdatedAt string `json:"updated_at"`
}

type listAnswer struct {
	Notes      []listNote `json:"notes"`
	NextCursor string     `json:"next_cursor"`
}

// readableWings are the wings the caller can read, by name, and those
// that could not say while the caller is known to hold a grant there
// (named to them only, as brain_wings does).
func (g *Gateway) readableWings(ctx context.Context, ci *callInfo) ([]*route.Wing, []unavailableWing) {
	caps, errs := g.capsAll(ctx, ci)
	var out []*route.Wing
	var down []unavailableWing
	for i, c := range caps {
		if c.Has(brain.CapRead) {
			out = append(out, g.wings[i])
		} else if g.disclosable(ci, g.wings[i], errs[i]) {
			e := edge.Classify(errs[i], g.wings[i].Name)
			down = append(down, unavailableWing{Wing: g.wings[i].Name, Code: e.Code, Error: e.Message})
		}
	}
	slices.SortFunc(out, func(a, b *route.Wing) int { return strings.Compare(a.Name, b.Name) })
	return out, down
}

// metaUnavailable is the _meta key of resources/list naming the wings the
// caller reads that could not be listed (brain_query's "unavailable").
const metaUnavailable = "brainstem/unavailable"

// listResources answers one resources/list page for the caller.
func (g *Gateway) listResources(ctx context.Context, ci *callInfo, cursor string) (*mcp.ListResourcesResult, error) {
	pos, resume, err := g.cursors.Decode(ci.id.Email, cursor)
	if err != nil {
		return nil, err
	}
	size := g.cfg.Limits.ResourcesPageSize
	res := &mcp.ListResourcesResult{Resources: []mcp.Resource{}}
	wings, down := g.readableWings(ctx, ci)
	defer func() {
		if len(down) > 0 {
			res.Meta = &mcp.Meta{AdditionalFields: map[string]any{metaUnavailable: down}}
		}
	}()
	for i, w := range wings {
		shardCursor := ""
		switch {
		case resume && w.Name < pos.Wing:
			continue
		case resume && w.Name == pos.Wing:
			if pos.Shard == "" {
				continue // done with this wing
			}
			shardCursor = pos.Shard
		}
		for {
			ans, err := g.listWing(ctx, ci, w, shardCursor, size-len(res.Resources))
			if errors.Is(err, edge.ErrBadCursor) {
				return nil, err
			}
			if err != nil { // the listing goes on without it, saying so (as brain_query does)
				e := edge.Classify(err, w.Name)
				down = append(down, unavailableWing{Wing: w.Name, Code: e.Code, Error: e.Message})
				shardCursor = ""
				break
			}
			for _, n := range ans.Notes {
				// Only the wing's own note ids, and no more than the page
				// holds, whatever a shard answers.
				if id, err := brain.ParseID(n.ID); err == nil && id.Wing == w.Name && id.String() == n.ID && len(res.Resources) < size {
					res.Resources = append(res.Resources, noteResource(n))
				}
			}
			shardCursor = ans.NextCursor
			if len(ans.Notes) == 0 {
				shardCursor = "" // a wing that pages nothing is done (never loop on it)
			}
			if shardCursor == "" || len(res.Resources) >= size {
				break
			}
		}
		if len(res.Resources) >= size {
			if shardCursor != "" || i < len(wings)-1 {
				res.NextCursor = mcp.Cursor(g.cursors.Encode(ci.id.Email, surfaces.ResourceCursor{Wing: w.Name, Shard: shardCursor}))
			}
			return res, nil
		}
	}
	return res, nil
}

// noteResource is the resource of a note brain_list listed.
func noteResource(n listNote) mcp.Resource {
	r := mcp.Resource{URI: brain.URIScheme + n.ID, Name: n.ID, Title: n.Title, MIMEType: noteMIMEType}
	if n.UpdatedAt != "" {
		r.Annotations = &mcp.Annotations{LastModified: n.UpdatedAt}
	}
	return r
}

// listWing asks one wing for up to limit notes from its cursor, with
// brain_list and the caller's grant.
func (g *Gateway) listWing(ctx context.Context, ci *callInfo, w *route.Wing, cursor string, limit int) (*listAnswer, error) {
	args, err := brain.Marshal(struct {
		Wing   string `json:"wing"`
		Cursor string `json:"cursor,omitempty"`
		Limit  int    `json:"limit"`
	}{w.Name, cursor, limit})
	if err != nil {
		return nil, edge.Classify(err, "")
	}
	resp, err := g.callWing(ctx, ci, w, &proto.CallRequest{RequestID: ci.requestID, Tool: "brain_list", Args: args}, g.writes("brain_list"))
	if err != nil {
		return nil, edge.Classify(err, w.Name)
	}
	if resp.IsError {
		code, msg, _ := brain.DecodeError(resp.Result)
		if code == brain.CodeInvalidArgument && cursor != "" {
			return nil, edge.NewError(brain.CodeInvalidArgument, edge.ErrBadCursor, "invalid cursor (wing %q refused it: %s): start again without a cursor", w.Name, msg)
		}
		return nil, &edge.Error{Code: code, Message: fmt.Sprintf("wing %q could not list its notes: %s", w.Name, msg), Err: edge.ErrShardAnswer}
	}
	var ans listAnswer
	if err := json.Unmarshal(resp.Result, &ans); err != nil {
		return nil, edge.NewError(brain.CodeInternal, errors.Join(edge.ErrShardAnswer, err), "wing %q answered brain_list with an unreadable list", w.Name)
	}
	return &ans, nil
}

// noteAnswer is the part of brain_get's answer a resource carries.
type noteAnswer struct {
	ID          string          `json:"id"`
	ContentHash string          `json:"content_hash"`
	Frontmatter json.RawMessage `json:"frontmatter"`
	Body        string          `json:"body"`
}

// readResource reads the note of a URI with brain_get, through the same
// routing, grants, audit and error mapping as the tool: a note the caller
// cannot read, for whatever reason, is ErrResourceNotFound, with the same
// message as a missing one.
func (g *Gateway) readResource(ctx context.Context, ci *callInfo, uri string) ([]mcp.ResourceContents, error) {
	id, err := brain.ParseNoteURI(uri)
	if err != nil {
		return nil, edge.Classify(err, "")
	}
	start := time.Now()
	args, _ := brain.Marshal(struct {
		ID string `json:"id"`
	}{id.String()}) // a string: cannot fail
	rec := auditRecord{Tool: string(mcp.MethodResourcesRead), BytesIn: len(args), Args: args}
	res := g.runShardTool(ctx, ci, "brain_get", g.toolSpec("brain_get"), args, &rec)
	text, _ := rpc.PlainText(res)
	rec.BytesOut = len(text)
	defer g.finishRecord(ctx, ci, &rec, start)
	if res.IsError {
		code, msg, _ := brain.DecodeError([]byte(text))
		if edge.NotFoundCode(code) {
			return nil, edge.NewError(brain.CodeNotFound, edge.ErrResourceNotFound, "resource not found: %s (resources/list lists the notes you can read)", uri)
		}
		return nil, &edge.Error{Code: code, Message: msg, Err: edge.ErrShardAnswer}
	}
	var n noteAnswer
	if err := json.Unmarshal([]byte(text), &n); err != nil {
		return nil, edge.NewError(brain.CodeInternal, errors.Join(edge.ErrShardAnswer, err), "wing %q answered brain_get with an unreadable note", id.Wing)
	}
	meta := map[string]any{"brainstem/id": n.ID, "brainstem/content_hash": n.ContentHash}
	if len(n.Frontmatter) > 0 {
		meta["brainstem/frontmatter"] = n.Frontmatter
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: noteMIMEType, Text: n.Body, Meta: meta}}, nil
}

// resourceParams are the params of resources/list and resources/read.
type resourceParams struct {
	Cursor string `json:"cursor"`
	URI    string `json:"uri"`
}

// prepared is what the chain computed for a request mcp-go then answers.
type prepared struct {
	list     *mcp.ListResourcesResult
	contents []mcp.ResourceContents
	prompt   *mcp.GetPromptResult
}

// prepareResources serves the gateway's part of resources/list and
// resources/read (see the top of this file). It reports whether mcp-go
// should go on: false when it answered an error itself.
func (g *Gateway) prepareResources(q *mcpCall) bool {
	if q.msg.ID == nil || q.msg.Params == nil && q.ci.method == string(mcp.MethodResourcesRead) {
		return true // a notification, or params mcp-go refuses itself
	}
	var p resourceParams
	if q.msg.Params != nil && json.Unmarshal(q.msg.Params, &p) != nil {
		return true // mcp-go refuses them as it decodes them
	}
	var err error
	switch q.ci.method {
	case string(mcp.MethodResourcesList):
		var list *mcp.ListResourcesResult
		if list, err = g.auditedList(q.ctx, &q.ci, p.Cursor); err == nil {
			q.ci.prepared = &prepared{list: list}
		}
	case string(mcp.MethodResourcesRead):
		var contents []mcp.ResourceContents
		if contents, err = g.readResource(q.ctx, &q.ci, p.URI); err == nil {
			q.ci.prepared = &prepared{contents: contents}
		}
	}
	if err != nil {
		e := edge.Classify(err, "")
		edge.WriteRPCError(&q.Rec, q.msg.ID, edge.RPCCodeOf(e, mcp.IsModernProtocol(q.R.Header.Get(mcp.HeaderProtocolVersion))), e)
		return false
	}
	return true
}

// auditedList is listResources with its audit line.
func (g *Gateway) auditedList(ctx context.Context, ci *callInfo, cursor string) (*mcp.ListResourcesResult, error) {
	start := time.Now()
	rec := auditRecord{Tool: string(mcp.MethodResourcesList), Wing: "*", BytesIn: len(cursor)}
	defer g.finishRecord(ctx, ci, &rec, start)
	res, err := g.listResources(ctx, ci, cursor)
	if err != nil {
		e := edge.Classify(err, "")
		rec.Outcome, rec.err = string(e.Code), e
		return nil, e
	}
	return res, nil
}

// noteTemplate is the resource template of every note.
func noteTemplate() mcp.ResourceTemplate {
	return mcp.NewResourceTemplate(brain.URITemplate, "note",
		mcp.WithTemplateTitle("A note of the team brain"),
		mcp.WithTemplateDescription("A curated note: wing, hall (facts, decisions, failures, hypotheses, sources) and slug, as its id wing/hall/slug. "+
			"resources/list lists the notes you can read; brain_query finds them by content."),
		mcp.WithTemplateMIMEType(noteMIMEType))
}

// readTemplateHandler is mcp-go's handler of the note template: it returns
// what prepareResources read.
func readTemplateHandler(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	if ci := callInfoFrom(ctx); ci != nil && ci.prepared != nil && ci.prepared.contents != nil {
		return ci.prepared.contents, nil
	}
	return nil, fmt.Errorf("resource %s was not read by the gateway: %w", req.Params.URI, server.ErrResourceNotFound)
}

// resourceHooks has mcp-go's resources/list answer what prepareResources
// listed.
func resourceHooks(h *server.Hooks) {
	h.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		if ci := callInfoFrom(ctx); ci != nil && ci.prepared != nil && ci.prepared.list != nil {
			*res = *ci.prepared.list
		}
	})
}
