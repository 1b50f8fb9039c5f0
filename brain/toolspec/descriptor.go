package toolspec

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/brainstem/brainstem/brain"
)

// The _meta keys of a tool descriptor, which tell the gateway what it needs
// to know of a tool without knowing the tool.
const (
	// MetaCapability names the one capability the tool needs: "read",
	// "write" or "curate" (brain.CapabilityMetaKey).
	MetaCapability = brain.CapabilityMetaKey
	// MetaRoute lists the arguments that route a call, in order:
	// [{"arg":"wing","as":"wing"},{"arg":"id","as":"ref"}].
	MetaRoute = "brainstem/route"
	// MetaFanout is Spec.Fanout, when set.
	MetaFanout = "brainstem/fanout"
	// MetaCrossLinks is Spec.CrossLinks, when set:
	// {"from":"moved_from","ask":"brain_links","into":"linked_from_other_wings"}.
	MetaCrossLinks = "brainstem/cross-links"
)

// descriptor is a tool as tools/list shows it, its keys in this order.
type descriptor struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  annotations     `json:"annotations"`
	Meta         meta            `json:"_meta"`
}

type annotations struct {
	Title           string `json:"title"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

type meta struct {
	Capability string      `json:"brainstem/capability"`
	Route      []RouteArg  `json:"brainstem/route,omitempty"`
	Fanout     string      `json:"brainstem/fanout,omitempty"`
	CrossLinks *CrossLinks `json:"brainstem/cross-links,omitempty"`
}

// Descriptor returns the tool as tools/list shows it:
// {"name","description","inputSchema","outputSchema"?,"annotations":{"title",
// "readOnlyHint","destructiveHint","idempotentHint","openWorldHint"},
// "_meta":{"brainstem/capability","brainstem/route"?,"brainstem/fanout"?,
// "brainstem/cross-links"?}}.
func (s *Spec) Descriptor() json.RawMessage {
	return marshal(descriptor{
		Name: s.Name, Description: s.Description, InputSchema: s.Schema(), OutputSchema: s.OutputSchema(),
		Annotations: annotations{Title: s.Title, ReadOnlyHint: s.ReadOnly, DestructiveHint: s.Destructive, IdempotentHint: s.Idempotent},
		Meta:        meta{Capability: s.Capability().Strongest(), Route: s.Routes(), Fanout: s.Fanout, CrossLinks: s.CrossLinks},
	})
}

// Meta is what the gateway reads of a tool from its descriptor's _meta.
type Meta struct {
	Needs      brain.Caps // read when the descriptor names none
	Routes     []RouteArg
	Fanout     string
	CrossLinks *CrossLinks
}

// Writes reports whether the tool changes the wing (Writes).
func (m Meta) Writes() bool { return Writes(m.Needs) }

// MaxRoutes bounds the routing arguments a descriptor may name.
const MaxRoutes = 8

// ParseMeta reads a descriptor's _meta, as decoded into a map. Unknown keys
// are ignored; a known key with a value the gateway cannot use is an error.
func ParseMeta(m map[string]any) (Meta, error) {
	out := Meta{Needs: brain.CapRead}
	if c, ok := m[MetaCapability]; ok {
		s, _ := c.(string)
		caps, err := brain.ParseCaps([]string{s})
		if err != nil {
			return Meta{}, fmt.Errorf("toolspec: %s: %w", MetaCapability, err)
		}
		out.Needs = caps
	}
	if r, ok := m[MetaRoute]; ok {
		list, ok := r.([]any)
		if !ok || len(list) > MaxRoutes {
			return Meta{}, fmt.Errorf("toolspec: %s must be a list of at most %d routes", MetaRoute, MaxRoutes)
		}
		for _, e := range list {
			obj, _ := e.(map[string]any)
			arg, _ := obj["arg"].(string)
			as, _ := obj["as"].(string)
			if arg == "" || (Route(as) != RouteWing && Route(as) != RouteRef && Route(as) != RoutePath) {
				return Meta{}, fmt.Errorf("toolspec: %s: %v is not {\"arg\":<name>,\"as\":\"wing\"|\"ref\"|\"path\"}", MetaRoute, e)
			}
			out.Routes = append(out.Routes, RouteArg{Arg: arg, As: Route(as)})
		}
	}
	if f, ok := m[MetaFanout]; ok {
		if s, _ := f.(string); s != FanoutSearch {
			return Meta{}, fmt.Errorf("toolspec: %s %v is not %q", MetaFanout, f, FanoutSearch)
		}
		out.Fanout = FanoutSearch
	}
	if c, ok := m[MetaCrossLinks]; ok {
		obj, _ := c.(map[string]any)
		var cl CrossLinks
		cl.From, _ = obj["from"].(string)
		cl.Ask, _ = obj["ask"].(string)
		cl.Into, _ = obj["into"].(string)
		if !metaName(cl.From) || !metaName(cl.Into) || !metaName(cl.Ask) {
			return Meta{}, fmt.Errorf("toolspec: %s %v is not {\"from\":<field>,\"ask\":<tool>,\"into\":<field>}", MetaCrossLinks, c)
		}
		out.CrossLinks = &cl
	}
	return out, nil
}

// metaName reports whether s is a field or tool name a descriptor may name:
// 1 to 64 of a-z, 0-9 and '_'.
func metaName(s string) bool {
	return s != "" && len(s) <= 64 && !strings.ContainsFunc(s, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' })
}
