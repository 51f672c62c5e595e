package retrieval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"toolrouter/bench/dataset"
	"toolrouter/inventory"
	"toolrouter/retrieve"
	"toolrouter/retrieve/retrievetest"
)

// Pool is an inventory to rank: servers of tools with real schemas, and labeled queries.
type Pool struct {
	Name    string
	Servers []Server
	Queries []Query
}

// Server is one in-process MCP server of a pool.
type Server struct {
	Name    string `json:"name"`
	Purpose string `json:"purpose"`
	// Builtin serves the sidecar's own built-in server of this name instead of Tools.
	Builtin bool   `json:"builtin,omitempty"`
	Tools   []Tool `json:"tools,omitempty"`
}

// Tool is one tool as its server lists it.
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"input_schema"`
}

// Query is a real query and the qualified name of the tool that answers it ("" when unlabeled).
type Query struct {
	Text string
	Gold string
}

// Tools counts the pool's tools, those of built-in servers not included.
func (p *Pool) Tools() int {
	n := 0
	for _, s := range p.Servers {
		n += len(s.Tools)
	}
	return n
}

// bfclServer and bfclPurpose name the one server of the BFCL pool.
const (
	bfclServer  = "bfcl"
	bfclPurpose = "Functions from the Berkeley Function Calling Leaderboard."
)

// emptySchema is the input schema of a tool without parameters (MetaTool's plugins).
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// MetaTool returns MetaTool's 199 tools on one server, as the accuracy benchmark serves them, with
// every labeled row of csvPath (Query,Tool) as a query.
func MetaTool(toolsPath, csvPath string) (*Pool, error) {
	ds, err := dataset.LoadMetaToolSelection("metatool", csvPath, toolsPath, 0, 0)
	if err != nil {
		return nil, err
	}
	p := &Pool{Name: PoolMetaTool}
	if len(ds.Cases) == 0 {
		return nil, fmt.Errorf("%s: no queries", csvPath)
	}
	ts := ds.Cases[0].Toolset
	s := Server{Name: ts.Server, Purpose: ts.Purpose}
	for _, f := range ts.Functions {
		s.Tools = append(s.Tools, Tool{Name: f.Name, Description: f.Description, Schema: f.Schema})
	}
	p.Servers = []Server{s}
	for _, c := range ds.Cases {
		p.Queries = append(p.Queries, Query{Text: c.Query, Gold: c.Answers[0].Calls[0].Name})
	}
	return p, nil
}

// function is one BFCL function with its parameters as JSON Schema.
type function struct {
	original, description string
	schema                json.RawMessage
}

func functionKey(name, description string) string { return name + "\x00" + description }

// bfclFunctions returns every distinct function of bfclDir/*.json, a function being a name and a
// description (some names come with several), with the parameters of its first definition in file
// order (files sorted), as retrievetest.Tools reads them.
func bfclFunctions(bfclDir string) ([]function, error) {
	files, err := filepath.Glob(filepath.Join(bfclDir, "*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no BFCL question files in %s", bfclDir)
	}
	slices.Sort(files)
	var out []function
	seen := map[string]bool{}
	for _, file := range files {
		err := eachLine(file, func(line []byte) error {
			var r struct {
				Function []struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				return err
			}
			for _, f := range r.Function {
				key := functionKey(f.Name, f.Description)
				if f.Name == "" || seen[key] {
					continue
				}
				seen[key] = true
				schema, err := dataset.ConvertSchema(f.Parameters)
				if err != nil {
					return fmt.Errorf("function %s: %w", f.Name, err)
				}
				out = append(out, function{original: f.Name, description: f.Description, schema: schema})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// BFCL returns every distinct function of bfclDir's question files (see bfclFunctions) on one
// server, and the queries of the simple and multiple categories, each labeled with its one
// expected function: by name, and by the record's description where a name has several.
func BFCL(bfclDir string) (*Pool, error) {
	fns, err := bfclFunctions(bfclDir)
	if err != nil {
		return nil, err
	}
	s := Server{Name: bfclServer, Purpose: bfclPurpose}
	names := mcpNames(fns)
	byKey := make(map[string]string, len(fns))
	for i, f := range fns {
		s.Tools = append(s.Tools, Tool{Name: names[i], Description: f.description, Schema: f.schema})
		byKey[functionKey(f.original, f.description)] = inventory.Qualify(bfclServer, names[i])
	}
	p := &Pool{Name: PoolBFCL, Servers: []Server{s}}
	for _, file := range []string{"BFCL_v4_simple_python.json", "BFCL_v4_multiple.json"} {
		ds, err := dataset.LoadBFCL(file, filepath.Join(bfclDir, file), filepath.Join(bfclDir, "possible_answer", file))
		if err != nil {
			return nil, err
		}
		for _, c := range ds.Cases {
			if len(c.Answers) != 1 || len(c.Answers[0].Calls) != 1 {
				return nil, fmt.Errorf("%s %s: want one expected call", file, c.ID)
			}
			want := c.Answers[0].Calls[0].Name
			i := slices.IndexFunc(c.Toolset.Functions, func(f dataset.Function) bool { return c.Toolset.Qualified(f) == want })
			f := c.Toolset.Functions[i]
			gold := byKey[functionKey(f.Original, f.Description)]
			if gold == "" {
				return nil, fmt.Errorf("%s %s: %s is not in the pool", file, c.ID, want)
			}
			p.Queries = append(p.Queries, Query{Text: c.Query, Gold: gold})
		}
	}
	return p, nil
}

// Real is the real tools of bench/data with their schemas and the real queries that go with them,
// from which Scale pools are made.
type Real struct {
	tools []retrieve.Doc
	// schemas holds the BFCL functions' schemas by name and description; a tool without one is a
	// MetaTool plugin, which takes no parameters.
	schemas map[string]json.RawMessage
	queries []Query
}

// LoadReal reads the tools (retrievetest.Tools: BFCL's functions and MetaTool's plugins) and the
// queries (retrievetest.Queries: BFCL simple and multiple, MetaTool's sample) under dataDir.
func LoadReal(dataDir string) (*Real, error) {
	tools, err := retrievetest.Tools(dataDir)
	if err != nil {
		return nil, err
	}
	fns, err := bfclFunctions(filepath.Join(dataDir, "bfcl"))
	if err != nil {
		return nil, err
	}
	r := &Real{tools: tools, schemas: make(map[string]json.RawMessage, len(fns))}
	for _, f := range fns {
		r.schemas[functionKey(f.original, f.description)] = f.schema
	}
	qs, err := retrievetest.Queries(dataDir, tools)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		r.queries = append(r.queries, Query{Text: q.Query})
	}
	return r, nil
}

// Queries returns the real queries.
func (r *Real) Queries() []Query { return r.queries }

// Scale returns n tools made from the real ones by retrievetest.Pool (a fixed shuffle, repeated on
// renamed servers of 20 tools), each with its real schema, and the real queries, unlabeled (a
// pool may hold several copies of a tool).
func (r *Real) Scale(n int) *Pool {
	p := &Pool{Name: fmt.Sprintf("%d tools", n), Queries: r.queries}
	at := map[string]int{}
	var fns [][]function
	for _, d := range retrievetest.Pool(r.tools, n) {
		i, ok := at[d.Server]
		if !ok {
			i = len(p.Servers)
			at[d.Server] = i
			p.Servers = append(p.Servers, Server{Name: d.Server, Purpose: d.Purpose})
			fns = append(fns, nil)
		}
		schema, ok := r.schemas[functionKey(d.Name, d.Description)]
		if !ok {
			schema = emptySchema
		}
		fns[i] = append(fns[i], function{original: d.Name, description: d.Description, schema: schema})
	}
	for i := range p.Servers {
		names := mcpNames(fns[i])
		for j, f := range fns[i] {
			p.Servers[i].Tools = append(p.Servers[i].Tools, Tool{Name: names[j], Description: f.description, Schema: f.schema})
		}
	}
	return p
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// mcpNames names functions as MCP tools, as the accuracy benchmark does (dataset's toolNames):
// characters outside [A-Za-z0-9_-] become "_", and a name that collides gets a numeric suffix.
func mcpNames(fns []function) []string {
	out := make([]string, len(fns))
	used := map[string]bool{}
	for i, f := range fns {
		base := unsafeName.ReplaceAllString(f.original, "_")
		name := base
		for k := 2; used[name]; k++ {
			name = fmt.Sprintf("%s_%d", base, k)
		}
		used[name] = true
		out[i] = name
	}
	return out
}

// eachLine calls fn with each non-blank line of a JSON Lines file.
func eachLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if ferr := fn(line); ferr != nil {
				return fmt.Errorf("reading %s line %d: %w", filepath.Base(path), n, ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", filepath.Base(path), err)
		}
	}
}
