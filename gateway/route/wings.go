package route

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/proto"
)

// ShardClient is what the gateway needs from a shard connection;
// *proto.Client satisfies it.
type ShardClient interface {
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

// Wing is one configured wing and its shard client.
type Wing struct {
	Idx     int
	Name    string
	Client  ShardClient
	Reached atomic.Bool // answered at least once (any message)
	Tools   atomic.Pointer[[]ToolDescriptor]
	Prompts atomic.Pointer[[]PromptDescriptor]
	// MintRefused says why the wing's shard refuses every mint from this
	// gateway (its certificate's role), nil when mints are accepted. The
	// gateway is not ready while it is set.
	MintRefused atomic.Pointer[string]
}

func (w *Wing) MarkReached() { w.Reached.Store(true) }

// Down reports whether the wing's shard is known to be unreachable: its
// client fails fast (and redials in the background), so everything that
// looks at all wings skips it rather than waiting for a dial.
func (w *Wing) Down() bool { return w.Client.State().Down }

// maxToolsPerWing bounds what one shard may advertise.
const maxToolsPerWing = 256

// ToolDescriptor is one tool as a shard describes it. Only the fields the
// gateway registers with mcp-go are kept; unknown annotation keys are
// dropped. A tool with an outputSchema has its answers' JSON passed on as
// structuredContent too (structured).
type ToolDescriptor struct {
	Name         string              `json:"name"`
	Title        string              `json:"title,omitempty"`
	Description  string              `json:"description"`
	InputSchema  json.RawMessage     `json:"inputSchema"`
	OutputSchema json.RawMessage     `json:"outputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotation `json:"annotations,omitempty"`
	Meta         map[string]any      `json:"_meta,omitempty"`
	Spec         toolspec.Meta       `json:"-"` // read from Meta: the tool's capability, routing and fan-out
}

// ParseToolDescriptors decodes and checks a shard's ListTools answer.
func ParseToolDescriptors(raw json.RawMessage) ([]ToolDescriptor, error) {
	var tools []ToolDescriptor
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
		if t.Name == toolspec.WingsTool {
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
		t.Spec = m
		tool := t.MCPTool()
		if err := mcp.ValidateParamHeaderAnnotations(&tool); err != nil {
			return nil, fmt.Errorf("gateway: tool descriptors: %q: %w", t.Name, err)
		}
	}
	return tools, nil
}

func (t ToolDescriptor) MCPTool() mcp.Tool {
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

// Catalog is the union of the wings' tools: by name, first wing (in config
// order) wins when two disagree.
type Catalog struct {
	Tools []ToolDescriptor                  // sorted by name
	By    map[string]*Entry[ToolDescriptor] // name → entry
}

// Entry is one name of a Union: the first declaring wing's descriptor and
// the indexes of every wing declaring it.
type Entry[D any] struct {
	Desc  D
	Wings []int
}

// FirstWith is the index of the first wing declaring e where caps hold
// need, -1 if none: where a caller may use what e names.
func (e *Entry[D]) FirstWith(caps []brain.Caps, need brain.Caps) int {
	for _, wi := range e.Wings {
		if caps[wi].Has(need) {
			return wi
		}
	}
	return -1
}

// Union is the union by name of what the wings declare (load; nil:
// nothing), sorted by name: the first wing in config order wins, and
// differ (if not nil) hears of a later wing's other descriptor.
func Union[D any](wings []*Wing, load func(*Wing) *[]D, name func(D) string, differ func(first, w *Wing, kept, d D)) ([]D, map[string]*Entry[D]) {
	var all []D
	by := map[string]*Entry[D]{}
	for _, w := range wings {
		p := load(w)
		if p == nil {
			continue
		}
		for _, d := range *p {
			e, ok := by[name(d)]
			if !ok {
				by[name(d)] = &Entry[D]{Desc: d, Wings: []int{w.Idx}}
				all = append(all, d)
				continue
			}
			e.Wings = append(e.Wings, w.Idx)
			if differ != nil {
				differ(wings[e.Wings[0]], w, e.Desc, d)
			}
		}
	}
	slices.SortFunc(all, func(a, b D) int { return strings.Compare(name(a), name(b)) })
	return all, by
}

func BuildCatalog(wings []*Wing, log *slog.Logger) *Catalog {
	tools, by := Union(wings, func(w *Wing) *[]ToolDescriptor { return w.Tools.Load() }, func(t ToolDescriptor) string { return t.Name },
		func(first, w *Wing, kept, t ToolDescriptor) {
			ja, _ := json.Marshal(kept.MCPTool())
			if jb, _ := json.Marshal(t.MCPTool()); string(ja) != string(jb) {
				log.Warn("wings disagree on a tool descriptor; the first wing's is advertised", "tool", t.Name, "kept_from", first.Name, "ignored_from", w.Name)
			}
		})
	return &Catalog{Tools: tools, By: by}
}

func (c *Catalog) Names() []string {
	out := make([]string, len(c.Tools))
	for i, t := range c.Tools {
		out[i] = t.Name
	}
	return slices.Clip(out)
}

// FetchDescriptors fetches every wing's tools and prompts, at most limit
// wings at a time, and stores them in the wing. A wing that fails keeps
// its previous ones.
func FetchDescriptors(ctx context.Context, wings []*Wing, limit int, log *slog.Logger) {
	var eg errgroup.Group
	eg.SetLimit(limit)
	for _, w := range wings {
		eg.Go(func() error {
			resp, err := w.Client.ListTools(ctx)
			if err != nil {
				log.Warn("cannot list a wing's tools", "wing", w.Name, "err", err)
				return nil
			}
			w.MarkReached()
			tools, err := ParseToolDescriptors(resp.Tools)
			if err != nil {
				log.Error("a wing advertised unusable tool descriptors; keeping the previous ones", "wing", w.Name, "err", err)
				return nil
			}
			w.Tools.Store(&tools)
			prompts, err := ParsePromptDescriptors(resp.Prompts)
			if err != nil {
				log.Error("a wing declared unusable prompts; keeping the previous ones", "wing", w.Name, "err", err)
				return nil
			}
			w.Prompts.Store(&prompts)
			return nil
		})
	}
	_ = eg.Wait()
}

// Signature is the catalog's JSON as far as registering it goes (each
// tool's descriptor, the capability it needs and the wings offering it):
// an unchanged signature need not be registered again.
func (c *Catalog) Signature() []byte {
	type entry struct {
		Tool  mcp.Tool
		Need  uint8
		Wings []int
	}
	out := make([]entry, 0, len(c.Tools))
	for _, t := range c.Tools {
		e := c.By[t.Name]
		out = append(out, entry{t.MCPTool(), uint8(e.Desc.Spec.Needs), e.Wings})
	}
	sig, _ := json.Marshal(out)
	return sig
}
