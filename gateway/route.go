package gateway

import "github.com/brainstem/brainstem/gateway/route"

// toolSpec looks a shard tool up in the catalog (route.Catalog.Spec).
func (g *Gateway) toolSpec(tool string) route.Spec { return g.cat.Load().Spec(tool) }
