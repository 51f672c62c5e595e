// Package bfcltools serves real tools to tests and to the benchmark (go run ./bench cost): the
// distinct functions of BFCL's simple-python set (bench/data/bfcl), with their schemas converted to
// JSON Schema, as one in-process mcp-go server of any size. Functions and Server fail the test
// they are given; Load and NewServer return the error.
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

// Load reads the distinct functions of BFCL's simple-python set, in file order; dots in names
// become underscores.
func Load() ([]Function, error) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "bench", "data", "bfcl", "BFCL_v4_simple_python.json")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
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
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		fn := rec.Function[0]
		name := strings.ReplaceAll(fn.Name, ".", "_")
		if seen[name] {
			continue
		}
		seen[name] = true
		schema, err := dataset.ConvertSchema(fn.Parameters)
		if err != nil {
			return nil, fmt.Errorf("converting the schema of %s: %w", fn.Name, err)
		}
		out = append(out, Function{Name: name, Description: fn.Description, Schema: schema, Question: rec.Question[0][0].Content})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, nil
}

// Server is an mcp-go server named "big" with n real tools: the functions, repeated under varied
// names (name, name_v2, name_v3, …) until there are n. Each tool answers "ran NAME". A file that
// cannot be read fails the test.
func Server(tb testing.TB, n int) (*server.MCPServer, []Function) {
	tb.Helper()
	s, fns, err := NewServer(n)
	if err != nil {
		tb.Fatal(err)
	}
	return s, fns
}

// NewServer is Server outside a test: it returns the error instead of failing a test.
func NewServer(n int) (*server.MCPServer, []Function, error) {
	fns, err := Load()
	if err != nil {
		return nil, nil, err
	}
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
	return s, fns, nil
}
