package surfaces

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
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/rpc"
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
// the gateway's chain has Prepare decode the request, ask the shards and
// either answer an error or leave the result in the context, which
// mcp-go's handler for the method returns (ResourceHooks, ReadTemplate).

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
func (s *Surfaces) readableWings(ctx context.Context) ([]*route.Wing, []toolspec.UnavailableWing) {
	who, _ := s.Gateway.Caller(ctx)
	caps, errs := s.Caps(ctx, who)
	var out []*route.Wing
	var down []toolspec.UnavailableWing
	for i, c := range caps {
		if c.Has(brain.CapRead) {
			out = append(out, s.Wings[i])
		} else if s.Grants.Disclosable(who.Key, s.Wings[i], errs[i]) {
			down = append(down, route.Unavailable(errs[i], s.Wings[i]))
		}
	}
	slices.SortFunc(out, func(a, b *route.Wing) int { return strings.Compare(a.Name, b.Name) })
	return out, down
}

// MetaUnavailable is the _meta key of resources/list naming the wings the
// caller reads that could not be listed (brain_query's "unavailable").
const MetaUnavailable = "brainstem/unavailable"

// listResources answers one resources/list page for the caller.
func (s *Surfaces) listResources(ctx context.Context, cursor string) (*mcp.ListResourcesResult, error) {
	c, _ := s.Gateway.Caller(ctx)
	pos, resume, err := s.Cursors.Decode(c.ID.Email, cursor)
	if err != nil {
		return nil, err
	}
	size := s.PageSize
	res := &mcp.ListResourcesResult{Resources: []mcp.Resource{}}
	wings, down := s.readableWings(ctx)
	defer func() {
		if len(down) > 0 {
			res.Meta = &mcp.Meta{AdditionalFields: map[string]any{MetaUnavailable: down}}
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
			ans, err := s.listWing(ctx, c, w, shardCursor, size-len(res.Resources))
			if errors.Is(err, edge.ErrBadCursor) {
				return nil, err
			}
			if err != nil { // the listing goes on without it, saying so (as brain_query does)
				down = append(down, route.Unavailable(err, w))
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
				res.NextCursor = mcp.Cursor(s.Cursors.Encode(c.ID.Email, ResourceCursor{Wing: w.Name, Shard: shardCursor}))
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
func (s *Surfaces) listWing(ctx context.Context, c route.Caller, w *route.Wing, cursor string, limit int) (*listAnswer, error) {
	args, err := brain.Marshal(struct {
		Wing   string `json:"wing"`
		Cursor string `json:"cursor,omitempty"`
		Limit  int    `json:"limit"`
	}{w.Name, cursor, limit})
	if err != nil {
		return nil, edge.Classify(err, "")
	}
	resp, err := s.Shards.Call(ctx, c, w, &proto.CallRequest{RequestID: c.RequestID, Tool: "brain_list", Args: args}, s.writes("brain_list"))
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

// getArgs are brain_get's arguments for the note id.
func getArgs(id brain.ID) []byte {
	args, _ := brain.Marshal(struct {
		ID string `json:"id"`
	}{id.String()}) // a string: cannot fail
	return args
}

// readResource reads the note of a URI with brain_get, through the same
// routing, grants, audit and error mapping as the tool: a note the caller
// cannot read, for whatever reason, is ErrResourceNotFound, with the same
// message as a missing one.
func (s *Surfaces) readResource(ctx context.Context, uri string) ([]mcp.ResourceContents, error) {
	id, err := brain.ParseNoteURI(uri)
	if err != nil {
		return nil, edge.Classify(err, "")
	}
	res := s.Gateway.Tool(ctx, string(mcp.MethodResourcesRead), "brain_get", getArgs(id))
	text, _ := rpc.PlainText(res)
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

// prepareResources lists or reads for resources/list or resources/read.
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

// auditedList is listResources with its audit line.
func (s *Surfaces) auditedList(ctx context.Context, cursor string) (*mcp.ListResourcesResult, error) {
	start := time.Now()
	rec := Record{Tool: string(mcp.MethodResourcesList), Wing: "*", BytesIn: len(cursor)}
	defer s.Gateway.Audit(ctx, &rec, start)
	res, err := s.listResources(ctx, cursor)
	if err != nil {
		return nil, rec.Fail(edge.Classify(err, ""))
	}
	return res, nil
}

// NoteTemplate is the resource template of every note.
func NoteTemplate() mcp.ResourceTemplate {
	return mcp.NewResourceTemplate(brain.URITemplate, "note",
		mcp.WithTemplateTitle("A note of the team brain"),
		mcp.WithTemplateDescription("A curated note: wing, hall (facts, decisions, failures, hypotheses, sources) and slug, as its id wing/hall/slug. "+
			"resources/list lists the notes you can read; brain_query finds them by content."),
		mcp.WithTemplateMIMEType(noteMIMEType))
}

// ReadTemplate is mcp-go's handler of the note template: it returns what
// Prepare read.
func ReadTemplate(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	if c := preparedFrom(ctx).contents; c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("resource %s was not read by the gateway: %w", req.Params.URI, server.ErrResourceNotFound)
}

// ResourceHooks has mcp-go's resources/list answer what Prepare listed.
func ResourceHooks(h *server.Hooks) {
	h.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		if list := preparedFrom(ctx).list; list != nil {
			*res = *list
		}
	})
}
