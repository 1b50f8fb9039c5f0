package brainstem

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a non-test function may be, from its func
// line to its closing brace.
const maxFuncLines = 80

// funcName names a function declaration as the allowlist does: the package
// directory, then Func or (*Type).Method / (Type).Method.
func funcName(dir string, fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return dir + "." + fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	star := ""
	if se, ok := typ.(*ast.StarExpr); ok {
		typ, star = se.X, "*"
	}
	if ix, ok := typ.(*ast.IndexExpr); ok { // a generic receiver
		typ = ix.X
	}
	name := "?"
	if id, ok := typ.(*ast.Ident); ok {
		name = id.Name
	}
	return fmt.Sprintf("%s.(%s%s).%s", dir, star, name, fd.Name.Name)
}

// TestFunctionLength fails on any non-test function longer than
// maxFuncLines, except those on the allowlist, each with its reason: a table
// definition, or a function another part of the work splits. An entry that
// no longer names a long function fails too, so the list only shrinks.
func TestFunctionLength(t *testing.T) {
	allow := map[string]string{}
	seen := map[string]bool{}
	for _, p := range listPackages(t) {
		dir := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		for _, f := range p.GoFiles {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				if n <= maxFuncLines {
					continue
				}
				name := funcName(dir, fd)
				if _, ok := allow[name]; ok {
					seen[name] = true
					continue
				}
				t.Errorf("%s (%s:%d) is %d lines, over %d: split it (or, for a table definition, add it to the allowlist with the reason)",
					name, filepath.Join(dir, f), fset.Position(fd.Pos()).Line, n, maxFuncLines)
			}
		}
	}
	for name := range allow {
		if !seen[name] {
			t.Errorf("allowlist entry %s names no function over %d lines: remove it", name, maxFuncLines)
		}
	}
}

// TestCmdIsSmall keeps cmd/brainstem to flag declarations and wiring: at
// most 500 lines of non-test Go (each command's help text is in
// usage/<command>.txt).
func TestCmdIsSmall(t *testing.T) {
	const max = 500
	files, err := filepath.Glob("cmd/brainstem/*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += bytes.Count(b, []byte("\n"))
	}
	if total == 0 || total > max {
		t.Errorf("cmd/brainstem has %d lines of non-test Go, want 1 to %d: move logic into the packages", total, max)
	}
}
