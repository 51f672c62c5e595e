package builtin

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on the expressions evaluate accepts.
const (
	maxExprLen   = 1000 // characters
	maxExprDepth = 100  // nested parentheses, calls, unary signs and powers
)

// Kinds of expression error; an *exprError wraps one of them.
var (
	errSyntax          = errors.New("syntax error")
	errDivisionByZero  = errors.New("division by zero")
	errUnknownFunction = errors.New("unknown function")
	errUnknownName     = errors.New("unknown name")
	errArity           = errors.New("wrong number of arguments")
	errDomain          = errors.New("argument out of domain")
	errNotFinite       = errors.New("result is not a finite number")
	errTooLong         = errors.New("expression too long")
	errTooDeep         = errors.New("expression nested too deeply")
)

// exprError is an error in an expression, at a 1-based character position
// (0 when the error concerns the whole expression).
type exprError struct {
	kind error
	pos  int
	msg  string
}

func (e *exprError) Error() string {
	if e.pos == 0 {
		return e.msg
	}
	return fmt.Sprintf("%s at position %d", e.msg, e.pos)
}

func (e *exprError) Unwrap() error { return e.kind }

// evalExpr parses and evaluates an arithmetic expression.
//
// Operators, loosest binding first:
//
//	binary + and -      left-associative
//	binary *, / and %   left-associative; % is the remainder, with the sign of the dividend
//	unary + and -       prefix
//	binary ^ (or **)    right-associative; binds tighter than unary minus, so -2^2 = -4
//
// Operands are numbers (12, 1.5, .5, 1e3, 2.5E-3), the constants pi and e,
// parenthesised expressions and calls of the functions in functions. Names
// are case-insensitive; ×, ÷, − and π are accepted for *, /, - and pi.
func evalExpr(src string) (float64, error) {
	if n := utf8.RuneCountInString(src); n > maxExprLen {
		return 0, &exprError{kind: errTooLong, msg: fmt.Sprintf("expression is %d characters long; the limit is %d", n, maxExprLen)}
	}
	toks, err := tokenize(src)
	if err != nil {
		return 0, err
	}
	p := &parser{toks: toks}
	if p.peek().kind == tokEOF {
		return 0, &exprError{kind: errSyntax, msg: "syntax error: empty expression"}
	}
	root, err := p.parseExpr(1)
	if err != nil {
		return 0, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return 0, p.unexpected(t)
	}
	v, err := root.eval()
	if err != nil {
		return 0, err
	}
	return v + 0, nil // + 0 turns -0 into 0
}

// Tokens.

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokIdent
	tokOp // + - * / % ^
	tokLParen
	tokRParen
	tokComma
)

type token struct {
	kind tokKind
	text string  // source text; canonical operator for tokOp, lower case for tokIdent
	num  float64 // value of a tokNum
	pos  int     // 1-based character position
}

// tokenize splits src into tokens, ending with a tokEOF.
func tokenize(src string) ([]token, error) {
	rs := []rune(src)
	var toks []token
	for i := 0; i < len(rs); {
		r, pos := rs[i], i+1
		switch {
		case unicode.IsSpace(r):
			i++
		case isDigit(r) || r == '.':
			j := scanNumber(rs, i)
			text := string(rs[i:j])
			v, err := strconv.ParseFloat(text, 64)
			if err != nil {
				if math.IsInf(v, 0) {
					return nil, &exprError{kind: errNotFinite, pos: pos, msg: fmt.Sprintf("number %s is too large", text)}
				}
				return nil, &exprError{kind: errSyntax, pos: pos, msg: fmt.Sprintf("syntax error: malformed number %q", text)}
			}
			toks = append(toks, token{kind: tokNum, text: text, num: v, pos: pos})
			i = j
		case r == '_' || unicode.IsLetter(r):
			if r == 'π' {
				toks = append(toks, token{kind: tokIdent, text: "pi", pos: pos})
				i++
				continue
			}
			j := i + 1
			for j < len(rs) && (rs[j] == '_' || isDigit(rs[j]) || (unicode.IsLetter(rs[j]) && rs[j] != 'π')) {
				j++
			}
			toks = append(toks, token{kind: tokIdent, text: strings.ToLower(string(rs[i:j])), pos: pos})
			i = j
		default:
			t := token{pos: pos, text: string(r)}
			switch r {
			case '+', '-', '/', '%', '^':
				t.kind = tokOp
			case '*':
				t.kind = tokOp
				if i+1 < len(rs) && rs[i+1] == '*' {
					t.text = "^"
					i++
				}
			case '×':
				t.kind, t.text = tokOp, "*"
			case '÷':
				t.kind, t.text = tokOp, "/"
			case '−':
				t.kind, t.text = tokOp, "-"
			case '(':
				t.kind = tokLParen
			case ')':
				t.kind = tokRParen
			case ',':
				t.kind = tokComma
			default:
				return nil, &exprError{kind: errSyntax, pos: pos, msg: fmt.Sprintf("syntax error: unexpected character %q", r)}
			}
			toks = append(toks, t)
			i++
		}
	}
	return append(toks, token{kind: tokEOF, pos: len(rs) + 1}), nil
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// scanNumber returns the end of the number starting at rs[i]: digits with at
// most one decimal point, then an optional exponent. An "e" not followed by
// digits is left alone, so it reads as the constant e (and then fails to
// parse, as there is no implicit multiplication).
func scanNumber(rs []rune, i int) int {
	j := i
	for j < len(rs) && isDigit(rs[j]) {
		j++
	}
	if j < len(rs) && rs[j] == '.' {
		j++
		for j < len(rs) && isDigit(rs[j]) {
			j++
		}
	}
	if j < len(rs) && (rs[j] == 'e' || rs[j] == 'E') {
		k := j + 1
		if k < len(rs) && (rs[k] == '+' || rs[k] == '-') {
			k++
		}
		if k < len(rs) && isDigit(rs[k]) {
			for k < len(rs) && isDigit(rs[k]) {
				k++
			}
			j = k
		}
	}
	return j
}

// Parser: precedence climbing over binary operators, recursive descent for
// the rest.

type opInfo struct {
	prec  int
	right bool // right-associative
}

var binaryOps = map[string]opInfo{
	"+": {1, false},
	"-": {1, false},
	"*": {2, false},
	"/": {2, false},
	"%": {2, false},
	"^": {4, true},
}

// unaryPrec is the precedence of prefix + and -: tighter than * but looser
// than ^.
const unaryPrec = 3

type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// nest enters one level of nesting at t, failing beyond maxExprDepth. The
// caller must call p.leave when done with the level.
func (p *parser) nest(t token) error {
	p.depth++
	if p.depth > maxExprDepth {
		return &exprError{kind: errTooDeep, pos: t.pos, msg: fmt.Sprintf("expression is nested more than %d levels deep", maxExprDepth)}
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) unexpected(t token) error {
	return &exprError{kind: errSyntax, pos: t.pos, msg: "syntax error: unexpected " + describe(t)}
}

func describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return fmt.Sprintf("number %s", t.text)
	case tokIdent:
		return fmt.Sprintf("name %q", t.text)
	default:
		return strconv.Quote(t.text)
	}
}

// parseExpr parses a sequence of operands joined by binary operators of
// precedence at least minPrec.
func (p *parser) parseExpr(minPrec int) (node, error) {
	lhs, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		info, ok := binaryOps[t.text]
		if t.kind != tokOp || !ok || info.prec < minPrec {
			return lhs, nil
		}
		p.next()
		nextPrec := info.prec + 1
		if info.right {
			// The right operand may hold another ^: a level of nesting.
			nextPrec = info.prec
			if err := p.nest(t); err != nil {
				return nil, err
			}
		}
		rhs, err := p.parseExpr(nextPrec)
		if info.right {
			p.leave()
		}
		if err != nil {
			return nil, err
		}
		lhs = &binaryNode{op: t.text, pos: t.pos, l: lhs, r: rhs}
	}
}

func (p *parser) parseUnary() (node, error) {
	t := p.peek()
	if t.kind != tokOp || (t.text != "-" && t.text != "+") {
		return p.parsePrimary()
	}
	p.next()
	if err := p.nest(t); err != nil {
		return nil, err
	}
	defer p.leave()
	x, err := p.parseExpr(unaryPrec)
	if err != nil {
		return nil, err
	}
	if t.text == "+" {
		return x, nil
	}
	return &negNode{x: x}, nil
}

func (p *parser) parsePrimary() (node, error) {
	t := p.next()
	switch t.kind {
	case tokNum:
		return numNode(t.num), nil
	case tokLParen:
		if err := p.nest(t); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseExpr(1)
		if err != nil {
			return nil, err
		}
		if err := p.expectClose(t); err != nil {
			return nil, err
		}
		return x, nil
	case tokIdent:
		if p.peek().kind == tokLParen {
			return p.parseCall(t)
		}
		if v, ok := constants[t.text]; ok {
			return numNode(v), nil
		}
		if _, ok := functions[t.text]; ok {
			return nil, &exprError{kind: errSyntax, pos: t.pos, msg: fmt.Sprintf("syntax error: function %s needs parentheses, as in %s(x)", t.text, t.text)}
		}
		return nil, &exprError{kind: errUnknownName, pos: t.pos, msg: fmt.Sprintf("unknown name %q (constants: pi, e)", t.text)}
	default:
		return nil, p.unexpected(t)
	}
}

// expectClose consumes the ")" matching open.
func (p *parser) expectClose(open token) error {
	switch t := p.peek(); t.kind {
	case tokRParen:
		p.next()
		return nil
	case tokEOF:
		return &exprError{kind: errSyntax, pos: open.pos, msg: `syntax error: "(" is never closed`}
	default:
		return &exprError{kind: errSyntax, pos: t.pos, msg: fmt.Sprintf(`syntax error: unexpected %s, expected ")"`, describe(t))}
	}
}

// parseCall parses the argument list of a call of the function named by
// name; the next token is "(".
func (p *parser) parseCall(name token) (node, error) {
	fn, ok := functions[name.text]
	if !ok {
		if _, isConst := constants[name.text]; isConst {
			return nil, &exprError{kind: errSyntax, pos: name.pos, msg: fmt.Sprintf("syntax error: %s is a constant, not a function", name.text)}
		}
		return nil, &exprError{kind: errUnknownFunction, pos: name.pos, msg: fmt.Sprintf("unknown function %q (functions: %s)", name.text, functionNames)}
	}
	open := p.next()
	if err := p.nest(name); err != nil {
		return nil, err
	}
	defer p.leave()
	var argv []node
	if p.peek().kind != tokRParen {
		for {
			x, err := p.parseExpr(1)
			if err != nil {
				return nil, err
			}
			argv = append(argv, x)
			if p.peek().kind != tokComma {
				break
			}
			p.next()
		}
	}
	if err := p.expectClose(open); err != nil {
		return nil, err
	}
	if len(argv) < fn.minArgs || (fn.maxArgs >= 0 && len(argv) > fn.maxArgs) {
		return nil, &exprError{kind: errArity, pos: name.pos, msg: fmt.Sprintf("%s takes %s, got %d", name.text, fn.arity(), len(argv))}
	}
	return &callNode{name: name.text, pos: name.pos, fn: fn, args: argv}, nil
}

// Syntax tree.

type node interface {
	eval() (float64, error)
}

type numNode float64

func (n numNode) eval() (float64, error) { return float64(n), nil }

type negNode struct{ x node }

func (n *negNode) eval() (float64, error) {
	v, err := n.x.eval()
	return -v, err
}

type binaryNode struct {
	op   string
	pos  int
	l, r node
}

func (n *binaryNode) eval() (float64, error) {
	l, err := n.l.eval()
	if err != nil {
		return 0, err
	}
	r, err := n.r.eval()
	if err != nil {
		return 0, err
	}
	var v float64
	switch n.op {
	case "+":
		v = l + r
	case "-":
		v = l - r
	case "*":
		v = l * r
	case "/":
		v, err = divide(l, r)
	case "%":
		v, err = modulo(l, r)
	case "^":
		v, err = power(l, r)
	}
	return checked(v, err, n.pos, "operator "+n.op)
}

type callNode struct {
	name string
	pos  int
	fn   *function
	args []node
}

func (n *callNode) eval() (float64, error) {
	argv := make([]float64, len(n.args))
	for i, a := range n.args {
		v, err := a.eval()
		if err != nil {
			return 0, err
		}
		argv[i] = v
	}
	v, err := n.fn.call(argv)
	return checked(v, err, n.pos, n.name+"()")
}

// checked positions a failed or non-finite result of the operation what at
// pos.
func checked(v float64, err error, pos int, what string) (float64, error) {
	if err == nil {
		err = finite(v)
	}
	if err == nil {
		return v, nil
	}
	ee := &exprError{kind: errDomain, pos: pos, msg: err.Error()}
	var inner *exprError
	if errors.As(err, &inner) {
		ee.kind = inner.kind
		if inner.kind == errNotFinite {
			ee.msg = what + ": " + inner.msg
		}
	}
	return 0, ee
}

// Functions and constants.

type function struct {
	minArgs, maxArgs int // maxArgs < 0: variadic
	call             func([]float64) (float64, error)
}

func (f *function) arity() string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("at least %d argument(s)", f.minArgs)
	case f.minArgs == 1 && f.maxArgs == 1:
		return "exactly 1 argument"
	default:
		return fmt.Sprintf("%d to %d arguments", f.minArgs, f.maxArgs)
	}
}

func unary(fn func(float64) float64) *function {
	return &function{minArgs: 1, maxArgs: 1, call: func(x []float64) (float64, error) { return fn(x[0]), nil }}
}

func unaryErr(fn func(float64) (float64, error)) *function {
	return &function{minArgs: 1, maxArgs: 1, call: func(x []float64) (float64, error) { return fn(x[0]) }}
}

func logarithm(name string, fn func(float64) float64) *function {
	return unaryErr(func(x float64) (float64, error) {
		if x <= 0 {
			return 0, &exprError{kind: errDomain, msg: fmt.Sprintf("%s of a number that is not positive (%s)", name, formatNumber(x))}
		}
		return fn(x), nil
	})
}

var functions = map[string]*function{
	"sqrt":  unaryErr(squareRoot),
	"abs":   unary(math.Abs),
	"ln":    logarithm("ln", math.Log),
	"log":   logarithm("log", math.Log10),
	"exp":   unary(math.Exp),
	"sin":   unary(math.Sin),
	"cos":   unary(math.Cos),
	"tan":   unary(math.Tan),
	"floor": unary(math.Floor),
	"ceil":  unary(math.Ceil),
	"round": unary(math.Round),
	"min":   {minArgs: 1, maxArgs: -1, call: func(x []float64) (float64, error) { return minOf(x), nil }},
	"max":   {minArgs: 1, maxArgs: -1, call: func(x []float64) (float64, error) { return maxOf(x), nil }},
}

const functionNames = "sqrt, abs, ln, log, exp, sin, cos, tan, floor, ceil, round, min, max"

var constants = map[string]float64{
	"pi": math.Pi,
	"e":  math.E,
}

func minOf(x []float64) float64 {
	m := x[0]
	for _, v := range x[1:] {
		m = math.Min(m, v)
	}
	return m
}

func maxOf(x []float64) float64 {
	m := x[0]
	for _, v := range x[1:] {
		m = math.Max(m, v)
	}
	return m
}
