package gateway

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/route"
)

// TestCatalogUnion: tools are the union by name over wings, the first wing
// in config order wins a disagreement (logged), and each tool remembers
// which wings offer it.
func TestCatalogUnion(t *testing.T) {
	mk := func(js string) *[]route.ToolDescriptor {
		tools, err := route.ParseToolDescriptors(json.RawMessage(js))
		if err != nil {
			t.Fatal(err)
		}
		return &tools
	}
	a := &route.Wing{Idx: 0, Name: "a"}
	b := &route.Wing{Idx: 1, Name: "b"}
	c := &route.Wing{Idx: 2, Name: "c"} // never answered
	a.Tools.Store(mk(`[{"name":"brain_get","description":"from a","inputSchema":{"type":"object"}},{"name":"only_a","description":"x","inputSchema":{},"_meta":{"brainstem/capability":"curate"}}]`))
	b.Tools.Store(mk(`[{"name":"brain_get","description":"from b","inputSchema":{"type":"object"}},{"name":"only_b","description":"y","inputSchema":{},"_meta":{"brainstem/capability":"write"}}]`))
	var logs bytes.Buffer
	cat := route.BuildCatalog([]*route.Wing{a, b, c}, slog.New(slog.NewTextHandler(&logs, nil)))
	if got := strings.Join(cat.Names(), ","); got != "brain_get,only_a,only_b" {
		t.Fatal(got)
	}
	if e := cat.By["brain_get"]; e.Desc.Description != "from a" || len(e.Wings) != 2 || e.Desc.Spec.Needs != brain.CapRead {
		t.Fatalf("%+v", e)
	}
	if cat.By["only_a"].Desc.Spec.Needs != brain.CapCurate || cat.By["only_b"].Desc.Spec.Needs != brain.CapWrite || cat.By["only_b"].Wings[0] != 1 {
		t.Fatalf("%+v %+v", cat.By["only_a"], cat.By["only_b"])
	}
	if !strings.Contains(logs.String(), "disagree") || !strings.Contains(logs.String(), "ignored_from=b") {
		t.Fatalf("no warning: %s", logs.String())
	}
}

// TestParseToolDescriptorsRejects: what a shard may not advertise.
func TestParseToolDescriptorsRejects(t *testing.T) {
	for name, js := range map[string]string{
		"not an array":       `{}`,
		"no name":            `[{"inputSchema":{}}]`,
		"duplicate":          `[{"name":"x","inputSchema":{}},{"name":"x","inputSchema":{}}]`,
		"reserved":           `[{"name":"brain_wings","inputSchema":{}}]`,
		"no schema":          `[{"name":"x"}]`,
		"schema not object":  `[{"name":"x","inputSchema":[1]}]`,
		"unknown capability": `[{"name":"x","inputSchema":{},"_meta":{"brainstem/capability":"admin"}}]`,
	} {
		if _, err := route.ParseToolDescriptors(json.RawMessage(js)); err == nil || !strings.HasPrefix(err.Error(), "gateway: tool descriptors") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
