package server_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"toolrouter/server"
)

// The docs tests read docs/api.md's tables and check them against what the server does, both
// ways: a code, a route without a row fails, and so does a row for something that does not exist.

// repoRoot is the module's root, where docs/ is: the parent of this package's directory.
const repoRoot = ".."

// notSent are codes the source makes that no client receives, and why.
var notSent = map[string]string{
	"client_closed_request": "recorded (499) for a request whose client left before the answer",
}

// dynamicCodes are the codes made as "prefix" + a value, per function: the scan cannot read them,
// so they are listed here, and each value must be a string literal of the source (where it is
// given: the request field's name, usage.ParamError's Param). A new such site fails the test
// until its codes are listed.
var dynamicCodes = map[string][]string{
	// usage.ParamError's Param, as "bad_" + Param.
	"answer.Classify": {"bad_since", "bad_until", "bad_group_by", "bad_bucket"},
	// the sampling fields of a chat completion, as "bad_" + the field.
	"server.chatOptions": {"bad_temperature", "bad_top_p", "bad_frequency_penalty", "bad_presence_penalty",
		"bad_max_tokens", "bad_max_completion_tokens"},
}

// sourceCode is one code the source makes, with the statuses it is sent with (0: not read).
type sourceCode struct {
	statuses []int
	at       []string // file:line of each site
}

// TestErrorTableMatchesCode: every error code the HTTP API can answer has a row in docs/api.md's
// error table, with the status the code sends it with, and every code of the table is one the
// code makes.
func TestErrorTableMatchesCode(t *testing.T) {
	codes := scanCodes(t)
	if len(codes) < 50 {
		t.Fatalf("the scan found %d codes; it no longer reads how the source makes them", len(codes))
	}
	rows := markdownTable(t, filepath.Join(repoRoot, "docs", "api.md"), "## Errors", "| status | code | when |")
	documented := map[string][]int{}
	for _, row := range rows {
		var statuses []int
		for _, s := range strings.Split(row[0], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				t.Fatalf("error table: status %q of row %q is not a number", row[0], row)
			}
			statuses = append(statuses, n)
		}
		cs := backticked(row[1])
		if len(cs) == 0 {
			t.Errorf("error table: row %q names no code", row)
		}
		for _, c := range cs {
			documented[c] = append(documented[c], statuses...)
		}
	}
	for _, c := range sortedKeys(codes) {
		sc := codes[c]
		if why, ok := notSent[c]; ok {
			if _, doc := documented[c]; doc {
				t.Errorf("error table: %s has a row, but no client receives it (%s)", c, why)
			}
			continue
		}
		doc, ok := documented[c]
		if !ok {
			t.Errorf("error table: no row for %s, which the server sends (%s)", c, strings.Join(sc.at, ", "))
			continue
		}
		for _, s := range sc.statuses {
			if s != 0 && !slices.Contains(doc, s) {
				t.Errorf("error table: %s is sent with status %d (%s), but its rows say %v", c, s, strings.Join(sc.at, ", "), doc)
			}
		}
	}
	for _, c := range sortedKeys(documented) {
		if _, ok := codes[c]; !ok {
			t.Errorf("error table: a row for %s, which the server never sends", c)
		}
	}
}

// TestEndpointTableMatchesRoutes: every route the server mounts, with every optional part on, has
// a row in docs/api.md's endpoint table (or, under /ui/api/, in the console's), and every row is a
// mounted route with its methods.
func TestEndpointTableMatchesRoutes(t *testing.T) {
	app := server.New(server.Deps{Metrics: http.NotFoundHandler(), MCP: http.NotFoundHandler(), Console: &server.Console{},
		Limiter: admitAll{}}, server.Options{Logger: quiet})
	mounted := map[string]bool{} // "METHOD /path", a wildcard written "*"
	for _, r := range app.GetRoutes(true) {
		if r.Method != http.MethodHead {
			mounted[r.Method+" "+r.Path] = true
		}
	}
	api := filepath.Join(repoRoot, "docs", "api.md")
	documented := map[string]bool{}
	for _, row := range markdownTable(t, api, "# HTTP API", "| method | path | what it does |") {
		methods, paths := backticked(row[0]), backticked(row[1])
		if len(methods) == 0 || len(paths) == 0 {
			t.Errorf("endpoint table: row %q names no method or no path", row)
		}
		for _, m := range methods {
			for _, p := range paths {
				documented[m+" "+routePattern(p)] = true
			}
		}
	}
	for _, row := range markdownTable(t, api, "## The console (`/ui`)", "| path | answers |") {
		for _, e := range backticked(row[0]) {
			m, p, ok := strings.Cut(e, " ")
			if !ok {
				t.Errorf("console table: %q is not METHOD PATH", e)
				continue
			}
			documented[m+" "+routePattern(p)] = true
		}
	}
	for _, r := range sortedKeys(mounted) {
		if !documented[r] {
			t.Errorf("endpoint table: no row for %s, which the server mounts", r)
		}
	}
	for _, r := range sortedKeys(documented) {
		if !mounted[r] {
			t.Errorf("endpoint table: a row for %s, which the server does not mount", r)
		}
	}
}

// routePattern is a documented path as fiber mounts it: a "{param}" and what follows it is the
// wildcard "*" ("/ui/api/approvals/{id}/approve" is served by "/ui/api/approvals/*").
func routePattern(p string) string {
	return regexp.MustCompile(`\{[a-z]+\}.*$`).ReplaceAllString(p, "*")
}

// parseModule parses the module's non-test Go source, but for internal/ and the benchmarks.
func parseModule(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "internal", "bench", "examples", "deploy", "docs", "node_modules", "testdata":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && path != repoRoot {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fset, files
}

// TestCallErrorTableMatchesCode: docs/api.md's table of calls[].error.code has a row for every
// code a call can carry (the Code constants of packages router and mcpserver), and none other.
func TestCallErrorTableMatchesCode(t *testing.T) {
	_, files := parseModule(t)
	codes := map[string]bool{}
	for _, f := range files {
		if f.Name.Name != "router" && f.Name.Name != "mcpserver" {
			continue
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) && strings.HasPrefix(name.Name, "Code") {
						if s, ok := stringLit(vs.Values[i]); ok {
							codes[s] = true
						}
					}
				}
			}
		}
	}
	if len(codes) < 10 {
		t.Fatalf("the scan found %d call error codes; it no longer reads how the source makes them", len(codes))
	}
	documented := map[string]bool{}
	for _, row := range markdownTable(t, filepath.Join(repoRoot, "docs", "api.md"), "## `POST /v1/route`", "| code | meaning |") {
		for _, c := range backticked(row[0]) {
			documented[c] = true
		}
	}
	for _, c := range sortedKeys(codes) {
		if !documented[c] {
			t.Errorf("calls[].error.code table: no row for %s, which a call can carry", c)
		}
	}
	for _, c := range sortedKeys(documented) {
		if !codes[c] {
			t.Errorf("calls[].error.code table: a row for %s, which no call carries", c)
		}
	}
}

// scanCodes reads the module's non-test Go source for the error codes it makes: the Code of
// each answer.Problem literal, the first argument of answer.BadRequest and answer.ParamError (a
// 400), and what fiberCode names fiber's statuses; a constant's value is read where it is declared.
func scanCodes(t *testing.T) map[string]*sourceCode {
	t.Helper()
	fset, files := parseModule(t)
	consts, literals := map[string]string{}, map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if i < len(n.Values) {
						if s, ok := stringLit(n.Values[i]); ok {
							consts[name.Name] = s
						}
					}
				}
			case *ast.BasicLit:
				if s, ok := stringLit(n); ok {
					literals[s] = true
				}
			}
			return true
		})
	}
	codes := map[string]*sourceCode{}
	add := func(code string, status int, pos token.Pos) {
		c := codes[code]
		if c == nil {
			c = &sourceCode{}
			codes[code] = c
		}
		if !slices.Contains(c.statuses, status) {
			c.statuses = append(c.statuses, status)
		}
		p := fset.Position(pos)
		c.at = append(c.at, filepath.Base(p.Filename)+":"+strconv.Itoa(p.Line))
	}
	dynamicSeen := map[string]bool{}
	for _, f := range files {
		pkg := f.Name.Name
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			where := pkg + "." + fn.Name.Name
			code := func(e ast.Expr, status int) {
				if s, ok := stringLit(e); ok {
					add(s, status, e.Pos())
					return
				}
				if s, ok := consts[identName(e)]; ok {
					add(s, status, e.Pos())
					return
				}
				if call, ok := e.(*ast.CallExpr); ok && identName(call.Fun) == "fiberCode" {
					return // read below, from fiberCode itself
				}
				list, ok := dynamicCodes[where]
				if !ok {
					t.Errorf("%s: a code the scan cannot read (%s); list what it makes in dynamicCodes",
						fset.Position(e.Pos()), where)
					return
				}
				dynamicSeen[where] = true
				for _, c := range list {
					add(c, status, e.Pos())
				}
			}
			switch where {
			case "server.fiberCode":
				scanFiberCode(fn, add)
				continue
			case "answer.BadRequest", "answer.ParamError":
				continue // their callers name the code
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					if identName(n.Type) != "Problem" {
						return true
					}
					var codeExpr ast.Expr
					status := 0
					for _, el := range n.Elts {
						kv, ok := el.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						switch identName(kv.Key) {
						case "Code":
							codeExpr = kv.Value
						case "Status":
							status = httpStatus(identName(kv.Value))
						}
					}
					if codeExpr != nil {
						code(codeExpr, status)
					}
				case *ast.CallExpr:
					switch identName(n.Fun) {
					case "BadRequest", "ParamError":
						if len(n.Args) > 0 {
							code(n.Args[0], http.StatusBadRequest)
						}
					}
				}
				return true
			})
		}
	}
	for where, list := range dynamicCodes {
		if !dynamicSeen[where] {
			t.Errorf("dynamicCodes lists %s, which makes no code the scan cannot read", where)
		}
		for _, c := range list {
			if _, value, _ := strings.Cut(c, "_"); !literals[value] {
				t.Errorf("dynamicCodes: %s (%s) is made from %q, which the source never writes", c, where, value)
			}
		}
	}
	return codes
}

// scanFiberCode reads fiberCode's switch: each case's status and the code it returns; the codes
// returned after the switch stand for any other status (0).
func scanFiberCode(fn *ast.FuncDecl, add func(string, int, token.Pos)) {
	for _, stmt := range fn.Body.List {
		switch s := stmt.(type) {
		case *ast.SwitchStmt:
			for _, cc := range s.Body.List {
				clause := cc.(*ast.CaseClause)
				for _, r := range clause.Body {
					ret, ok := r.(*ast.ReturnStmt)
					if !ok || len(ret.Results) != 1 {
						continue
					}
					code, _ := stringLit(ret.Results[0])
					for _, e := range clause.List {
						add(code, httpStatus(identName(e)), e.Pos())
					}
				}
			}
		default:
			ast.Inspect(stmt, func(n ast.Node) bool {
				if ret, ok := n.(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
					if code, ok := stringLit(ret.Results[0]); ok {
						add(code, 0, ret.Pos())
					}
				}
				return true
			})
		}
	}
}

// httpStatus is the status a constant named StatusXxx (net/http's, fiber's) stands for, by its
// name; 0 when the name is not one.
func httpStatus(name string) int {
	want, ok := strings.CutPrefix(name, "Status")
	if !ok {
		return 0
	}
	letters := regexp.MustCompile(`[^A-Za-z]`)
	for code := 100; code < 600; code++ {
		if text := http.StatusText(code); text != "" && letters.ReplaceAllString(text, "") == want {
			return code
		}
	}
	return 0
}

// identName is the name of an identifier or of a selector's last part (answer.Problem: Problem),
// through a pointer or address; "" for anything else.
func identName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.StarExpr:
		return identName(e.X)
	case *ast.UnaryExpr:
		return identName(e.X)
	}
	return ""
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// markdownTable is the rows of the first table with header after the heading line in path, each
// as its cells (trimmed; "|" inside backticks is not a separator).
func markdownTable(t *testing.T, path, heading, header string) [][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		t.Fatalf("%s: no heading %q", path, heading)
	}
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "## ") && lines[i] != heading {
			break
		}
		if lines[i] != header {
			continue
		}
		var rows [][]string
		for _, l := range lines[i+2:] {
			if !strings.HasPrefix(l, "|") {
				break
			}
			rows = append(rows, cells(l))
		}
		return rows
	}
	t.Fatalf("%s: no table %q under %q", path, header, heading)
	return nil
}

// cells splits a table row at the pipes outside backticks.
func cells(row string) []string {
	var out []string
	var b strings.Builder
	code := false
	for _, r := range strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|") {
		switch {
		case r == '`':
			code = !code
		case r == '|' && !code:
			out = append(out, strings.TrimSpace(b.String()))
			b.Reset()
			continue
		}
		b.WriteRune(r)
	}
	return append(out, strings.TrimSpace(b.String()))
}

// backticked are the `code spans` of a cell.
func backticked(cell string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
