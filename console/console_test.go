package console

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"toolrouter/access"
	"toolrouter/council"
	"toolrouter/observe"
	"toolrouter/router"
)

func TestFiles(t *testing.T) {
	files, err := NewFiles()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, contentType string
		ok                bool
	}{
		{Index, "text/html; charset=utf-8", true},
		{"app.js", "text/javascript; charset=utf-8", true},
		{"style.css", "text/css; charset=utf-8", true},
		{"favicon.svg", "image/svg+xml", true},
		{"vendor/uplot/uPlot.esm.js", "text/javascript; charset=utf-8", true},
		{"missing.js", "", false},
		{"/app.js", "", false},
		{"vendor/../app.js", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := files.Open(tc.name)
			if ok != tc.ok {
				t.Fatalf("Open(%q): got %v, want %v", tc.name, ok, tc.ok)
			}
			if !ok {
				return
			}
			if f.ContentType != tc.contentType {
				t.Errorf("content type: got %q, want %q", f.ContentType, tc.contentType)
			}
			sum := sha256.Sum256(f.Body)
			if want := `"` + hex.EncodeToString(sum[:12]) + `"`; f.ETag != want {
				t.Errorf("ETag: got %s, want %s", f.ETag, want)
			}
			zr, err := gzip.NewReader(bytes.NewReader(f.Gzip()))
			if err != nil {
				t.Fatal(err)
			}
			if b, err := io.ReadAll(zr); err != nil || !bytes.Equal(b, f.Body) {
				t.Errorf("Gzip(): does not inflate to the body (%v)", err)
			}
		})
	}
}

// TestNoInlineScript: the pages hold no inline script or style and name no other origin, which the
// Content-Security-Policy would refuse; modules are imported by relative path only.
func TestNoInlineScript(t *testing.T) {
	files, err := NewFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files.Names() {
		f, _ := files.Open(name)
		body := string(f.Body)
		switch {
		case strings.HasSuffix(name, ".html"):
			for _, bad := range []string{"<script>", "<style", " style=", " onclick=", " onload=", "javascript:", "http://", "https://"} {
				if strings.Contains(body, bad) {
					t.Errorf("%s: has %q", name, bad)
				}
			}
		case strings.HasPrefix(name, "vendor/"):
		case strings.HasSuffix(name, ".js"):
			for _, bad := range []string{"innerHTML", "eval(", "new Function", "setAttribute('style'", "http://", "https://"} {
				if strings.Contains(body, bad) {
					t.Errorf("%s: has %q", name, bad)
				}
			}
		}
	}
	if !strings.Contains(CSP, "script-src 'self'") || strings.Contains(CSP, "unsafe-inline") || strings.Contains(CSP, "http") {
		t.Errorf("CSP %q: want scripts from the console's origin only", CSP)
	}
}

// TestVendored pins the vendored files (VENDOR.md says how to update them).
func TestVendored(t *testing.T) {
	files, err := NewFiles()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"vendor/uplot/uPlot.esm.js":  "5dd9b3281aa64b461b42d9945f6adb2649d346502b12281a9ae0d46599a80eba",
		"vendor/uplot/uPlot.min.css": "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04",
	}
	for name, sum := range want {
		f, ok := files.Open(name)
		if !ok {
			t.Errorf("%s: missing", name)
			continue
		}
		got := sha256.Sum256(f.Body)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: got SHA-256 %x, want %s", name, got, sum)
		}
	}
	if f, ok := files.Open("vendor/uplot/uPlot.esm.js"); !ok || !bytes.Contains(f.Body, []byte("(v1.6.32)")) {
		t.Error("uPlot.esm.js: want version 1.6.32 in its header")
	}
	if f, ok := files.Open("vendor/uplot/LICENSE"); !ok || !bytes.Contains(f.Body, []byte("MIT License")) {
		t.Error("vendor/uplot/LICENSE: want uPlot's MIT licence beside it")
	}
}

func report(endpoint string, i int) *observe.Report {
	return &observe.Report{Start: time.Date(2026, 11, 1, 12, 0, i, 0, time.UTC), Duration: time.Duration(i) * time.Millisecond,
		Endpoint: endpoint, Method: "POST", Status: 200, Identity: access.Identity{Org: "acme"}, Authenticated: true,
		Header: func(string) string { return "x" }}
}

func TestRecent(t *testing.T) {
	ctx := context.Background()
	r := NewRecent(3, 0)
	for i := 1; i <= 5; i++ {
		r.Observe(ctx, report("/v1/route", i))
	}
	for _, skipped := range []string{"/healthz", "/readyz", "/metrics", "/ui/api/requests"} {
		r.Observe(ctx, report(skipped, 9))
	}
	list := r.List()
	var ids []uint64
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	if want := []uint64{5, 4, 3}; !equal(ids, want) {
		t.Fatalf("List(): got ids %v, want %v (newest first, the last 3)", ids, want)
	}
	tests := []struct {
		id uint64
		ok bool
	}{{0, false}, {1, false}, {2, false}, {3, true}, {5, true}, {6, false}}
	for _, tc := range tests {
		d, ok := r.Get(tc.id)
		if ok != tc.ok {
			t.Errorf("Get(%d): got %v, want %v", tc.id, ok, tc.ok)
			continue
		}
		if ok && (d.ID != tc.id || d.DurationMS != float64(tc.id)) {
			t.Errorf("Get(%d): got %+v, want request %d", tc.id, d.Summary, tc.id)
		}
	}
	if got := list[0]; got.Identity != "acme" || got.Endpoint != "/v1/route" || got.Status != 200 {
		t.Errorf("summary: got %+v", got)
	}
	if r.slots[0].rep.Header != nil {
		t.Error("a kept report still reads the request's headers")
	}

	none := NewRecent(0, 0)
	none.Observe(ctx, report("/v1/route", 1))
	if got := none.List(); len(got) != 0 || none.Cap() != 0 {
		t.Errorf("ring of 0: got %v, want nothing kept", got)
	}
	if _, ok := none.Get(1); ok {
		t.Error("ring of 0: Get(1) found a request")
	}
}

// bigReport is a route whose one call returned text of n bytes.
func bigReport(i, n int) *observe.Report {
	rep := report("/v1/route", i)
	res := &router.Result{Text: strings.Repeat("x", n)}
	rep.Outcome = &router.Outcome{UseTool: true, Result: res, Calls: []router.Call{{Step: 1, Server: "s", Tool: "t", Result: res}}}
	return rep
}

// TestRecentBytes: the ring holds no more bytes than its bound, dropping the oldest reports to
// make room; a report over the whole bound is kept without its results' text, marked truncated,
// and one still over is not kept.
func TestRecentBytes(t *testing.T) {
	ctx := context.Background()
	const most = 1 << 20
	r := NewRecent(100, most)
	for i := 1; i <= 20; i++ {
		r.Observe(ctx, bigReport(i, 200<<10)) // the text twice in the outcome: about 400 KiB a report
		if held, _ := r.Bytes(); held > most {
			t.Fatalf("after %d reports the ring holds %d bytes, over its bound of %d", i, held, most)
		}
	}
	var ids []uint64
	for _, s := range r.List() {
		ids = append(ids, s.ID)
	}
	if want := []uint64{20, 19}; !equal(ids, want) {
		t.Errorf("List(): got ids %v, want %v (the newest that fit)", ids, want)
	}
	if _, ok := r.Get(18); ok {
		t.Error("Get(18): found a report dropped for room")
	}
	if d, ok := r.Get(20); !ok || len(d.Outcome.Result.Text) != 200<<10 {
		t.Error("Get(20): the newest report is not kept whole")
	}

	r.Observe(ctx, bigReport(21, 2<<20))
	d, ok := r.Get(21)
	if !ok {
		t.Fatal("Get(21): a report over the whole bound was not kept at all")
	}
	if res := d.Outcome.Calls[0].Result; res.Text != "" || !res.Truncated || res.TextBytes != 2<<20 {
		t.Errorf("a report over the whole bound: got result text of %d bytes, truncated %v, text_bytes %d; want its text dropped and said",
			len(res.Text), res.Truncated, res.TextBytes)
	}
	if held, _ := r.Bytes(); held > most {
		t.Errorf("the ring holds %d bytes, over its bound of %d", held, most)
	}

	huge := report("/v1/route", 22)
	huge.Outcome = &router.Outcome{Reasoning: strings.Repeat("r", 2<<20)}
	r.Observe(ctx, huge)
	if _, ok := r.Get(22); ok {
		t.Error("Get(22): a report over the bound without its results was kept")
	}
	if _, ok := r.Get(21); !ok {
		t.Error("Get(21): a report not kept pushed out an older one")
	}
}

// TestRecentSummary: a request's tools, tokens and council are summed from its routing, its
// council run and its other model calls.
func TestRecentSummary(t *testing.T) {
	rep := report("/v1/answer", 1)
	rep.Outcome = &router.Outcome{UseTool: true, Stopped: router.StopDone,
		Calls: []router.Call{{Server: "calculator", Tool: "multiply"}, {Tool: "nosuch"}},
		Usage: router.Usage{LLMCalls: 2, PromptTokens: 600, CompletionTokens: 40}}
	rep.Council = &council.Result{AnsweredBy: council.AnsweredByCouncil,
		Usage: council.Usage{Total: council.StageUsage{Calls: 5, PromptTokens: 2000, CompletionTokens: 100}}}
	rep.ModelCalls = []observe.ModelCall{{Phase: "completion", Model: "m", Start: rep.Start.Add(5 * time.Millisecond), PromptTokens: 50, CompletionTokens: 5}}
	r := NewRecent(1, 0)
	r.Observe(context.Background(), rep)
	d, ok := r.Get(1)
	if !ok {
		t.Fatal("Get(1): not found")
	}
	s := d.Summary
	if !s.UseTool || s.Stopped != "done" || !equal(s.Tools, []string{"calculator.multiply"}) || s.AnsweredBy != "council" ||
		s.ModelCalls != 8 || s.PromptTokens != 2650 || s.CompletionTokens != 145 {
		t.Errorf("summary: got %+v", s)
	}
	if d.Outcome != rep.Outcome || d.Council != rep.Council || len(d.ModelCalls) != 1 || d.ModelCalls[0].StartMS != 5 {
		t.Errorf("detail: got %+v", d)
	}
}

// TestRecentKeepsNoTokens: a kept request's held calls are shown without their tokens, in
// pending[] and in each call, and the detail read by a console's admin carries none; the report
// the request answered with keeps them.
func TestRecentKeepsNoTokens(t *testing.T) {
	const token = "tra_ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	p := router.Pending{Step: 1, Server: "fs", Tool: "delete", Reason: "destructive", Token: token}
	rep := report("/v1/route", 1)
	rep.Outcome = &router.Outcome{Stopped: router.StopApprovalRequired, Pending: []router.Pending{p},
		Calls: []router.Call{{Server: "fs", Tool: "delete", Pending: &p}}}
	r := NewRecent(1, 0)
	r.Observe(context.Background(), rep)
	d, ok := r.Get(1)
	if !ok {
		t.Fatal("Get(1): not found")
	}
	body, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), token) {
		t.Errorf("the kept request shows the token: %s", body)
	}
	if len(d.Outcome.Pending) != 1 || d.Outcome.Pending[0].Tool != "delete" || d.Outcome.Calls[0].Pending == nil {
		t.Errorf("got outcome %+v, want the held call without its token", d.Outcome)
	}
	if rep.Outcome.Pending[0].Token != token || rep.Outcome.Calls[0].Pending.Token != token {
		t.Error("the request's own outcome lost its token")
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkRecentObserve is what the ring adds to each request's path: a routed request's report
// measured (its outcome's JSON) and kept.
func BenchmarkRecentObserve(b *testing.B) {
	r := NewRecent(100, 0)
	rep := report("/v1/route", 1)
	rep.Outcome = &router.Outcome{UseTool: true, Server: "calculator", Tool: "add", Direct: true, Rounds: 1, Stopped: router.StopDone,
		Calls: []router.Call{{Step: 1, Round: 1, Server: "calculator", Tool: "add", Arguments: map[string]any{"a": 2.0, "b": 3.0},
			Result: &router.Result{Text: "5", Structured: map[string]any{"result": 5.0}}}},
		Trace: []router.Step{{Index: 1, Kind: router.StepSelect}, {Index: 2, Kind: router.StepArguments}, {Index: 3, Kind: router.StepExecute}},
		Usage: router.Usage{LLMCalls: 2, PromptTokens: 600, CompletionTokens: 40}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r.Observe(ctx, rep)
	}
}

// TestRecentHeld: a request whose calls were held is summarised with each held call's state, not
// as calls that ran: held while awaiting a decision, expired past its token's expiry, approved
// when approved while its route waited, declined or withdrawn by its code, and approved or
// declined when decided after it answered (Decided).
func TestRecentHeld(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name    string
		call    router.Call
		pending []router.Pending
		trace   []router.Step
		decided string // Decided's outcome after the request answered; "" none
		want    string
	}{
		{name: "awaiting", call: heldCall(router.CodeApprovalRequired), pending: []router.Pending{{Step: 1, ExpiresAt: now.Add(time.Hour)}}, want: "held"},
		{name: "wait ran out", call: heldCall(router.CodeApprovalTimeout), pending: []router.Pending{{Step: 1, ExpiresAt: now.Add(time.Hour)}}, want: "held"},
		{name: "expired", call: heldCall(router.CodeApprovalRequired), pending: []router.Pending{{Step: 1, ExpiresAt: now.Add(-time.Second)}}, want: "expired"},
		{name: "approved in the route", call: router.Call{Step: 1, Server: "fs", Tool: "delete", Result: &router.Result{Text: "ok"}},
			trace: []router.Step{{Kind: router.StepApproved, Call: 1}}, want: "approved"},
		{name: "declined in the route", call: heldCall(router.CodeDeclined), want: "declined"},
		{name: "withdrawn", call: heldCall(router.CodeWithdrawn), want: "withdrawn"},
		{name: "approved later", call: heldCall(router.CodeApprovalRequired), pending: []router.Pending{{Step: 1, ExpiresAt: now.Add(time.Hour)}},
			decided: "approved", want: "approved"},
		{name: "declined later", call: heldCall(router.CodeApprovalRequired), pending: []router.Pending{{Step: 1, ExpiresAt: now.Add(time.Hour)}},
			decided: "declined", want: "declined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := report("/v1/route", 1)
			rep.Outcome = &router.Outcome{RequestID: "req-1", UseTool: true, Calls: []router.Call{tc.call, {Step: 2, Server: "calculator", Tool: "add"}},
				Pending: tc.pending, Trace: tc.trace}
			r := NewRecent(2, 0)
			r.Observe(context.Background(), rep)
			if tc.decided != "" {
				r.Decided("req-1", 1, tc.decided)
				r.Decided("another-request", 1, "declined")
			}
			got := r.List()[0].Held
			if len(got) != 1 || got[0].Tool != "fs.delete" || got[0].State != tc.want {
				t.Errorf("held: got %+v, want fs.delete %s (and the call that ran not listed)", got, tc.want)
			}
		})
	}
}

func heldCall(code string) router.Call {
	return router.Call{Step: 1, Server: "fs", Tool: "delete", Error: &router.Error{Code: code, Message: "…"}}
}
