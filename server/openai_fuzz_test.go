package server

import (
	"errors"
	"strings"
	"testing"

	"toolrouter/answer"

	"github.com/gofiber/fiber/v2"
)

// FuzzDecodeChat feeds arbitrary bodies to the chat-completions decoder. Whatever the body, it
// returns either a 400 naming the problem (with a code and a one-line message), or a request within
// every limit: a model name, known roles, a last user message within max_query_bytes, at most
// max_history other messages and tool messages only beside tools.
func FuzzDecodeChat(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"council","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
		`{"model":"p/m","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"string"}}}}}],"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"x\":\"1\"}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
		`{"model":"m","temperature":0.5,"top_p":1,"max_tokens":5,"stop":["a"],"seed":1,"n":1,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	_, h := build(Deps{}, Options{MaxQueryBytes: 64, MaxHistory: 3}, "")
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := h.decodeChat(body)
		if err != nil {
			var ae *answer.Problem
			if !errors.As(err, &ae) || ae.Status != fiber.StatusBadRequest || ae.Code == "" || ae.Message == "" {
				t.Fatalf("%q: got error %#v, want a 400 with a code and a message", body, err)
			}
			if e := h.problemOf(err); strings.ContainsAny(e.Message, "\r\n") {
				t.Errorf("%q: got message %q, want one line", body, e.Message)
			}
			return
		}
		if in.Model == "" || len(in.Messages) == 0 || in.Last < 0 || in.Last >= len(in.Messages) || in.Messages[in.Last].Role != "user" {
			t.Fatalf("%q: accepted model %q with %d messages, last user message at %d", body, in.Model, len(in.Messages), in.Last)
		}
		if n := len(in.Messages[in.Last].Content); n > h.limits.MaxQueryBytes {
			t.Errorf("%q: accepted a last user message of %d bytes, want at most %d", body, n, h.limits.MaxQueryBytes)
		}
		others, total := 0, 0
		for i, m := range in.Messages {
			switch {
			case m.Role == "tool" && in.Tools == nil:
				t.Errorf("%q: accepted messages[%d], a tool message without tools", body, i)
			case m.Role != "system" && m.Role != "user" && m.Role != "assistant" && m.Role != "tool":
				t.Errorf("%q: accepted messages[%d].role %q", body, i, m.Role)
			}
			if m.Role != "system" {
				others++
			}
			total += len(m.Content)
		}
		if others-1 > h.limits.MaxHistory || total > 4*h.limits.MaxQueryBytes {
			t.Errorf("%q: accepted %d other messages and %d bytes, want at most %d and %d", body, others-1, total, h.limits.MaxHistory, 4*h.limits.MaxQueryBytes)
		}
	})
}
