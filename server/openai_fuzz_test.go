package server

import (
	"errors"
	"strings"
	"testing"

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
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != fiber.StatusBadRequest || ae.code == "" || ae.msg == "" {
				t.Fatalf("%q: got error %#v, want a 400 with a code and a message", body, err)
			}
			if e := h.apiErrorOf(err); strings.ContainsAny(e.msg, "\r\n") {
				t.Errorf("%q: got message %q, want one line", body, e.msg)
			}
			return
		}
		if in.model == "" || len(in.messages) == 0 || in.last < 0 || in.last >= len(in.messages) || in.messages[in.last].Role != "user" {
			t.Fatalf("%q: accepted model %q with %d messages, last user message at %d", body, in.model, len(in.messages), in.last)
		}
		if n := len(in.messages[in.last].Content); n > h.o.MaxQueryBytes {
			t.Errorf("%q: accepted a last user message of %d bytes, want at most %d", body, n, h.o.MaxQueryBytes)
		}
		others, total := 0, 0
		for i, m := range in.messages {
			switch {
			case m.Role == "tool" && in.tools == nil:
				t.Errorf("%q: accepted messages[%d], a tool message without tools", body, i)
			case m.Role != "system" && m.Role != "user" && m.Role != "assistant" && m.Role != "tool":
				t.Errorf("%q: accepted messages[%d].role %q", body, i, m.Role)
			}
			if m.Role != "system" {
				others++
			}
			total += len(m.Content)
		}
		if others-1 > h.o.MaxHistory || total > 4*h.o.MaxQueryBytes {
			t.Errorf("%q: accepted %d other messages and %d bytes, want at most %d and %d", body, others-1, total, h.o.MaxHistory, 4*h.o.MaxQueryBytes)
		}
	})
}
