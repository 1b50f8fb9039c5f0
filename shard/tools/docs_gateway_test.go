package tools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
)

// gatewayBlocks renders the sections of the tools the gateway answers
// itself, declared in brain/toolspec beside the shards' (toolspec.Wings):
// no shard serves them, so `brainstem shard --stdio` has none. The example
// result is the encoding of the answer type the gateway sends.
func gatewayBlocks(t *testing.T) map[string]string {
	sp := toolspec.Wings()
	if err := sp.Validate(); err != nil {
		t.Fatal(err)
	}
	answer := toolspec.WingsAnswer{Wings: []toolspec.WingCaps{
		{Wing: "payments", Capabilities: []string{"read"}},
		{Wing: "platform", Capabilities: []string{"read", "write"}},
	}}
	res, err := brain.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	yes := map[bool]string{true: "yes", false: "no"}
	var b strings.Builder
	fmt.Fprintf(&b, "**Gateway only:** the gateway answers it from your grants in every wing; no shard serves it, so "+
		"`brainstem shard --stdio` has no `%s` · capability: none (it lists yours) · read-only: %s · destructive: %s · idempotent: %s\n\n",
		sp.Name, yes[sp.ReadOnly], yes[sp.Destructive], yes[sp.Idempotent])
	fmt.Fprintf(&b, "%s\n\nNo arguments. A wing whose shard could not say in time is listed under `unavailable` "+
		"(`wing`, `code`, `error`), to a caller who holds a capability there only.\n\n", sp.Description)
	fmt.Fprintf(&b, "Example arguments:\n\n```json\n{}\n```\n\nResult (bob@example.com in `brainstem dev`):\n\n```json\n%s\n```\n", indentJSON(t, string(res)))
	return map[string]string{sp.Name: b.String()}
}
