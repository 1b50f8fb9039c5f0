package brain

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCodesListsEveryCode: every Code constant declared in this package is
// in Codes() exactly once, with a one-line meaning and who answers with it
// (docs/tools.md's table is generated from Codes()).
func TestCodesListsEveryCode(t *testing.T) {
	declared := map[Code]string{}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for i, n := range vs.Names {
					s, err := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
					if err != nil {
						t.Fatal(err)
					}
					declared[Code(s)] = n.Name
				}
			}
		}
	}
	if len(declared) < 14 {
		t.Fatalf("found only %d Code constants", len(declared))
	}
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	listed := map[Code]bool{}
	for _, ci := range Codes() {
		if listed[ci.Code] {
			t.Errorf("Codes() lists %q twice", ci.Code)
		}
		listed[ci.Code] = true
		if _, ok := declared[ci.Code]; !ok {
			t.Errorf("Codes() lists %q, which is no Code constant", ci.Code)
		}
		if !snake.MatchString(string(ci.Code)) {
			t.Errorf("code %q is not snake_case", ci.Code)
		}
		if ci.From == 0 || ci.From&^(FromShard|FromGateway) != 0 {
			t.Errorf("code %q: From = %d", ci.Code, ci.From)
		}
		if ci.Meaning == "" || strings.ContainsAny(ci.Meaning, "\n|") {
			t.Errorf("code %q: meaning %q must be one line without '|'", ci.Code, ci.Meaning)
		}
	}
	for c, name := range declared {
		if !listed[c] {
			t.Errorf("%s (%q) is missing from Codes()", name, c)
		}
	}
}

func TestEncodeDecodeError(t *testing.T) {
	tests := []struct {
		code Code
		msg  string
		want string
	}{
		{CodeNotFound, "no note payments/facts/x", `{"error":{"code":"not_found","message":"no note payments/facts/x"}}`},
		{CodeInvalidArgument, `<b> & "q"`, `{"error":{"code":"invalid_argument","message":"<b> & \"q\""}}`},
		{CodeInternal, "", `{"error":{"code":"internal","message":""}}`},
		{CodeConflict, "bad \xff utf8", `{"error":{"code":"conflict","message":"bad \ufffd utf8"}}`},
	}
	for _, tt := range tests {
		got := string(EncodeError(tt.code, tt.msg))
		if got != tt.want {
			t.Errorf("EncodeError(%s, %q) = %s, want %s", tt.code, tt.msg, got, tt.want)
		}
		code, msg, ok := DecodeError([]byte(got))
		if !ok || code != tt.code || (msg != tt.msg && !strings.Contains(tt.msg, "\xff")) {
			t.Errorf("DecodeError(%s) = %s, %q, %v", got, code, msg, ok)
		}
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"error":{}}`, `{"error":{"code":""}}`, `{"error":"x"}`, `{"hits":[]}`} {
		if code, msg, ok := DecodeError([]byte(bad)); ok {
			t.Errorf("DecodeError(%s) = %s, %q, true", bad, code, msg)
		}
	}
}

func FuzzDecodeError(f *testing.F) {
	for _, s := range []string{`{"error":{"code":"not_found","message":"m"}}`, `{"error":{"code":""}}`, `{}`, `null`, `{"error":{"code":7}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		code, msg, ok := DecodeError(b)
		if !ok {
			return
		}
		if code == "" {
			t.Fatalf("DecodeError(%q) ok with an empty code", b)
		}
		// What decodes (always valid UTF-8) re-encodes to a document that
		// decodes the same.
		again, amsg, aok := DecodeError(EncodeError(code, msg))
		if !aok || again != code || amsg != msg || !json.Valid(EncodeError(code, msg)) {
			t.Fatalf("round trip of %q: %s %q %v", b, again, amsg, aok)
		}
	})
}

func TestMarshal(t *testing.T) {
	b, err := Marshal(map[string]any{"body": "<a & b>", "n": 1})
	if err != nil || string(b) != `{"body":"<a & b>","n":1}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Fatal("Marshal of a func succeeded")
	}
}
