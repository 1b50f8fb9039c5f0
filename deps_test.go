package brainstem

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/search"
)

const module = "github.com/brainstem/brainstem"

type listedPackage struct {
	ImportPath string
	Dir        string
	Imports    []string
	Deps       []string
	GoFiles    []string
}

func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// under reports whether pkg is dir or below it (dir relative to the module).
func under(pkg, dir string) bool {
	p := module + "/" + dir
	return pkg == p || strings.HasPrefix(pkg, p+"/")
}

// TestDependencyRules enforces the "must not" column of the design brief's
// package table over every package's transitive imports.
func TestDependencyRules(t *testing.T) {
	rules := []struct {
		from      string   // a directory of the module (and everything below it)
		forbidden []string // module directories or import-path prefixes it must not reach
		why       string
	}{
		{"auth", []string{"proto", "shard", "gateway", "github.com/mark3labs/mcp-go", "github.com/quic-go/quic-go"}, "auth must not know about MCP or QUIC"},
		{"proto", []string{"auth", "shard", "gateway", "github.com/mark3labs/mcp-go"}, "proto must not know about notes or MCP"},
		{"shard", []string{"gateway", "auth/sso", "auth/devidp", "github.com/coreos/go-oidc"}, "shard must not know about SSO or HTTP"},
		{"gateway", []string{"shard"}, "gateway must not import the shard (its store, index or tools)"},
		{"signin", []string{"gateway", "shard", "proto", "auth", "github.com/mark3labs/mcp-go"}, "the sign-in client speaks OAuth over HTTP, like any MCP client"},
		{"join", []string{"gateway", "shard", "proto", "auth"}, "join talks to a gateway from outside, as a client"},
		{"hooks", []string{"gateway", "shard", "proto", "auth"}, "the hooks call a gateway from outside, as the person's MCP client"},
		{"doctor", []string{"gateway", "shard", "proto", "auth"}, "doctor walks the chain from outside, as a client"},
		{"gateway/oauth", []string{"proto", "github.com/mark3labs/mcp-go", "github.com/quic-go/quic-go"}, "the authorization server and the grants below it (device, machine, idjag) know OAuth and OIDC, not MCP or the shards"},
		{"shardserver", []string{"gateway", "auth/sso", "auth/devidp", "github.com/coreos/go-oidc"}, "a shard server knows nothing of SSO or the gateway"},
		{"shard/history", []string{"shard/store", "shard/tools", "shard/index", "proto", "auth"}, "history sits under the store: the store drives it, not the other way round"},
		{"shard/gitstore", []string{"shard/history", "shard/remote", "shard/store", "shard/tools", "shard/index", "proto", "auth"}, "the git engine sits under history and the remotes: they drive it, not the other way round"},
		{"cmd", []string{"tooling/oauthtest"}, "the authorization server's test harness is for tests only (the layers keep the product below tooling/ already)"},
		{"brain/injection", []string{module + "/", "github.com/", "golang.org/"}, "the injection audit is a leaf of the contract: the standard library only, so gateway, shard and hooks can all apply it"},
	}
	// Rules of one package alone, not of those below it.
	exact := map[string][]string{
		// The grants import the authorization server's core, never the
		// other way round.
		"gateway/oauth": {"gateway/oauth/device", "gateway/oauth/machine", "gateway/oauth/idjag"},
	}
	for _, p := range listPackages(t) {
		for _, dep := range p.Deps {
			for _, f := range exact[strings.TrimPrefix(p.ImportPath, module+"/")] {
				if under(dep, f) {
					t.Errorf("%s imports %s: a grant imports the core, not the other way round", p.ImportPath, dep)
				}
			}
		}
		for _, r := range rules {
			if !under(p.ImportPath, r.from) {
				continue
			}
			for _, dep := range p.Deps {
				for _, f := range r.forbidden {
					if under(dep, f) || strings.HasPrefix(dep, f) {
						t.Errorf("%s imports %s: %s", p.ImportPath, dep, r.why)
					}
				}
			}
		}
		// The store's subpackages sit under it (the store root imports
		// them, they may import each other), never over the tools or proto.
		if strings.HasPrefix(p.ImportPath, module+"/shard/store/") {
			for _, dep := range p.Deps {
				if dep == module+"/shard/store" || under(dep, "shard/tools") || under(dep, "proto") {
					t.Errorf("%s imports %s: the store's subpackages sit under the store: it imports them, not the other way round", p.ImportPath, dep)
				}
			}
		}
	}
}

// TestContractImportsNothing: the contract packages under brain/, which the
// gateway and the shard both import, import nothing else of the module and
// no third-party module: only the standard library and each other.
func TestContractImportsNothing(t *testing.T) {
	found := false
	for _, p := range listPackages(t) {
		if !under(p.ImportPath, "brain") {
			continue
		}
		found = true
		for _, dep := range p.Deps {
			if first, _, _ := strings.Cut(dep, "/"); strings.Contains(first, ".") && !under(dep, "brain") {
				t.Errorf("%s imports %s: the contract package may import the standard library only", p.ImportPath, dep)
			}
		}
	}
	if !found {
		t.Fatal("no package brain/")
	}
}

// layers is the layout of the module, lowest first: a package may import
// the packages of its own top-level directory and of lower layers, never
// of its own layer's other directories or of a higher one (no arrow runs
// back up). internal/ holds product-grade leaves only (how a file is
// written durably, the binary codec, the process logger and tracer, the
// kept goroutines); the product is
// layers 1 to 5; tooling/ (the development environment, the load
// generator, the benchmark corpora, the CLI's conventions, the test
// browser, the log and email checks) may use the product, which never
// uses it; cmd/brainstem wires everything; e2e/ is tests only.
var layers = [][]string{
	{"internal"},
	{"brain"},
	{"search", "signin", "deploy"},
	{"proto", "auth", "join", "hooks"},
	{"gateway", "shard", "doctor"},
	{"shardserver"},
	{"tooling"},
	{"cmd"},
	{"e2e", ""}, // "" is the module's root package (its doc and these tests)
}

// layerOf returns the layer and top-level directory of a package of the
// module, or -1.
func layerOf(pkg string) (int, string) {
	dir := ""
	if pkg != module {
		rest, ok := strings.CutPrefix(pkg, module+"/")
		if !ok {
			return -1, ""
		}
		dir, _, _ = strings.Cut(rest, "/")
	}
	for i, l := range layers {
		if slices.Contains(l, dir) {
			return i, dir
		}
	}
	return -1, dir
}

// TestLayout enforces layers over every package's imports: each package
// belongs to a layer, and imports only its own directory and lower layers.
func TestLayout(t *testing.T) {
	for _, p := range listPackages(t) {
		from, dir := layerOf(p.ImportPath)
		if from < 0 {
			t.Errorf("%s (directory %s/) is in no layer: place it in layers", p.ImportPath, dir)
			continue
		}
		for _, imp := range p.Imports {
			to, tdir := layerOf(imp)
			switch {
			case to < 0 && tdir == "":
				continue // not of the module
			case tdir == dir:
				continue
			case to >= from:
				t.Errorf("%s (layer %d) imports %s (layer %d): an arrow back up; move the code down, or what it needs", p.ImportPath, from, imp, to)
			}
		}
	}
}

// gatewayLayers is the layout inside gateway/, lowest first, as layers is
// the module's: each entry is a directory under gateway/ ("" is the
// package gateway itself, the wiring). A package of gateway/ imports the
// packages of its own directory and of lower entries, never of its own
// entry's other directories or of a higher one (no arrow runs back up
// between the gateway's rooms).
var gatewayLayers = [][]string{
	{"edge", "oauth"},  // the one error map; the authorization server
	{"config"},         // the gateway's configuration (its oauth section is oauth's)
	{"rpc", "console"}, // the JSON-RPC a tools/call is read as; the curators' console (a client of oauth)
	{"route"},          // the wings, their catalog and the grant cache
	{"surfaces"},       // resources and their cursors, prompts, cross links, notifications
	{""},               // the gateway: /mcp, calls, surfaces, wiring
}

// gatewayLayerOf returns the sub-layer and directory under gateway/ of a
// package, or -1 when pkg is not of gateway/ (or is in no sub-layer).
func gatewayLayerOf(pkg string) (int, string, bool) {
	if !under(pkg, "gateway") {
		return -1, "", false
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(pkg, module+"/gateway"), "/")
	dir, _, _ := strings.Cut(rest, "/")
	for i, l := range gatewayLayers {
		if slices.Contains(l, dir) {
			return i, dir, true
		}
	}
	return -1, dir, true
}

// TestGatewayLayout enforces gatewayLayers over the imports of gateway/'s
// packages.
func TestGatewayLayout(t *testing.T) {
	for _, p := range listPackages(t) {
		from, dir, ok := gatewayLayerOf(p.ImportPath)
		if !ok {
			continue
		}
		if from < 0 {
			t.Errorf("%s (directory gateway/%s) is in no gateway sub-layer: place it in gatewayLayers", p.ImportPath, dir)
			continue
		}
		for _, imp := range p.Imports {
			to, tdir, ok := gatewayLayerOf(imp)
			switch {
			case !ok || tdir == dir:
				continue
			case to < 0 || to >= from:
				t.Errorf("%s (gateway sub-layer %d) imports %s (sub-layer %d): an arrow back up between the gateway's rooms", p.ImportPath, from, imp, to)
			}
		}
	}
}

// TestShardDoesNotServeHTTP checks shard packages never import net/http
// directly (mcp-go's stdio server may use it internally).
func TestShardDoesNotServeHTTP(t *testing.T) {
	for _, p := range listPackages(t) {
		if !under(p.ImportPath, "shard") {
			continue
		}
		for _, imp := range p.Imports {
			if imp == "net/http" {
				t.Errorf("%s imports net/http: shards speak brainstem/1 and stdio only", p.ImportPath)
			}
		}
	}
}

// TestPackageDocs requires exactly one package doc comment per package.
func TestPackageDocs(t *testing.T) {
	for _, p := range listPackages(t) {
		docs := 0
		for _, f := range p.GoFiles {
			file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if file.Doc != nil && strings.TrimSpace(file.Doc.Text()) != "" {
				docs++
			}
		}
		if docs != 1 {
			t.Errorf("%s has %d package doc comments, want exactly 1", p.ImportPath, docs)
		}
	}
}

// TestNoToolNamesBelowTools: the packages shard/tools is built on (the
// store, the index, the layout, …) name no tool in their strings: a
// message that says which tool to call next is the tools' to write (see
// tools.hint). Comments may name tools.
func TestNoToolNamesBelowTools(t *testing.T) {
	pkgs := listPackages(t)
	var below []string
	for _, p := range pkgs {
		if p.ImportPath != module+"/shard/tools" {
			continue
		}
		for _, d := range p.Deps {
			if under(d, "shard") {
				below = append(below, d)
			}
		}
	}
	if len(below) < 3 {
		t.Fatalf("shard/tools depends on only %v", below)
	}
	toolName := regexp.MustCompile(`\b(brain_[a-z_]+|session_log)\b`)
	for _, p := range pkgs {
		if !slices.Contains(below, p.ImportPath) {
			continue
		}
		for _, f := range p.GoFiles {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if m := toolName.FindString(lit.Value); m != "" {
						t.Errorf("%s: %s names the tool %s: only shard/tools may", fset.Position(lit.Pos()), lit.Value, m)
					}
				}
				return true
			})
		}
	}
}

// TestContractNotCopied: no package but brain/ declares a constant whose
// value is one of the contract's strings (a tool error code, the
// capability _meta key, the name of brain_query), and no string spells the
// tool error envelope: every side refers to brain/ instead of keeping a
// copy that can drift.
func TestContractNotCopied(t *testing.T) {
	contract := map[string]string{brain.CapabilityMetaKey: "brain.CapabilityMetaKey", search.Tool: "search.Tool"}
	for _, c := range brain.Codes() {
		contract[string(c.Code)] = "a brain.Code"
	}
	for _, p := range listPackages(t) {
		if under(p.ImportPath, "brain") || under(p.ImportPath, "search") {
			continue
		}
		for _, f := range p.GoFiles {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GenDecl:
					if n.Tok != token.CONST {
						return true
					}
					for _, spec := range n.Specs {
						for _, v := range spec.(*ast.ValueSpec).Values {
							if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
								if s, err := strconv.Unquote(lit.Value); err == nil && contract[s] != "" {
									t.Errorf("%s: constant %s copies %s", fset.Position(lit.Pos()), lit.Value, contract[s])
								}
							}
						}
					}
				case *ast.BasicLit:
					if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && strings.Contains(s, `"error":{"code"`) {
						t.Errorf("%s: %s spells the tool error envelope: use brain.EncodeError", fset.Position(n.Pos()), n.Value)
					}
				}
				return true
			})
		}
	}
}
