package builtin

import (
	"fmt"
	"math"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// numberResult is the structured content of every calculator result.
type numberResult struct {
	Result float64 `json:"result"`
}

var numberOutput = objectSchema([]string{"result"}, map[string]any{
	"result": map[string]any{"type": "number", "description": "The computed value."},
})

// numeric is a calculator tool that maps numeric parameters to a number.
type numeric struct {
	name, title, description string
	params                   []property
	fn                       func(x []float64) (float64, error)
}

func num(name, description string) property {
	return property{name: name, kind: "number", description: description, required: true}
}

var numericTools = []numeric{
	{
		name: "add", title: "Add",
		description: "Add two numbers and return a + b.",
		params:      []property{num("a", "The first addend."), num("b", "The second addend.")},
		fn:          func(x []float64) (float64, error) { return x[0] + x[1], nil },
	},
	{
		name: "subtract", title: "Subtract",
		description: "Subtract b from a and return a - b.",
		params:      []property{num("a", "The number to subtract from (minuend)."), num("b", "The number to subtract (subtrahend).")},
		fn:          func(x []float64) (float64, error) { return x[0] - x[1], nil },
	},
	{
		name: "multiply", title: "Multiply",
		description: "Multiply two numbers and return a * b.",
		params:      []property{num("a", "The first factor."), num("b", "The second factor.")},
		fn:          func(x []float64) (float64, error) { return x[0] * x[1], nil },
	},
	{
		name: "divide", title: "Divide",
		description: "Divide a by b and return a / b. Dividing by zero is an error.",
		params:      []property{num("a", "The dividend (numerator)."), num("b", "The divisor (denominator); must not be zero.")},
		fn:          func(x []float64) (float64, error) { return divide(x[0], x[1]) },
	},
	{
		name: "power", title: "Power",
		description: "Raise base to the power exponent and return base ^ exponent. Zero to a negative power and a negative base with a fractional exponent are errors.",
		params:      []property{num("base", "The number to raise."), num("exponent", "The power to raise base to; may be negative or fractional.")},
		fn:          func(x []float64) (float64, error) { return power(x[0], x[1]) },
	},
	{
		name: "sqrt", title: "Square root",
		description: "Return the non-negative square root of x. A negative x is an error.",
		params:      []property{num("x", "The number to take the square root of; must not be negative.")},
		fn:          func(x []float64) (float64, error) { return squareRoot(x[0]) },
	},
	{
		name: "nth_root", title: "Nth root",
		description: "Return the real n-th root of x, e.g. n = 3 for a cube root. Exact integer roots are returned exactly (nth_root(27, 3) = 3). A negative x needs an odd integer n.",
		params:      []property{num("x", "The number to take the root of (radicand)."), num("n", "The degree of the root; must not be zero.")},
		fn:          func(x []float64) (float64, error) { return nthRoot(x[0], x[1]) },
	},
}

var exprParams = []property{{
	name: "expression", kind: "string", required: true,
	description: "The arithmetic expression, at most 1000 characters, e.g. \"2 * (3 + 4) ^ 2 / sqrt(16)\".",
}}

const exprDescription = "Evaluate an arithmetic expression and return its value. " +
	"Numbers: 42, 3.14, .5, 1e3, 2.5E-3. " +
	"Operators, loosest first: + and -; * / and % (remainder, sign of the dividend); unary + and -; ^ or ** (power, right-associative, so 2^3^2 = 512 and -2^2 = -4). " +
	"Parentheses group. Constants: pi, e. " +
	"Functions (angles in radians): sqrt, abs, ln, log (base 10), exp, sin, cos, tan, floor, ceil, round (half away from zero), min and max (one or more arguments, comma-separated). " +
	"There is no implicit multiplication: write 2*pi, not 2pi. " +
	"Errors (syntax, division by zero, unknown function, a non-finite result, nesting deeper than 100) name the position, counted in characters from 1."

// calculatorTools returns the calculator's tools.
func calculatorTools() []server.ServerTool {
	tools := make([]server.ServerTool, 0, len(numericTools)+1)
	for _, nt := range numericTools {
		tools = append(tools, server.ServerTool{
			Tool:    newTool(nt.name, nt.title, nt.description, nt.params, numberOutput),
			Handler: toolHandler(nt.call, names(nt.params)...),
		})
	}
	tools = append(tools, server.ServerTool{
		Tool:    newTool("evaluate", "Evaluate expression", exprDescription, exprParams, numberOutput),
		Handler: toolHandler(evaluate, names(exprParams)...),
	})
	return tools
}

func (nt numeric) call(a args) (*mcp.CallToolResult, error) {
	x := make([]float64, len(nt.params))
	for i, p := range nt.params {
		v, err := a.number(p.name)
		if err != nil {
			return nil, err
		}
		x[i] = v
	}
	v, err := nt.fn(x)
	if err != nil {
		return nil, err
	}
	return numberToolResult(v)
}

func evaluate(a args) (*mcp.CallToolResult, error) {
	src, err := a.str("expression", true, "")
	if err != nil {
		return nil, err
	}
	v, err := evalExpr(src)
	if err != nil {
		return nil, fmt.Errorf("cannot evaluate expression: %w", err)
	}
	return numberToolResult(v)
}

// numberToolResult reports v as text and as {"result": v}.
func numberToolResult(v float64) (*mcp.CallToolResult, error) {
	if err := finite(v); err != nil {
		return nil, err
	}
	v += 0 // -0 → 0
	return mcp.NewToolResultStructured(numberResult{Result: v}, formatNumber(v)), nil
}

// Arithmetic shared by the tools and the expression evaluator. Errors are
// *exprError values without a position; the evaluator adds one.

// finite fails for NaN and infinities.
func finite(v float64) error {
	switch {
	case math.IsNaN(v):
		return &exprError{kind: errNotFinite, msg: "the result is not a real number"}
	case math.IsInf(v, 0):
		return &exprError{kind: errNotFinite, msg: "the result is too large (overflow)"}
	}
	return nil
}

func divide(a, b float64) (float64, error) {
	if b == 0 {
		return 0, &exprError{kind: errDivisionByZero, msg: "division by zero"}
	}
	return a / b, nil
}

func modulo(a, b float64) (float64, error) {
	if b == 0 {
		return 0, &exprError{kind: errDivisionByZero, msg: "modulo by zero"}
	}
	return math.Mod(a, b), nil
}

func power(base, exponent float64) (float64, error) {
	switch {
	case base == 0 && exponent < 0:
		return 0, &exprError{kind: errDivisionByZero, msg: "division by zero: zero raised to a negative power"}
	case base < 0 && exponent != math.Trunc(exponent):
		return 0, &exprError{kind: errDomain, msg: fmt.Sprintf("a negative base (%s) raised to a fractional power (%s) is not a real number", formatNumber(base), formatNumber(exponent))}
	}
	return math.Pow(base, exponent), nil
}

func squareRoot(x float64) (float64, error) {
	if x < 0 {
		return 0, &exprError{kind: errDomain, msg: fmt.Sprintf("square root of a negative number (%s)", formatNumber(x))}
	}
	return math.Sqrt(x), nil
}

// nthRoot returns the real n-th root of x. For an integer n, a result within
// rounding of an integer r with r^n == x is returned as exactly r.
func nthRoot(x, n float64) (float64, error) {
	isInt := n == math.Trunc(n)
	switch {
	case n == 0:
		return 0, &exprError{kind: errDomain, msg: "the degree n of a root must not be zero"}
	case x == 0 && n < 0:
		return 0, &exprError{kind: errDivisionByZero, msg: "division by zero: a root of negative degree of zero"}
	case x < 0 && (!isInt || math.Mod(n, 2) == 0):
		return 0, &exprError{kind: errDomain, msg: fmt.Sprintf("a negative number (%s) has no real root of degree %s; only odd integer degrees are allowed", formatNumber(x), formatNumber(n))}
	case x < 0:
		r, err := nthRoot(-x, n)
		return -r, err
	}
	var r float64
	switch n {
	case 2:
		r = math.Sqrt(x)
	case 3:
		r = math.Cbrt(x)
	default:
		r = math.Pow(x, 1/n)
	}
	if isInt {
		if c := math.Round(r); c != r && math.Pow(c, n) == x {
			r = c
		}
	}
	return r, nil
}
