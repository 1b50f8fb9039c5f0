package gateway

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

// TestCatalogUnion: tools are the union by name over wings, the first wing
// in config order wins a disagreement (logged), and each tool remembers
// which wings offer it.
func TestCatalogUnion(t *testing.T) {
	mk := func(js string) *[]toolDescriptor {
		tools, err := parseToolDescriptors(json.RawMessage(js))
		if err != nil {
			t.Fatal(err)
		}
		return &tools
	}
	a := &wing{idx: 0, name: "a"}
	b := &wing{idx: 1, name: "b"}
	c := &wing{idx: 2, name: "c"} // never answered
	a.tools.Store(mk(`[{"name":"brain_get","description":"from a","inputSchema":{"type":"object"}},{"name":"only_a","description":"x","inputSchema":{},"_meta":{"brainstem/capability":"curate"}}]`))
	b.tools.Store(mk(`[{"name":"brain_get","description":"from b","inputSchema":{"type":"object"}},{"name":"only_b","description":"y","inputSchema":{},"_meta":{"brainstem/capability":"write"}}]`))
	var logs bytes.Buffer
	cat := buildCatalog([]*wing{a, b, c}, slog.New(slog.NewTextHandler(&logs, nil)))
	if got := strings.Join(cat.names(), ","); got != "brain_get,only_a,only_b" {
		t.Fatal(got)
	}
	if e := cat.by["brain_get"]; e.desc.Description != "from a" || len(e.wings) != 2 || e.desc.meta.Needs != brain.CapRead {
		t.Fatalf("%+v", e)
	}
	if cat.by["only_a"].desc.meta.Needs != brain.CapCurate || cat.by["only_b"].desc.meta.Needs != brain.CapWrite || cat.by["only_b"].wings[0] != 1 {
		t.Fatalf("%+v %+v", cat.by["only_a"], cat.by["only_b"])
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
		if _, err := parseToolDescriptors(json.RawMessage(js)); err == nil || !strings.HasPrefix(err.Error(), "gateway: tool descriptors") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
