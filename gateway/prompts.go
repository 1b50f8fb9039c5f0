package gateway

// registerPrompts hands the prompt catalog (gateway/surfaces, which serves
// prompts/list and prompts/get) to mcp-go when it changed.
func (r *refresher) registerPrompts() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastPromptSig = r.g.surfaces.RegisterPrompts(r.lastPromptSig, r.g.mcp.SetPrompts)
}
