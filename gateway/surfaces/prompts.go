package surfaces

import (
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/route"
)

// PromptCatalog is the union of the wings' prompts: by name, the first
// wing (in config order) wins when two disagree.
type PromptCatalog struct {
	Prompts []route.PromptDescriptor // sorted by name
	By      map[string]*route.Entry[route.PromptDescriptor]
}

// BuildPromptCatalog is the union of what the wings declare now.
func BuildPromptCatalog(wings []*route.Wing) *PromptCatalog {
	ps, by := route.Union(wings, func(w *route.Wing) *[]route.PromptDescriptor { return w.Prompts.Load() },
		func(p route.PromptDescriptor) string { return p.Name }, nil)
	return &PromptCatalog{Prompts: ps, By: by}
}

// PromptWing is the first of wings declaring the prompt e where caps hold
// its capability, nil if none.
func PromptWing(wings []*route.Wing, e *route.Entry[route.PromptDescriptor], caps []brain.Caps) *route.Wing {
	for _, wi := range e.Wings {
		if caps[wi].Has(e.Desc.Spec.Needs) {
			return wings[wi]
		}
	}
	return nil
}
