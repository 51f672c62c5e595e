// Package trust measures whether tool calls can be trusted through a door: BFCL questions sent as
// a client sends them (the question's functions as the request's tools, under each tool_choice),
// to toolrouter's doors and straight to a model server's, and the answers' calls checked: does
// each call name a function of the request, do its arguments validate against that function's
// schema, was tool_choice honoured. It also counts what each answer cost (model calls, decoded
// tokens, wall time) and, when asked, scores the calls with BFCL's checker (bench/metrics). It
// starts no server: the command gives it the base URLs.
package trust

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"toolrouter/bench/dataset"
	"toolrouter/bench/metrics"
	"toolrouter/schema"
)

// Door is one API shape a client asks for tool calls in.
type Door string

// Doors.
const (
	// OpenAI is POST /v1/chat/completions.
	OpenAI Door = "openai"
	// Ollama is POST /api/chat, Ollama's own.
	Ollama Door = "ollama"
)

// Doors are the known doors, in report order.
var Doors = []Door{OpenAI, Ollama}

// Path is the door's path.
func (d Door) Path() string {
	if d == Ollama {
		return "/api/chat"
	}
	return "/v1/chat/completions"
}

// Choice is the tool_choice a question is asked with.
type Choice string

// Choices, in report order.
const (
	Auto     Choice = "auto"
	Required Choice = "required"
	Named    Choice = "named"
	None     Choice = "none"
)

// Choices are every Choice.
var Choices = []Choice{Auto, Required, Named, None}

// Expressible reports whether door can carry choice: Ollama's API has no tool_choice, so only
// auto is asked there.
func (d Door) Expressible(c Choice) bool { return d == OpenAI || c == Auto }

// Request is one question as a client asks it.
type Request struct {
	Model  string
	Query  string
	Tools  []dataset.Function
	Choice Choice
	// Name is the function a Named choice names.
	Name string
	// MaxTokens, when above 0, bounds the answer (OpenAI's max_tokens, Ollama's num_predict): a
	// random-weight model never stops by itself.
	MaxTokens int
	// NumCtx, when above 0, is sent as Ollama's num_ctx at its own door (OpenAI's API has none),
	// so a shared server keeps the model loaded as the sidecar loads it.
	NumCtx int
}

type wireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

// Encode is req's body at door: OpenAI's chat-completions request, or Ollama's /api/chat request
// (no tool_choice: only Auto), both unstreamed.
func Encode(door Door, req Request) ([]byte, error) {
	tools := make([]wireTool, len(req.Tools))
	for i, f := range req.Tools {
		tools[i] = wireTool{Type: "function", Function: wireFunction{Name: f.Name, Description: f.Description, Parameters: f.Schema}}
	}
	msgs := []map[string]string{{"role": "user", "content": req.Query}}
	body := map[string]any{"model": req.Model, "messages": msgs, "tools": tools, "stream": false}
	opts := map[string]any{}
	if req.MaxTokens > 0 {
		opts["num_predict"] = req.MaxTokens
		if door == OpenAI {
			body["max_tokens"] = req.MaxTokens
		}
	}
	if req.NumCtx > 0 {
		opts["num_ctx"] = req.NumCtx
	}
	if door == Ollama && len(opts) > 0 {
		body["options"] = opts
	}
	switch door {
	case OpenAI:
		switch req.Choice {
		case Auto, Required, None:
			body["tool_choice"] = string(req.Choice)
		case Named:
			body["tool_choice"] = map[string]any{"type": "function", "function": map[string]string{"name": req.Name}}
		default:
			return nil, fmt.Errorf("unknown tool_choice %q", req.Choice)
		}
	case Ollama:
		if req.Choice != Auto {
			return nil, fmt.Errorf("/api/chat has no tool_choice: cannot ask %q", req.Choice)
		}
	default:
		return nil, fmt.Errorf("unknown door %q", door)
	}
	return json.Marshal(body)
}

// Call is one call of an answer: the function named and its arguments (nil when they were not a
// JSON object).
type Call struct {
	Name string
	Args map[string]any
}

// Answer is what came back for one request.
type Answer struct {
	// Status is the HTTP status; Err says why the answer could not be read (a non-200 is one).
	Status int
	Err    string
	Calls  []Call
	Text   string
	// ModelCalls are the model calls the answer took: toolrouter's trace says; a model server's
	// own answer is one call.
	ModelCalls int
	// Decoded are the tokens the model decoded (usage.completion_tokens, eval_count).
	Decoded int
	Wall    time.Duration
}

// ErrNoDoor means the server answered 404 at the door's path: it does not have that door.
var ErrNoDoor = errors.New("the server has no such door (404)")

// maxAnswerBytes bounds an answer read.
const maxAnswerBytes = 8 << 20

// Send posts req to base's door and reads the answer; an answer the server refused, or that did
// not come (a timeout, a broken connection), is an Answer with its Err. ErrNoDoor when the door
// answers 404 without naming a model; an error only when req cannot be sent or ctx ended.
func Send(ctx context.Context, hc *http.Client, base string, door Door, req Request) (Answer, error) {
	body, err := Encode(door, req)
	if err != nil {
		return Answer{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+door.Path(), bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return Answer{}, ctx.Err()
		}
		return Answer{Err: err.Error(), Wall: time.Since(start)}, nil
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	a := Answer{Status: resp.StatusCode, Wall: time.Since(start)}
	if err != nil {
		a.Err = fmt.Sprintf("reading the answer: %v", err)
		return a, nil
	}
	if resp.StatusCode == http.StatusNotFound && !bytes.Contains(raw, []byte("model")) {
		return a, ErrNoDoor
	}
	if resp.StatusCode != http.StatusOK {
		a.Err = fmt.Sprintf("%d %s", resp.StatusCode, clip(raw))
		return a, nil
	}
	if err := decode(door, raw, &a); err != nil {
		a.Err = err.Error()
	}
	return a, nil
}

// trace is the part of toolrouter's x_toolrouter the bench reads.
type trace struct {
	Routing *struct {
		Usage struct {
			LLMCalls int `json:"llm_calls"`
		} `json:"usage"`
	} `json:"routing"`
	CompletionUsage *json.RawMessage `json:"completion_usage"`
}

func (t *trace) calls() int {
	if t == nil {
		return 1
	}
	n := 0
	if t.Routing != nil {
		n += t.Routing.Usage.LLMCalls
	}
	if t.CompletionUsage != nil {
		n++
	}
	return n
}

// decode reads an answer of door into a.
func decode(door Door, raw []byte, a *Answer) error {
	if door == Ollama {
		var out struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					Function struct {
						Name      string          `json:"name"`
						Arguments json.RawMessage `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			EvalCount   int    `json:"eval_count"`
			XToolrouter *trace `json:"x_toolrouter"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("the answer is not Ollama's chat response: %w", err)
		}
		a.Text, a.Decoded, a.ModelCalls = out.Message.Content, out.EvalCount, out.XToolrouter.calls()
		for _, tc := range out.Message.ToolCalls {
			a.Calls = append(a.Calls, Call{Name: tc.Function.Name, Args: object(tc.Function.Arguments)})
		}
		return nil
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
		XToolrouter *trace `json:"x_toolrouter"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 {
		return fmt.Errorf("the answer is not a chat completion: %s", clip(raw))
	}
	m := out.Choices[0].Message
	if m.Content != nil {
		a.Text = *m.Content
	}
	a.Decoded, a.ModelCalls = out.Usage.CompletionTokens, out.XToolrouter.calls()
	for _, tc := range m.ToolCalls {
		a.Calls = append(a.Calls, Call{Name: tc.Function.Name, Args: object(json.RawMessage(tc.Function.Arguments))})
	}
	return nil
}

// object is raw as a JSON object (numbers kept exact), nil when it is not one.
func object(raw json.RawMessage) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

func clip(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Functions are a request's functions by name, their schemas compiled.
type Functions map[string]*schema.Schema

// Compile compiles the functions' schemas.
func Compile(fs []dataset.Function) (Functions, error) {
	out := Functions{}
	for _, f := range fs {
		s, err := schema.Compile(f.Schema)
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", f.Name, err)
		}
		out[f.Name] = s
	}
	return out, nil
}

// Score is what one answer did against its request.
type Score struct {
	// Calls are the answer's calls; Named those naming a function of the request; Valid those
	// whose arguments validate against its schema.
	Calls, Named, Valid int
	// Honoured says the answer kept to tool_choice: required, at least one call; named, at
	// least one call, all of that function; none, no call; auto, always.
	Honoured bool
}

// Check scores a against req's functions.
func Check(req Request, fs Functions, a Answer) Score {
	var s Score
	s.Calls = len(a.Calls)
	onlyNamed := true
	for _, c := range a.Calls {
		sch, ok := fs[c.Name]
		if ok {
			s.Named++
			if c.Args != nil && sch.ValidateValue(c.Args) == nil {
				s.Valid++
			}
		}
		onlyNamed = onlyNamed && c.Name == req.Name
	}
	switch req.Choice {
	case Auto:
		s.Honoured = true
	case Required:
		s.Honoured = s.Calls > 0
	case Named:
		s.Honoured = s.Calls > 0 && onlyNamed
	case None:
		s.Honoured = s.Calls == 0
	}
	return s
}

// Accurate reports whether a's calls are right for c by BFCL's checker: for a question that
// needs no call (irrelevance), no call; else the calls match one of its answers, in any order.
func Accurate(c dataset.Case, rule metrics.StringRule, a Answer) bool {
	if !c.NeedsTool {
		return len(a.Calls) == 0
	}
	got := make([]metrics.Call, len(a.Calls))
	for i, call := range a.Calls {
		got[i] = metrics.Call{Name: dataset.BFCLServer + "." + call.Name, Args: call.Args}
	}
	specs := c.Toolset.Specs()
	for _, ans := range c.Answers {
		if (metrics.Checker{Strings: rule}).CheckCalls(specs, got, ans.Calls) == nil {
			return true
		}
	}
	return false
}
