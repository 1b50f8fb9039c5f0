package gateway

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/brainstem/brainstem/gateway/surfaces"
)

// registerPrompts hands the prompt catalog (gateway/surfaces, which serves
// prompts/list and prompts/get) to mcp-go when it changed.
func (r *refresher) registerPrompts() {
	g := r.g
	r.mu.Lock()
	defer r.mu.Unlock()
	cat := surfaces.BuildPromptCatalog(g.wings)
	type entry struct {
		Prompt mcp.Prompt
		Wings  []int
	}
	sigOf := make([]entry, 0, len(cat.Prompts))
	prompts := make([]server.ServerPrompt, 0, len(cat.Prompts))
	for _, p := range cat.Prompts {
		sigOf = append(sigOf, entry{p.MCPPrompt(), cat.By[p.Name].Wings})
		prompts = append(prompts, server.ServerPrompt{Prompt: p.MCPPrompt(), Handler: surfaces.PreparedPrompt})
	}
	sig, _ := json.Marshal(sigOf)
	if string(sig) == r.lastPromptSig && g.surfaces.Prompts.Load() != nil {
		return
	}
	g.surfaces.Prompts.Store(cat)
	g.mcp.SetPrompts(prompts...)
	r.lastPromptSig = string(sig)
}
