package router

import (
	"errors"
	"strconv"

	"toolrouter/plainjson"
	"toolrouter/provider"
)

// The outcome is what every door answers, once per request: these functions write its JSON
// directly, exactly as encoding/json writes the same fields (TestOutcomeJSON compares the two on
// an outcome with every field set and on outcomes with a random half of them), without
// reflection. Measured by BenchmarkOutcomeJSON: about a quarter of encoding/json's time, and no
// allocation.

var errUnsupportedValue = errors.New("router: outcome holds a value JSON cannot encode (NaN, an infinity or an invalid number)")

// MarshalJSON encodes o as encoding/json encodes its fields.
func (o *Outcome) MarshalJSON() ([]byte, error) { return o.AppendJSON(nil) }

// AppendJSON appends o's JSON to b: what MarshalJSON returns, without a copy; null for a nil o,
// as encoding/json writes a nil pointer.
func (o *Outcome) AppendJSON(b []byte) ([]byte, error) {
	if o == nil {
		return append(b, "null"...), nil
	}
	w := jsonWriter{b: b}
	w.raw(`{"request_id":`)
	w.str(o.RequestID)
	w.raw(`,"identity":`)
	w.str(o.Identity)
	w.raw(`,"use_tool":`)
	w.bool(o.UseTool)
	w.optStr(`,"server":`, o.Server)
	w.optStr(`,"tool":`, o.Tool)
	w.raw(`,"reasoning":`)
	w.str(o.Reasoning)
	if o.Confidence != nil {
		w.raw(`,"confidence":`)
		w.confidence(o.Confidence)
	}
	if len(o.Arguments) > 0 {
		w.raw(`,"arguments":`)
		w.value(o.Arguments)
	}
	if o.Result != nil {
		w.raw(`,"result":`)
		w.result(o.Result)
	}
	w.raw(`,"direct":`)
	w.bool(o.Direct)
	w.optStr(`,"degraded":`, o.Degraded)
	w.optStr(`,"degraded_reason":`, string(o.DegradedReason))
	if o.Error != nil {
		w.raw(`,"error":`)
		w.error(o.Error)
	}
	if len(o.Attempts) > 0 {
		w.raw(`,"argument_attempts":`)
		w.attempts(o.Attempts)
	}
	w.raw(`,"calls":`)
	if o.Calls == nil {
		w.raw("null")
	} else {
		w.raw("[")
		for i := range o.Calls {
			if i > 0 {
				w.raw(",")
			}
			w.call(&o.Calls[i])
		}
		w.raw("]")
	}
	w.raw(`,"rounds":`)
	w.int(o.Rounds)
	w.raw(`,"stopped":`)
	w.str(string(o.Stopped))
	if len(o.Shortlists) > 0 {
		w.raw(`,"shortlists":`)
		w.value(o.Shortlists)
	}
	w.optInt(`,"searches":`, o.Searches)
	if len(o.Pending) > 0 {
		w.raw(`,"pending":`)
		w.value(o.Pending)
	}
	if o.Trimmed {
		w.raw(`,"trimmed":true`)
	}
	w.raw(`,"trace":`)
	if o.Trace == nil {
		w.raw("null")
	} else {
		w.raw("[")
		for i := range o.Trace {
			if i > 0 {
				w.raw(",")
			}
			w.step(&o.Trace[i])
		}
		w.raw("]")
	}
	w.raw(`,"timings_ms":{"select":`)
	w.float(o.Timings.Select)
	w.raw(`,"arguments":`)
	w.float(o.Timings.Arguments)
	w.raw(`,"execute":`)
	w.float(o.Timings.Execute)
	w.raw(`,"total":`)
	w.float(o.Timings.Total)
	w.raw(`},"usage":{"llm_calls":`)
	w.int(o.Usage.LLMCalls)
	w.raw(`,"prompt_tokens":`)
	w.int(o.Usage.PromptTokens)
	w.raw(`,"completion_tokens":`)
	w.int(o.Usage.CompletionTokens)
	w.breakdown(&o.Usage.Breakdown)
	w.raw("}}")
	return w.b, w.err
}

// jsonWriter appends JSON to b; the first value it cannot encode is kept in err.
type jsonWriter struct {
	b   []byte
	err error
}

func (w *jsonWriter) raw(s string) { w.b = append(w.b, s...) }
func (w *jsonWriter) str(s string) { w.b = plainjson.AppendString(w.b, s, plainjson.EncodingJSON) }
func (w *jsonWriter) bool(v bool)  { w.b = strconv.AppendBool(w.b, v) }
func (w *jsonWriter) int(n int)    { w.b = strconv.AppendInt(w.b, int64(n), 10) }
func (w *jsonWriter) float(f float64) {
	var ok bool
	if w.b, ok = plainjson.AppendFloat(w.b, f); !ok && w.err == nil {
		w.err = errUnsupportedValue
	}
}

// value appends v as encoding/json does.
func (w *jsonWriter) value(v any) {
	var ok bool
	if w.b, ok = plainjson.AppendValue(w.b, v, plainjson.Format{}); !ok && w.err == nil {
		w.err = errUnsupportedValue
	}
}

// optStr and optInt write key and the value unless it is empty (omitempty).
func (w *jsonWriter) optStr(key, s string) {
	if s != "" {
		w.raw(key)
		w.str(s)
	}
}

func (w *jsonWriter) optInt(key string, n int) {
	if n != 0 {
		w.raw(key)
		w.int(n)
	}
}

func (w *jsonWriter) call(c *Call) {
	w.raw(`{"step":`)
	w.int(c.Step)
	w.raw(`,"round":`)
	w.int(c.Round)
	w.optStr(`,"task":`, c.Task)
	w.raw(`,"server":`)
	w.str(c.Server)
	w.raw(`,"tool":`)
	w.str(c.Tool)
	if len(c.Arguments) > 0 {
		w.raw(`,"arguments":`)
		w.value(c.Arguments)
	}
	if c.Result != nil {
		w.raw(`,"result":`)
		w.result(c.Result)
	}
	if c.Error != nil {
		w.raw(`,"error":`)
		w.error(c.Error)
	}
	if len(c.Attempts) > 0 {
		w.raw(`,"argument_attempts":`)
		w.attempts(c.Attempts)
	}
	if c.Pending != nil {
		w.raw(`,"pending":`)
		w.value(c.Pending)
	}
	w.optInt(`,"reused_from":`, c.ReusedFrom)
	w.raw(`,"arguments_ms":`)
	w.float(c.ArgumentsMS)
	w.raw(`,"execute_ms":`)
	w.float(c.ExecuteMS)
	w.raw("}")
}

func (w *jsonWriter) step(s *Step) {
	w.raw(`{"index":`)
	w.int(s.Index)
	w.raw(`,"kind":`)
	w.str(string(s.Kind))
	w.raw(`,"round":`)
	w.int(s.Round)
	w.optInt(`,"call":`, s.Call)
	w.optStr(`,"tool":`, s.Tool)
	w.optStr(`,"model":`, s.Model)
	w.raw(`,"start_ms":`)
	w.float(s.StartMS)
	w.raw(`,"duration_ms":`)
	w.float(s.DurationMS)
	w.optInt(`,"prompt_tokens":`, s.PromptTokens)
	w.optInt(`,"estimated_tokens":`, s.EstimatedTokens)
	if s.OverEstimate {
		w.raw(`,"over_estimate":true`)
	}
	w.optInt(`,"completion_tokens":`, s.CompletionTokens)
	w.optInt(`,"model_calls":`, s.ModelCalls)
	if s.Breakdown != nil {
		w.breakdown(s.Breakdown)
	}
	if s.Confidence != nil {
		w.raw(`,"confidence":`)
		w.confidence(s.Confidence)
	}
	w.optStr(`,"detail":`, s.Detail)
	w.optStr(`,"error":`, s.Error)
	w.raw("}")
}

// breakdown writes b's fields into the object being written, as an embedded struct's are.
func (w *jsonWriter) breakdown(b *provider.Breakdown) {
	w.raw(`,"load_ms":`)
	w.float(b.LoadMS)
	w.raw(`,"prefill_ms":`)
	w.float(b.PrefillMS)
	w.raw(`,"decode_ms":`)
	w.float(b.DecodeMS)
	w.raw(`,"rest_ms":`)
	w.float(b.RestMS)
	w.raw(`,"uncached_prompt_tokens":`)
	w.int(b.UncachedTokens)
}

func (w *jsonWriter) result(r *Result) {
	w.raw(`{"text":`)
	w.str(r.Text)
	if r.Structured != nil {
		w.raw(`,"structured":`)
		w.value(r.Structured)
	}
	w.raw(`,"is_error":`)
	w.bool(r.IsError)
	if len(r.Content) > 0 {
		w.raw(`,"content":[`)
		for i, c := range r.Content {
			if i > 0 {
				w.raw(",")
			}
			w.raw(`{"type":`)
			w.str(c.Type)
			w.optStr(`,"mime_type":`, c.MIMEType)
			w.optInt(`,"bytes":`, c.Bytes)
			w.optStr(`,"uri":`, c.URI)
			w.optStr(`,"name":`, c.Name)
			w.raw("}")
		}
		w.raw("]")
	}
	w.optInt(`,"text_bytes":`, r.TextBytes)
	w.optInt(`,"structured_bytes":`, r.StructuredBytes)
	if r.Truncated {
		w.raw(`,"truncated":true`)
	}
	w.raw("}")
}

func (w *jsonWriter) error(e *Error) {
	w.raw(`{"code":`)
	w.str(e.Code)
	w.raw(`,"message":`)
	w.str(e.Message)
	w.raw("}")
}

func (w *jsonWriter) attempts(as []Attempt) {
	w.raw("[")
	for i, a := range as {
		if i > 0 {
			w.raw(",")
		}
		w.raw(`{"output":`)
		w.str(a.Output)
		w.raw(`,"feedback":`)
		w.str(a.Feedback)
		w.raw("}")
	}
	w.raw("]")
}

func (w *jsonWriter) confidence(c *Confidence) {
	w.raw("{")
	if c.UseTool != nil {
		w.raw(`"use_tool":`)
		w.float(*c.UseTool)
	}
	if c.Tool != nil {
		if c.UseTool != nil {
			w.raw(",")
		}
		w.raw(`"tool":`)
		w.float(*c.Tool)
	}
	w.raw("}")
}
