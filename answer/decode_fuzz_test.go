package answer

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"toolrouter/router"
)

// FuzzDecodeRequest feeds arbitrary bodies to the route and answer decoders, the HTTP bodies' and
// the MCP tools' arguments' (the seed corpus is in testdata/fuzz/FuzzDecodeRequest). Whatever the
// body, a decoder returns either a 400
// naming the problem, or a request within every limit: a non-blank query of valid UTF-8 within
// max_query_bytes, at most max_history turns of user or assistant, a deadline from 1 ms to
// router.deadline, a positive call limit and a known synthesize mode.
func FuzzDecodeRequest(f *testing.F) {
	l := Limits{MaxQueryBytes: 64, MaxHistory: 3, MaxDeadline: 90 * time.Second}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, caller, err := DecodeRoute(body, l)
		check(t, l, body, req, caller, err)
		req, caller, mode, err := DecodeAnswer(body, l)
		check(t, l, body, req, caller, err)
		if err == nil && !mode.Valid() {
			t.Errorf("%q: got synthesize %q, want auto, always or never", body, mode)
		}
		for _, answerTool := range []bool{false, true} {
			req, mode, err := DecodeTool(body, answerTool, l)
			check(t, l, body, req, "", err)
			if err == nil && !mode.Valid() {
				t.Errorf("%q: got synthesize %q, want auto, always or never", body, mode)
			}
		}
	})
}

func check(t *testing.T, l Limits, body []byte, req router.Request, caller string, err error) {
	t.Helper()
	if err != nil {
		var ae *Problem
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Code == "" || ae.Message == "" {
			t.Errorf("%q: got error %#v, want a 400 with a code and a message", body, err)
		}
		if e := Classify(err, nil, nil); strings.ContainsAny(e.Message, "\r\n") {
			t.Errorf("%q: got message %q, want one line", body, e.Message)
		}
		return
	}
	switch {
	case strings.TrimSpace(req.Query) == "" || len(req.Query) > l.MaxQueryBytes || !utf8.ValidString(req.Query):
		t.Errorf("%q: accepted query %q, want a non-blank UTF-8 query of at most %d bytes", body, req.Query, l.MaxQueryBytes)
	case len(req.History) > l.MaxHistory:
		t.Errorf("%q: accepted %d history turns, want at most %d", body, len(req.History), l.MaxHistory)
	case req.Deadline < 0 || req.Deadline > l.MaxDeadline || req.Deadline != req.Deadline.Truncate(time.Millisecond):
		t.Errorf("%q: accepted deadline %s, want 0 (none) or whole milliseconds up to %s", body, req.Deadline, l.MaxDeadline)
	case req.MaxToolCalls < 0:
		t.Errorf("%q: accepted max_tool_calls %d, want 0 (none) or more", body, req.MaxToolCalls)
	case len(caller) > MaxCallerBytes:
		t.Errorf("%q: accepted a caller of %d bytes, want at most %d", body, len(caller), MaxCallerBytes)
	}
	for i, m := range req.History {
		if m.Role != "user" && m.Role != "assistant" {
			t.Errorf("%q: accepted history[%d].role %q", body, i, m.Role)
		}
	}
}
