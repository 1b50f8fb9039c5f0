package gateway

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/brainstem/brainstem/brain/toolspec"
)

// toolSpec is what the gateway knows of a shard tool, from the spec its
// descriptor carries, read from the catalog once per call and passed down.
type toolSpec struct {
	meta       toolspec.Meta // capability, routing and fan-out
	known      bool          // some wing advertises the tool
	structured bool          // it declares an outputSchema
}

// writes reports whether a call of the tool changes a wing: its spec needs
// write or curate. A tool the gateway does not know counts as a write (it
// carries no idempotency key, so a lost answer is never sent again).
func (s toolSpec) writes() bool { return !s.known || s.meta.Writes() }

// toolSpec looks a shard tool up in the catalog (the first wing in config
// order that advertises it); known is false for a tool no wing advertises.
func (g *Gateway) toolSpec(tool string) toolSpec {
	if cat := g.cat.Load(); cat != nil {
		if e, ok := cat.By[tool]; ok {
			return toolSpec{meta: e.Desc.Spec, known: true, structured: len(e.Desc.OutputSchema) > 0}
		}
	}
	return toolSpec{}
}

// writes reports whether a call of tool changes a wing (toolSpec.writes),
// for the calls the gateway makes of its own (cross links, prompts,
// resources, notifications).
func (g *Gateway) writes(tool string) bool { return g.toolSpec(tool).writes() }

// idempotencyKey is the key the gateway sends with a write call: the
// agent's idempotency_key when it gave one, else a fresh random key, so
// that every retry of the call (a re-mint, a reconnection) is applied at
// most once.
func idempotencyKey(agent string) string {
	if agent != "" {
		return agent
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("gateway: crypto/rand: " + err.Error()) // not recoverable
	}
	return "gw-" + hex.EncodeToString(b[:])
}
