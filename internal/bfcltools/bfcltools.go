// Package bfcltools serves real tools to tests: the distinct functions of BFCL's simple-python set
// (bench/data/bfcl), with their schemas converted to JSON Schema, as one in-process mcp-go server
// of any size.
package bfcltools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/bench/dataset"
)

// Function is one distinct BFCL function and the first question asked of it.
type Function struct {
	Name, Description string
	Schema            json.RawMessage
	Question          string
}

// Functions reads the distinct functions of BFCL's simple-python set, in file order; dots in names
// become underscores.
func Functions(tb testing.TB) []Function {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	f, err := os.Open(filepath.Join(filepath.Dir(file), "..", "..", "bench", "data", "bfcl", "BFCL_v4_simple_python.json"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []Function
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Question [][]struct{ Content string } `json:"question"`
			Function []struct {
				Name, Description string
				Parameters        json.RawMessage
			} `json:"function"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			tb.Fatal(err)
		}
		fn := rec.Function[0]
		name := strings.ReplaceAll(fn.Name, ".", "_")
		if seen[name] {
			continue
		}
		seen[name] = true
		schema, err := dataset.ConvertSchema(fn.Parameters)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, Function{Name: name, Description: fn.Description, Schema: schema, Question: rec.Question[0][0].Content})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// Server is an mcp-go server named "big" with n real tools: the functions, repeated under varied
// names (name, name_v2, name_v3, …) until there are n. Each tool answers "ran NAME".
func Server(tb testing.TB, n int) (*server.MCPServer, []Function) {
	tb.Helper()
	fns := Functions(tb)
	s := server.NewMCPServer("big", "1.0.0", server.WithToolCapabilities(false))
	all := make([]server.ServerTool, 0, n)
	for i := range n {
		fn := fns[i%len(fns)]
		name := fn.Name
		if r := i / len(fns); r > 0 {
			name = fmt.Sprintf("%s_v%d", name, r+1)
		}
		all = append(all, server.ServerTool{
			Tool: mcp.NewToolWithRawSchema(name, fn.Description, fn.Schema),
			Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ran " + name), nil
			},
		})
	}
	s.AddTools(all...)
	return s, fns
}
