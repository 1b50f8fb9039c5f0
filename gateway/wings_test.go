package gateway

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/edge"
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

// FuzzRouteWing: routing never panics; a wing is never empty; a wing
// derived from an id or a path never contains a slash (a "wing" argument
// is taken as it is: the gateway only looks it up among its wings, and an
// unknown one is refused as unknown_wing); and it comes from an argument
// named exactly wing, id or path.
func FuzzRouteWing(f *testing.F) {
	for _, s := range []string{`{"wing":"payments"}`, `{"id":"payments/decisions/x"}`, `{"path":"wiki/payments/f/x.md"}`,
		`{"path":"inbox/a/b.md"}`, `{"id":"/x"}`, `{"wing":1}`, `[]`, ``, `{"id":null,"path":"wiki//x"}`,
		`{"WING":"payments"}`, `{"Id":"wiki/a/b/c.md"}`, `{"id":"inbox/a/b.md"}`, `{"w\u0069ng":"a","wing":"b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		w, ok, err := routeWing(args, getRoutes)
		if err != nil {
			if e := edge.Classify(err, ""); e.Code != brain.CodeInvalidArgument {
				t.Fatalf("routing error %v is not invalid_argument", err)
			}
			return
		}
		if !ok {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(args, &m); err != nil {
			t.Fatalf("routed %q, which is not a JSON object: %v", args, err)
		}
		var named string
		_ = json.Unmarshal(m["wing"], &named)
		if w == "" || (strings.Contains(w, "/") && w != named) {
			t.Fatalf("routed %q to %q", args, w)
		}
		from := false
		for _, k := range []string{"wing", "id", "path"} {
			var v string
			if json.Unmarshal(m[k], &v) == nil && strings.Contains(v, w) {
				from = true
			}
		}
		if !from {
			t.Fatalf("routed %q to %q, which no argument named exactly wing, id or path holds", args, w)
		}
	})
}

// FuzzParseToolDescriptors: a shard's ListTools answer never panics the
// parser, and accepted descriptors always register with mcp-go.
func FuzzParseToolDescriptors(f *testing.F) {
	f.Add([]byte(testToolsJSON))
	f.Add([]byte(`[{"name":"x","inputSchema":{}}]`))
	f.Add([]byte(`[{"name":"brain_wings","inputSchema":{}}]`))
	f.Add([]byte(`[{"name":"x","inputSchema":{},"_meta":{"brainstem/capability":"admin"}}]`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		tools, err := route.ParseToolDescriptors(raw)
		if err != nil {
			return
		}
		for _, td := range tools {
			if td.Name == "" || td.Spec.Needs == 0 {
				t.Fatalf("accepted %+v", td)
			}
			if _, err := json.Marshal(td.MCPTool()); err != nil {
				t.Fatalf("accepted descriptor does not marshal: %v", err)
			}
		}
	})
}
