package builtin

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestEvalExpr(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want float64
	}{
		{"integer", "42", 42},
		{"decimal", "3.25", 3.25},
		{"leading point", ".5 + .25", 0.75},
		{"trailing point", "2. * 3", 6},
		{"exponent", "1e3", 1000},
		{"exponent with sign", "2.5E-3 * 1e+3", 2.5},
		{"whitespace", " \t7 \n", 7},
		{"mul before add", "2 + 3 * 4", 14},
		{"div before sub", "1 + 2 * 3 - 4 / 2", 5},
		{"parentheses", "(2 + 3) * 4", 20},
		{"nested parentheses", "((1 + 2) * (3 + 4)) / 7", 3},
		{"sub left-assoc", "10 - 4 - 3", 3},
		{"div left-assoc", "100 / 10 / 5", 2},
		{"power right-assoc", "2 ^ 3 ^ 2", 512},
		{"power before mul", "2 * 3 ^ 2", 18},
		{"double star power", "2 ** 10", 1024},
		{"unary minus", "-3 + 5", 2},
		{"unary minus binds looser than power", "-2 ^ 2", -4},
		{"parenthesised negative base", "(-2) ^ 2", 4},
		{"negative exponent", "2 ^ -1", 0.5},
		{"negative exponent chain", "2 ^ -1 ^ 2", 0.5},
		{"unary after operator", "2 * -3", -6},
		{"double unary", "--3", 3},
		{"unary plus", "+-3", -3},
		{"negated group", "-(1 + 2)", -3},
		{"remainder", "7 % 3", 1},
		{"remainder sign of dividend", "-7 % 3", -1},
		{"fractional remainder", "5.5 % 2", 1.5},
		{"negative zero", "-0", 0},
		{"pi", "pi", math.Pi},
		{"e", "e", math.E},
		{"case-insensitive", "PI + Sqrt(4)", math.Pi + 2},
		{"unicode operators", "3 × 4 ÷ 2 − 1", 5},
		{"unicode pi", "2*π", 2 * math.Pi},
		{"sqrt", "sqrt(16)", 4},
		{"abs", "abs(-3.5)", 3.5},
		{"ln", "ln(e)", 1},
		{"log base 10", "log(1000)", 3},
		{"exp", "exp(0)", 1},
		{"sin", "sin(pi / 2)", 1},
		{"cos", "cos(0)", 1},
		{"tan", "tan(0)", 0},
		{"floor", "floor(-1.5)", -2},
		{"ceil", "ceil(1.2)", 2},
		{"round half up", "round(2.5)", 3},
		{"round half away from zero", "round(-2.5)", -3},
		{"min variadic", "min(3, 1, 2)", 1},
		{"max single", "max(3)", 3},
		{"max of expressions", "max(1, 2 * 3, 2 ^ 2) * 2", 12},
		{"nested calls", "sqrt(abs(-16)) + floor(ln(exp(2.5)))", 6},
		{"100 nested parentheses", strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), 1},
		{"1000 characters", strings.Repeat("1+", 499) + "10", 509},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evalExpr(tc.src)
			if err != nil {
				t.Fatalf("evalExpr(%q): got error %v, want %v", tc.src, err, tc.want)
			}
			if got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
				t.Errorf("evalExpr(%q): got %v, want %v", tc.src, got, tc.want)
			}
		})
	}
}

func TestEvalExprErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		kind    error
		pos     int // 0: no position
		message string
	}{
		{"empty", "", errSyntax, 0, "syntax error: empty expression"},
		{"blank", "   ", errSyntax, 0, "syntax error: empty expression"},
		{"missing operand", "2 +", errSyntax, 4, "syntax error: unexpected end of expression at position 4"},
		{"two numbers", "2 3", errSyntax, 3, "syntax error: unexpected number 3 at position 3"},
		{"leading operator", "* 3", errSyntax, 1, `syntax error: unexpected "*" at position 1`},
		{"unclosed parenthesis", "(1 + 2", errSyntax, 1, `syntax error: "(" is never closed at position 1`},
		{"junk before close", "(1 + 2 3)", errSyntax, 8, `syntax error: unexpected number 3, expected ")" at position 8`},
		{"extra close", "1 + 2)", errSyntax, 6, `syntax error: unexpected ")" at position 6`},
		{"empty parentheses", "()", errSyntax, 2, `syntax error: unexpected ")" at position 2`},
		{"bad character", "2 $ 3", errSyntax, 3, `syntax error: unexpected character '$' at position 3`},
		{"position counts characters", "π + ×", errSyntax, 5, `syntax error: unexpected "*" at position 5`},
		{"dangling exponent", "2e", errSyntax, 2, `syntax error: unexpected name "e" at position 2`},
		{"no implicit multiplication", "2pi", errSyntax, 2, `syntax error: unexpected name "pi" at position 2`},
		{"two decimal points", "1.2.3", errSyntax, 4, "syntax error: unexpected number .3 at position 4"},
		{"lone point", "1 + .", errSyntax, 5, `syntax error: malformed number "." at position 5`},
		{"trailing comma", "max(1,)", errSyntax, 7, `syntax error: unexpected ")" at position 7`},
		{"comma outside call", "1, 2", errSyntax, 2, `syntax error: unexpected "," at position 2`},
		{"function without parentheses", "sqrt 4", errSyntax, 1, "syntax error: function sqrt needs parentheses, as in sqrt(x) at position 1"},
		{"constant called", "pi(2)", errSyntax, 1, "syntax error: pi is a constant, not a function at position 1"},
		{"division by zero", "1 / 0", errDivisionByZero, 3, "division by zero at position 3"},
		{"division by computed zero", "1 + 1 / (2 - 2)", errDivisionByZero, 7, "division by zero at position 7"},
		{"modulo by zero", "5 % 0", errDivisionByZero, 3, "modulo by zero at position 3"},
		{"zero to negative power", "0 ^ -1", errDivisionByZero, 3, "division by zero: zero raised to a negative power at position 3"},
		{"unknown function", "2 * foo(1)", errUnknownFunction, 5, `unknown function "foo" (functions: ` + functionNames + ") at position 5"},
		{"unknown name", "1 + x", errUnknownName, 5, `unknown name "x" (constants: pi, e) at position 5`},
		{"too many arguments", "sqrt(1, 2)", errArity, 1, "sqrt takes exactly 1 argument, got 2 at position 1"},
		{"too few arguments", "min()", errArity, 1, "min takes at least 1 argument(s), got 0 at position 1"},
		{"sqrt of negative", "1 + sqrt(-4)", errDomain, 5, "square root of a negative number (-4) at position 5"},
		{"ln of zero", "ln(0)", errDomain, 1, "ln of a number that is not positive (0) at position 1"},
		{"log of negative", "log(-10)", errDomain, 1, "log of a number that is not positive (-10) at position 1"},
		{"fractional power of negative", "(-8) ^ (1/3)", errDomain, 6, "a negative base (-8) raised to a fractional power (0.3333333333333333) is not a real number at position 6"},
		{"power overflow", "10 ^ 400", errNotFinite, 4, "operator ^: the result is too large (overflow) at position 4"},
		{"product overflow", "1e300 * 1e300", errNotFinite, 7, "operator *: the result is too large (overflow) at position 7"},
		{"exp overflow", "exp(1000)", errNotFinite, 1, "exp(): the result is too large (overflow) at position 1"},
		{"number too large", "1e400", errNotFinite, 1, "number 1e400 is too large at position 1"},
		{"too long", strings.Repeat("1+", 500) + "1", errTooLong, 0, "expression is 1001 characters long; the limit is 1000"},
		{"too many parentheses", strings.Repeat("(", 101) + "1" + strings.Repeat(")", 101), errTooDeep, 101, "expression is nested more than 100 levels deep at position 101"},
		{"too many unary signs", strings.Repeat("-", 101) + "1", errTooDeep, 101, "expression is nested more than 100 levels deep at position 101"},
		{"too many calls", strings.Repeat("abs(", 101) + "1" + strings.Repeat(")", 101), errTooDeep, 401, "expression is nested more than 100 levels deep at position 401"},
		{"power chain too deep", "2" + strings.Repeat("^1", 101), errTooDeep, 202, "expression is nested more than 100 levels deep at position 202"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evalExpr(tc.src)
			if err == nil {
				t.Fatalf("evalExpr(%q): got %v, want an error", tc.src, got)
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("got error %v, want kind %v", err, tc.kind)
			}
			var ee *exprError
			if !errors.As(err, &ee) {
				t.Fatalf("got error %T, want *exprError", err)
			}
			if ee.pos != tc.pos {
				t.Errorf("got position %d, want %d", ee.pos, tc.pos)
			}
			if err.Error() != tc.message {
				t.Errorf("got message %q, want %q", err.Error(), tc.message)
			}
		})
	}
}

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		name string
		v    float64
		want string
	}{
		{"zero", 0, "0"},
		{"negative zero", math.Copysign(0, -1), "0"},
		{"integer", 14, "14"},
		{"negative integer", -3, "-3"},
		{"million", 1e6, "1000000"},
		{"large integer", 123456789012345678, "123456789012345680"},
		{"2^60 exactly", 1 << 60, "1152921504606846976"},
		{"just below 1e21", 1e20, "100000000000000000000"},
		{"negative large integer", -1e20 / 3, "-33333333333333331968"},
		{"1e21", 1e21, "1e+21"},
		{"huge", 6.02e23, "6.02e+23"},
		{"decimal", 0.1, "0.1"},
		{"shortest round-trip digits", 0.30000000000000004, "0.30000000000000004"},
		{"small", 0.000001, "0.000001"},
		{"tiny", 1e-7, "0.0000001"},
		{"tinier", 1.5e-8, "1.5e-08"},
		{"negative decimal", -2.5, "-2.5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatNumber(tc.v); got != tc.want {
				t.Errorf("formatNumber(%v): got %q, want %q", tc.v, got, tc.want)
			}
		})
	}
}
