package toolspec

import (
	"encoding/json"
	"testing"
	"time"
)

type outInner struct {
	N int `json:"n"`
}

type outSelf struct {
	Next []outSelf `json:"next"`
}

type outEmbedded struct {
	E string `json:"e"`
}

type outAll struct {
	S      string            `json:"s"`
	B      bool              `json:"b"`
	I      int64             `json:"i"`
	F      float64           `json:"f"`
	List   []string          `json:"list"`
	Bytes  []byte            `json:"bytes"`
	Map    map[string]int    `json:"map"`
	Raw    json.RawMessage   `json:"raw"`
	At     time.Time         `json:"at"` // a json.Marshaler: no constraint
	Ptr    *outInner         `json:"ptr,omitempty"`
	Inner  outInner          `json:"inner"`
	Opt    string            `json:"opt,omitempty"`
	Zero   int               `json:"zero,omitzero"`
	Self   outSelf           `json:"self"`
	Skip   string            `json:"-"`
	NoTag  string            // its key is the field's name
	Any    any               `json:"any"`
	Nested map[string][]bool `json:"nested"`
	outEmbedded
}

func TestOutputSchema(t *testing.T) {
	s := &Spec{Name: "t", Description: "d", Result: outAll{}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	const want = `{"type":"object","properties":{` +
		`"s":{"type":"string"},"b":{"type":"boolean"},"i":{"type":"integer"},"f":{"type":"number"},` +
		`"list":{"type":"array","items":{"type":"string"}},"bytes":{"type":"string"},` +
		`"map":{"type":"object","additionalProperties":{"type":"integer"}},"raw":{},"at":{},` +
		`"ptr":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]},` +
		`"inner":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]},` +
		`"opt":{"type":"string"},"zero":{"type":"integer"},` +
		`"self":{"type":"object","properties":{"next":{"type":"array","items":{}}},"required":["next"]},` +
		`"NoTag":{"type":"string"},"any":{},` +
		`"nested":{"type":"object","additionalProperties":{"type":"array","items":{"type":"boolean"}}},` +
		`"e":{"type":"string"}},` +
		`"required":["s","b","i","f","list","bytes","map","raw","at","inner","self","NoTag","any","nested","e"]}`
	if got := string(s.OutputSchema()); got != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	if (&Spec{Name: "t", Description: "d"}).OutputSchema() != nil {
		t.Error("a spec without Result declares an outputSchema")
	}
	for _, bad := range []any{"text", []outInner{}, 3} {
		if err := (&Spec{Name: "t", Description: "d", Result: bad}).Validate(); err == nil {
			t.Errorf("Result %T accepted", bad)
		}
	}
}
