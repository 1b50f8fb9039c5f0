package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/proto"
)

// shardClient is what the gateway needs from a shard connection;
// *proto.Client satisfies it.
type shardClient interface {
	ListTools(ctx context.Context) (*proto.ListToolsResponse, error)
	Call(ctx context.Context, req *proto.CallRequest) (*proto.CallResponse, error)
	Mint(ctx context.Context, req *proto.MintRequest) (*proto.MintResponse, error)
	Stats(ctx context.Context, req *proto.StatsRequest) (*proto.StatsResponse, error)
	Rank(ctx context.Context, req *proto.RankRequest) (*proto.RankResponse, error)
	Fetch(ctx context.Context, req *proto.FetchRequest) (*proto.FetchResponse, error)
	Connected() bool
	State() proto.State
	Close() error
}

// wing is one configured wing and its shard client.
type wing struct {
	idx     int
	name    string
	client  shardClient
	reached atomic.Bool // answered at least once (any message)
	tools   atomic.Pointer[[]toolDescriptor]
	prompts atomic.Pointer[[]promptDescriptor]
	// mintRefused says why the wing's shard refuses every mint from this
	// gateway (its certificate's role), nil when mints are accepted. The
	// gateway is not ready while it is set.
	mintRefused atomic.Pointer[string]
}

func (w *wing) markReached() { w.reached.Store(true) }

// down reports whether the wing's shard is known to be unreachable: its
// client fails fast (and redials in the background), so everything that
// looks at all wings skips it rather than waiting for a dial.
func (w *wing) down() bool { return w.client.State().Down }

// maxToolsPerWing bounds what one shard may advertise.
const maxToolsPerWing = 256

// toolDescriptor is one tool as a shard describes it. Only the fields the
// gateway registers with mcp-go are kept; unknown annotation keys are
// dropped. A tool with an outputSchema has its answers' JSON passed on as
// structuredContent too (structured).
type toolDescriptor struct {
	Name         string              `json:"name"`
	Title        string              `json:"title,omitempty"`
	Description  string              `json:"description"`
	InputSchema  json.RawMessage     `json:"inputSchema"`
	OutputSchema json.RawMessage     `json:"outputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotation `json:"annotations,omitempty"`
	Meta         map[string]any      `json:"_meta,omitempty"`
	meta         toolspec.Meta       // read from Meta: the tool's capability, routing and fan-out
}

// parseToolDescriptors decodes and checks a shard's ListTools answer.
func parseToolDescriptors(raw json.RawMessage) ([]toolDescriptor, error) {
	var tools []toolDescriptor
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, fmt.Errorf("gateway: tool descriptors: %w", err)
	}
	if len(tools) > maxToolsPerWing {
		return nil, fmt.Errorf("gateway: tool descriptors: %d tools, more than %d", len(tools), maxToolsPerWing)
	}
	seen := map[string]bool{}
	for i := range tools {
		t := &tools[i]
		if t.Name == "" || len(t.Name) > 128 {
			return nil, fmt.Errorf("gateway: tool descriptors: tool %d has no valid name", i)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("gateway: tool descriptors: %q listed twice", t.Name)
		}
		seen[t.Name] = true
		if t.Name == wingsToolName {
			return nil, fmt.Errorf("gateway: tool descriptors: %q is reserved for the gateway", t.Name)
		}
		var schema map[string]json.RawMessage
		if len(t.InputSchema) == 0 || json.Unmarshal(t.InputSchema, &schema) != nil {
			return nil, fmt.Errorf("gateway: tool descriptors: %q has no inputSchema object", t.Name)
		}
		var out struct {
			Type string `json:"type"`
		}
		if len(t.OutputSchema) > 0 && (json.Unmarshal(t.OutputSchema, &out) != nil || out.Type != "object") {
			return nil, fmt.Errorf("gateway: tool descriptors: %q has an outputSchema that is not of type object", t.Name)
		}
		m, err := toolspec.ParseMeta(t.Meta)
		if err != nil {
			return nil, fmt.Errorf("gateway: tool descriptors: %q: %w", t.Name, err)
		}
		t.meta = m
		tool := t.mcpTool()
		if err := mcp.ValidateParamHeaderAnnotations(&tool); err != nil {
			return nil, fmt.Errorf("gateway: tool descriptors: %q: %w", t.Name, err)
		}
	}
	return tools, nil
}

func (t toolDescriptor) mcpTool() mcp.Tool {
	tool := mcp.NewToolWithRawSchema(t.Name, t.Description, t.InputSchema)
	tool.Title = t.Title
	tool.RawOutputSchema = t.OutputSchema
	if t.Annotations != nil {
		tool.Annotations = *t.Annotations
	}
	if len(t.Meta) > 0 {
		tool.Meta = &mcp.Meta{AdditionalFields: t.Meta}
	}
	return tool
}

// catalog is the union of the wings' tools: by name, first wing (in config
// order) wins when two disagree.
type catalog struct {
	tools []toolDescriptor         // sorted by name
	by    map[string]*catalogEntry // name → entry
}

type catalogEntry struct {
	desc  toolDescriptor
	wings []int // indexes of wings advertising the tool
}

func buildCatalog(wings []*wing, log *slog.Logger) *catalog {
	c := &catalog{by: map[string]*catalogEntry{}}
	for _, w := range wings {
		p := w.tools.Load()
		if p == nil {
			continue
		}
		for _, t := range *p {
			e, ok := c.by[t.Name]
			if !ok {
				c.by[t.Name] = &catalogEntry{desc: t, wings: []int{w.idx}}
				continue
			}
			e.wings = append(e.wings, w.idx)
			if !sameDescriptor(e.desc, t) {
				log.Warn("wings disagree on a tool descriptor; the first wing's is advertised",
					"tool", t.Name, "kept_from", wings[e.wings[0]].name, "ignored_from", w.name)
			}
		}
	}
	for _, e := range c.by {
		c.tools = append(c.tools, e.desc)
	}
	sort.Slice(c.tools, func(i, j int) bool { return c.tools[i].Name < c.tools[j].Name })
	return c
}

func sameDescriptor(a, b toolDescriptor) bool {
	ja, _ := json.Marshal(a.mcpTool())
	jb, _ := json.Marshal(b.mcpTool())
	return string(ja) == string(jb)
}

func (c *catalog) names() []string {
	out := make([]string, len(c.tools))
	for i, t := range c.tools {
		out[i] = t.Name
	}
	return slices.Clip(out)
}
