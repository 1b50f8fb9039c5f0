package route

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/proto"
)

// maxPromptsPerWing bounds what one shard may declare.
const maxPromptsPerWing = 64

// PromptDescriptor is one prompt as a shard declares it.
type PromptDescriptor struct {
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description"`
	Arguments   []mcp.PromptArgument `json:"arguments"`
	Meta        map[string]any       `json:"_meta,omitempty"`
	Spec        toolspec.Meta        `json:"-"` // read from Meta
}

// ParsePromptDescriptors decodes and checks a shard's prompts (nil: none).
func ParsePromptDescriptors(raw json.RawMessage) ([]PromptDescriptor, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var ps []PromptDescriptor
	if err := json.Unmarshal(raw, &ps); err != nil {
		return nil, fmt.Errorf("gateway: prompt descriptors: %w", err)
	}
	if len(ps) > maxPromptsPerWing {
		return nil, fmt.Errorf("gateway: prompt descriptors: %d prompts, more than %d", len(ps), maxPromptsPerWing)
	}
	seen := map[string]bool{}
	for i := range ps {
		p := &ps[i]
		if p.Name == "" || len(p.Name)+len(proto.PromptCall) > proto.MaxToolNameBytes || seen[p.Name] {
			return nil, fmt.Errorf("gateway: prompt descriptors: prompt %d has no valid name or is listed twice", i)
		}
		seen[p.Name] = true
		m, err := toolspec.ParseMeta(p.Meta)
		if err != nil {
			return nil, fmt.Errorf("gateway: prompt descriptors: %q: %w", p.Name, err)
		}
		p.Spec = m
	}
	return ps, nil
}

func (p PromptDescriptor) MCPPrompt() mcp.Prompt {
	mp := mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description, Arguments: p.Arguments}
	if len(p.Meta) > 0 {
		mp.Meta = &mcp.Meta{AdditionalFields: p.Meta}
	}
	return mp
}
