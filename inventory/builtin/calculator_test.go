package builtin

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestCalculatorTools(t *testing.T) {
	c := connect(t, "calculator", nil)
	tests := []struct {
		name string
		tool string
		args map[string]any
		want float64 // when wantErr is ""
		text string  // the text result, or the error message
		err  bool
	}{
		{name: "add", tool: "add", args: map[string]any{"a": 2, "b": 3}, want: 5, text: "5"},
		{name: "add decimals", tool: "add", args: map[string]any{"a": 0.1, "b": 0.2}, want: 0.30000000000000004, text: "0.30000000000000004"},
		{name: "add negative", tool: "add", args: map[string]any{"a": -2.5, "b": 1}, want: -1.5, text: "-1.5"},
		{name: "subtract", tool: "subtract", args: map[string]any{"a": 10, "b": 4}, want: 6, text: "6"},
		{name: "subtract to negative zero", tool: "subtract", args: map[string]any{"a": math.Copysign(0, -1), "b": 0}, want: 0, text: "0"},
		{name: "multiply", tool: "multiply", args: map[string]any{"a": 1e6, "b": 3}, want: 3e6, text: "3000000"},
		{name: "multiply to 1e21", tool: "multiply", args: map[string]any{"a": 1e20, "b": 10}, want: 1e21, text: "1e+21"},
		{name: "multiply overflow", tool: "multiply", args: map[string]any{"a": 1e300, "b": 1e300}, text: "the result is too large (overflow)", err: true},
		{name: "divide", tool: "divide", args: map[string]any{"a": 7, "b": 2}, want: 3.5, text: "3.5"},
		{name: "divide by zero", tool: "divide", args: map[string]any{"a": 1, "b": 0}, text: "division by zero", err: true},
		{name: "power", tool: "power", args: map[string]any{"base": 2, "exponent": 10}, want: 1024, text: "1024"},
		{name: "fractional power", tool: "power", args: map[string]any{"base": 9, "exponent": 0.5}, want: 3, text: "3"},
		{name: "negative power", tool: "power", args: map[string]any{"base": 2, "exponent": -2}, want: 0.25, text: "0.25"},
		{name: "zero to negative power", tool: "power", args: map[string]any{"base": 0, "exponent": -1}, text: "division by zero: zero raised to a negative power", err: true},
		{name: "negative base fractional power", tool: "power", args: map[string]any{"base": -8, "exponent": 0.5}, text: "a negative base (-8) raised to a fractional power (0.5) is not a real number", err: true},
		{name: "power overflow", tool: "power", args: map[string]any{"base": 10, "exponent": 400}, text: "the result is too large (overflow)", err: true},
		{name: "sqrt", tool: "sqrt", args: map[string]any{"x": 2}, want: math.Sqrt2, text: "1.4142135623730951"},
		{name: "sqrt of negative", tool: "sqrt", args: map[string]any{"x": -1}, text: "square root of a negative number (-1)", err: true},
		{name: "cube root", tool: "nth_root", args: map[string]any{"x": 27, "n": 3}, want: 3, text: "3"},
		{name: "cube root of negative", tool: "nth_root", args: map[string]any{"x": -27, "n": 3}, want: -3, text: "-3"},
		{name: "exact tenth root", tool: "nth_root", args: map[string]any{"x": 1024, "n": 10}, want: 2, text: "2"},
		{name: "fifth root of 243", tool: "nth_root", args: map[string]any{"x": 243, "n": 5}, want: 3, text: "3"},
		{name: "negative degree", tool: "nth_root", args: map[string]any{"x": 0.25, "n": -2}, want: 2, text: "2"},
		{name: "inexact root", tool: "nth_root", args: map[string]any{"x": 2, "n": 4}, want: math.Pow(2, 0.25), text: "1.189207115002721"},
		{name: "even root of negative", tool: "nth_root", args: map[string]any{"x": -16, "n": 4}, text: "a negative number (-16) has no real root of degree 4; only odd integer degrees are allowed", err: true},
		{name: "zero degree", tool: "nth_root", args: map[string]any{"x": 8, "n": 0}, text: "the degree n of a root must not be zero", err: true},
		{name: "evaluate", tool: "evaluate", args: map[string]any{"expression": "2 * (3 + 4) ^ 2 / sqrt(16)"}, want: 24.5, text: "24.5"},
		{name: "evaluate large integer", tool: "evaluate", args: map[string]any{"expression": "2^60"}, want: math.Pow(2, 60), text: "1152921504606846976"},
		{name: "evaluate beyond 1e21", tool: "evaluate", args: map[string]any{"expression": "2^70"}, want: math.Pow(2, 70), text: "1.1805916207174113e+21"},
		{name: "evaluate division by zero", tool: "evaluate", args: map[string]any{"expression": "1 / (2 - 2)"}, text: "cannot evaluate expression: division by zero at position 3", err: true},
		{name: "evaluate syntax error", tool: "evaluate", args: map[string]any{"expression": "2 +"}, text: "cannot evaluate expression: syntax error: unexpected end of expression at position 4", err: true},
		{name: "evaluate unknown function", tool: "evaluate", args: map[string]any{"expression": "cot(1)"}, text: `cannot evaluate expression: unknown function "cot" (functions: ` + functionNames + ") at position 1", err: true},
		{name: "evaluate empty", tool: "evaluate", args: map[string]any{"expression": ""}, text: `parameter "expression" must not be empty`, err: true},
		{name: "evaluate number", tool: "evaluate", args: map[string]any{"expression": 5}, text: `parameter "expression" must be a string, got a number`, err: true},
		{name: "numeric string", tool: "add", args: map[string]any{"a": "2", "b": 3}, text: `parameter "a" must be a number, got the string "2"`, err: true},
		{name: "boolean", tool: "sqrt", args: map[string]any{"x": true}, text: `parameter "x" must be a number, got a boolean`, err: true},
		{name: "null", tool: "add", args: map[string]any{"a": 1, "b": nil}, text: `parameter "b" must be a number, got null`, err: true},
		{name: "missing parameter", tool: "divide", args: map[string]any{"a": 1}, text: `missing required parameter "b"`, err: true},
		{name: "no arguments", tool: "add", args: nil, text: `missing required parameter "a"`, err: true},
		{name: "unknown parameter", tool: "add", args: map[string]any{"a": 1, "b": 2, "c": 3, "A": 4}, text: `unknown parameters "A", "c" (accepted: a, b)`, err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, c, tc.tool, tc.args)
			if got.isError != tc.err {
				t.Fatalf("got isError %v (%q), want %v", got.isError, got.text, tc.err)
			}
			if got.text != tc.text {
				t.Errorf("got text %q, want %q", got.text, tc.text)
			}
			if tc.err {
				return
			}
			if r, ok := got.structured["result"].(float64); !ok || r != tc.want {
				t.Errorf("got structured %v, want {result: %v}", got.structured, tc.want)
			}
		})
	}
}

// TestCalculatorJSONNumber calls a handler directly: a client that decodes
// arguments with json.Decoder.UseNumber hands over json.Number values, which
// the wire never produces.
func TestCalculatorJSONNumber(t *testing.T) {
	srv, err := New("calculator", nil)
	if err != nil {
		t.Fatal(err)
	}
	tool := srv.GetTool("multiply")
	if tool == nil {
		t.Fatal("got no multiply tool, want one")
	}
	tests := []struct {
		name string
		args any
		text string
		err  bool
	}{
		{name: "json.Number", args: map[string]any{"a": json.Number("1.5"), "b": json.Number("4")}, text: "6"},
		{name: "Go integers", args: map[string]any{"a": int64(6), "b": 7}, text: "42"},
		{name: "malformed json.Number", args: map[string]any{"a": json.Number("x1"), "b": 1}, text: `parameter "a" must be a number, got "x1": strconv.ParseFloat: parsing "x1": invalid syntax`, err: true},
		{name: "NaN", args: map[string]any{"a": math.NaN(), "b": 1}, text: `parameter "a" must be a finite number`, err: true},
		{name: "array arguments", args: []any{1, 2}, text: "arguments must be a JSON object, got an array", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := mcp.CallToolRequest{}
			req.Params.Name = "multiply"
			req.Params.Arguments = tc.args
			res, err := tool.Handler(t.Context(), req)
			if err != nil {
				t.Fatalf("got Go error %v, want a tool result", err)
			}
			got := outcomeOf(t, res)
			if got.isError != tc.err || got.text != tc.text {
				t.Errorf("got %q (isError %v), want %q (isError %v)", got.text, got.isError, tc.text, tc.err)
			}
		})
	}
}
