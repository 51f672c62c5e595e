package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// args holds the arguments of one tool call.
type args map[string]any

// readArgs returns the arguments of req, rejecting a payload that is not an
// object and any parameter not in accepted.
func readArgs(req mcp.CallToolRequest, accepted []string) (args, error) {
	var a args
	switch raw := req.Params.Arguments.(type) {
	case nil:
		a = args{}
	case map[string]any:
		a = raw
	default:
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", jsonType(raw))
	}
	var unknown []string
	for name := range a {
		if !slices.Contains(accepted, name) {
			unknown = append(unknown, strconv.Quote(name))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		noun := "parameter"
		if len(unknown) > 1 {
			noun = "parameters"
		}
		return nil, fmt.Errorf("unknown %s %s (accepted: %s)",
			noun, strings.Join(unknown, ", "), strings.Join(accepted, ", "))
	}
	return a, nil
}

// number returns the required numeric parameter name. JSON numbers arrive as
// float64, or as json.Number from decoders that use UseNumber; Go callers may
// also pass integers. Strings are refused even when they hold digits.
func (a args) number(name string) (float64, error) {
	raw, ok := a[name]
	if !ok {
		return 0, fmt.Errorf("missing required parameter %q", name)
	}
	var v float64
	switch n := raw.(type) {
	case float64:
		v = n
	case float32:
		v = float64(n)
	case int:
		v = float64(n)
	case int32:
		v = float64(n)
	case int64:
		v = float64(n)
	case uint:
		v = float64(n)
	case uint32:
		v = float64(n)
	case uint64:
		v = float64(n)
	case json.Number:
		f, err := n.Float64()
		if err != nil {
			return 0, fmt.Errorf("parameter %q must be a number, got %q: %w", name, n.String(), err)
		}
		v = f
	case string:
		return 0, fmt.Errorf("parameter %q must be a number, got the string %q", name, n)
	default:
		return 0, fmt.Errorf("parameter %q must be a number, got %s", name, jsonType(raw))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("parameter %q must be a finite number", name)
	}
	return v, nil
}

// str returns the string parameter name, or def when it is absent, null or
// empty. A required parameter has no default and must be a non-empty string.
func (a args) str(name string, required bool, def string) (string, error) {
	raw, ok := a[name]
	if !ok || raw == nil {
		if required {
			return "", fmt.Errorf("missing required parameter %q", name)
		}
		return def, nil
	}
	s, ok := raw.(string)
	if !ok {
		return "", fmt.Errorf("parameter %q must be a string, got %s", name, jsonType(raw))
	}
	if strings.TrimSpace(s) == "" {
		if required {
			return "", fmt.Errorf("parameter %q must not be empty", name)
		}
		return def, nil
	}
	return s, nil
}

// jsonType names the JSON type of a decoded value, for error messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case float64, float32, int, int32, int64, uint, uint32, uint64, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

// formatNumber renders v compactly: integers in full up to 1e21 (the exact
// value of the float64, so 2^60 prints as 1152921504606846976), other numbers
// with the fewest digits that read back as v, in plain decimals from 1e-7 on
// and in exponent notation beyond that: "14", "0.1", "1e+21", "1.5e-08".
func formatNumber(v float64) string {
	abs := math.Abs(v)
	switch {
	case v == 0:
		return "0" // also for -0
	case abs < 1e21 && v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case abs >= 1e-7 && abs < 1e21:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// toolHandler adapts a function that returns a result or an error to an
// mcp-go handler: errors become tool error results, which the model can read
// and act on, rather than protocol errors.
func toolHandler(fn func(args) (*mcp.CallToolResult, error), accepted ...string) server.ToolHandlerFunc {
	return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, err := readArgs(req, accepted)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		res, err := fn(a)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return res, nil
	}
}

// property describes one parameter of a tool's input schema.
type property struct {
	name        string
	kind        string // JSON Schema type: "number" or "string"
	description string
	required    bool
	enum        []string
	def         string
}

// newTool builds a read-only tool whose input schema lists props in order,
// with a description for each, and refuses other properties.
func newTool(name, title, description string, props []property, output mcp.ToolOutputSchema) mcp.Tool {
	opts := []mcp.ToolOption{
		mcp.WithDescription(description),
		mcp.WithToolTitle(title),
		mcp.WithTitleAnnotation(title),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
		mcp.WithSchemaAdditionalProperties(false),
	}
	order := make([]string, 0, len(props))
	for _, p := range props {
		popts := []mcp.PropertyOption{mcp.Description(p.description)}
		if p.required {
			popts = append(popts, mcp.Required())
		}
		if len(p.enum) > 0 {
			popts = append(popts, mcp.Enum(p.enum...))
		}
		if p.def != "" {
			popts = append(popts, mcp.DefaultString(p.def))
		}
		if p.kind == "number" {
			opts = append(opts, mcp.WithNumber(p.name, popts...))
		} else {
			opts = append(opts, mcp.WithString(p.name, popts...))
		}
		order = append(order, p.name)
	}
	tool := mcp.NewTool(name, opts...)
	tool.InputSchema.PropertyOrder = order
	tool.OutputSchema = output
	return tool
}

// names returns the names of props, for readArgs.
func names(props []property) []string {
	out := make([]string, len(props))
	for i, p := range props {
		out[i] = p.name
	}
	return out
}

// objectSchema is an output schema for an object with the given properties,
// all of them required.
func objectSchema(order []string, props map[string]any) mcp.ToolOutputSchema {
	return mcp.ToolOutputSchema{
		Type:          "object",
		Properties:    props,
		Required:      order,
		PropertyOrder: order,
	}
}
