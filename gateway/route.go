package gateway

import "github.com/brainstem/brainstem/gateway/route"

// toolSpec looks a shard tool up in the catalog (route.Catalog.Spec).
func (g *Gateway) toolSpec(tool string) route.Spec { return g.cat.Load().Spec(tool) }

// writes reports whether a call of tool changes a wing (route.Spec.Writes),
// for the calls the gateway makes of its own (cross links, prompts,
// resources, notifications).
func (g *Gateway) writes(tool string) bool { return g.toolSpec(tool).Writes() }
