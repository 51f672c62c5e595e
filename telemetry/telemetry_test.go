package telemetry_test

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"toolrouter/internal/testhttp"

	"github.com/ollama/ollama/api"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"toolrouter/access"
	"toolrouter/council"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
	"toolrouter/inventory"
	"toolrouter/observe"
	"toolrouter/retrieve"
	"toolrouter/router"
	"toolrouter/server"
	"toolrouter/telemetry"
)

var quiet = slog.New(slog.DiscardHandler)

// The incoming trace context of the tests: a council's span calling the sidecar.
const (
	traceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan  = "00f067aa0ba902b7"
	traceparent = "00-" + traceID + "-" + parentSpan + "-01"
)

// recorder is a Tracer over the SDK's in-memory exporter.
func recorder(t *testing.T, o telemetry.Options) (*telemetry.Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), o)
	t.Cleanup(func() {
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return tr, exp
}

// fakeModel chooses calculator.add with 2 and 3, reporting tokens.
func fakeModel(t *testing.T) *fakeollama.Server {
	return fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
		if !strings.Contains(string(req.Format), "needs_more") {
			return fakeollama.Reply{Content: `{"a":2,"b":3}`, PromptTokens: 50, CompletionTokens: 5}
		}
		return fakeollama.Reply{Content: `{"reasoning":"r","use_tool":true,"calls":[{"tool":"calculator.add","task":"t"}],"needs_more":false,"direct":true}`,
			PromptTokens: 100, CompletionTokens: 10}
	})
}

// serve runs the API as main wires it, with retrieval on and a phase-1 budget small enough for a
// shortlist, over a real inventory, and returns its base URL.
func serve(t *testing.T, obs observe.Observer) string {
	t.Helper()
	inv := testmcp.Inventory(t, testmcp.NewFaults(), inventory.Options{Logger: quiet})
	ret, err := retrieve.NewRetriever(retrieve.NewIndex(), nil, retrieve.DenseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	model := fakeModel(t)
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second,
		Ranker: retrieve.NewCatalog(ret, nil, quiet), PromptBudget: 400}, quiet)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, ln, server.Deps{Router: rt, Inventory: inv, Model: model.Client(), Observer: obs},
			server.Options{Model: "fake", ModelHost: model.URL, Logger: quiet})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serving: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func post(t *testing.T, url, body string, headers map[string]string) []byte {
	t.Helper()
	status, _, b := testhttp.Send(t, http.MethodPost, url, body, headers)
	if status != http.StatusOK {
		t.Fatalf("POST %s: got %d, want 200 (%s)", url, status, b)
	}
	return b
}

// attrs maps a span's attributes.
func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// wantAttrs checks some of a span's attributes.
func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]any) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		a, ok := got[attribute.Key(k)]
		if !ok {
			t.Errorf("span %q has no %s, want %v", s.Name, k, v)
			continue
		}
		if a.AsInterface() != v {
			t.Errorf("span %q: got %s=%v, want %v", s.Name, k, a.AsInterface(), v)
		}
	}
}

// TestRoutingSpans routes one query through the real server with a traceparent and checks the
// trace: a server span continuing the caller's trace, with the retrieval, the selection, the
// arguments and the tool call under it, each within the request, and GenAI attributes on the
// model calls.
func TestRoutingSpans(t *testing.T) {
	tr, exp := recorder(t, telemetry.Options{})
	base := serve(t, tr)
	for _, probe := range []string{"/healthz", "/readyz"} { // not traced
		resp, err := http.Get(base + probe)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	before := time.Now()
	raw := post(t, base+"/v1/route", `{"query":"please add two and three"}`, map[string]string{"traceparent": traceparent})
	after := time.Now()
	var out router.Outcome
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Shortlists) == 0 || len(out.Calls) != 1 {
		t.Fatalf("got %d shortlists and calls %+v, want a shortlist and one call", len(out.Shortlists), out.Calls)
	}

	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if _, dup := byName[s.Name]; dup {
			t.Errorf("two spans named %q, want one", s.Name)
		}
		byName[s.Name] = s
	}
	root, ok := byName["POST /v1/route"]
	if !ok {
		t.Fatalf("no span POST /v1/route among %v", names(spans))
	}
	if got := root.SpanContext.TraceID().String(); got != traceID {
		t.Errorf("got trace id %s, want the caller's %s", got, traceID)
	}
	if got := root.Parent.SpanID().String(); got != parentSpan || !root.Parent.IsRemote() {
		t.Errorf("got parent %s (remote %v), want the caller's span %s", got, root.Parent.IsRemote(), parentSpan)
	}
	if root.SpanKind != trace.SpanKindServer {
		t.Errorf("got kind %v, want server", root.SpanKind)
	}
	wantAttrs(t, root, map[string]any{"http.route": "/v1/route", "http.request.method": "POST", "http.response.status_code": int64(200),
		"toolrouter.use_tool": true})
	if root.StartTime.Before(before) || root.EndTime.After(after) || !root.EndTime.After(root.StartTime) {
		t.Errorf("request span from %v to %v, want within the request's %v to %v", root.StartTime, root.EndTime, before, after)
	}

	want := []string{"retrieval", "select", "arguments", "execute calculator.add"}
	if len(spans) != 1+len(want) {
		t.Errorf("got spans %v, want the request's and %v", names(spans), want)
	}
	for _, name := range want {
		s, ok := byName[name]
		if !ok {
			t.Errorf("no span %q among %v", name, names(spans))
			continue
		}
		if s.Parent.SpanID() != root.SpanContext.SpanID() || s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("span %q: parent %s in trace %s, want the request span %s", name, s.Parent.SpanID(), s.SpanContext.TraceID(), root.SpanContext.SpanID())
		}
		if s.StartTime.Before(root.StartTime) || s.EndTime.After(root.EndTime) || s.EndTime.Before(s.StartTime) {
			t.Errorf("span %q from %v to %v, want within the request's %v to %v", name, s.StartTime, s.EndTime, root.StartTime, root.EndTime)
		}
		if s.Status.Code == codes.Error {
			t.Errorf("span %q has status error %q, want unset", name, s.Status.Description)
		}
	}
	// The steps follow one another: retrieval, then selection, then arguments, then the call.
	for i := 1; i < len(want); i++ {
		if prev, cur := byName[want[i-1]], byName[want[i]]; cur.StartTime.Before(prev.StartTime) {
			t.Errorf("span %q starts at %v, before %q at %v", want[i], cur.StartTime, want[i-1], prev.StartTime)
		}
	}
	wantAttrs(t, byName["select"], map[string]any{"gen_ai.operation.name": "chat", "gen_ai.system": "ollama",
		"gen_ai.request.model": "fake", "gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.output_tokens": int64(10)})
	wantAttrs(t, byName["arguments"], map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "fake",
		"gen_ai.usage.input_tokens": int64(50), "gen_ai.usage.output_tokens": int64(5)})
	wantAttrs(t, byName["execute calculator.add"], map[string]any{"toolrouter.server": "calculator", "toolrouter.tool": "add",
		"toolrouter.outcome": "ok"})
	for _, s := range spans {
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.String(), "two and three") {
				t.Errorf("span %q attribute %s holds the query: %s", s.Name, a.Key, a.Value.String())
			}
		}
	}
}

func names(spans tracetest.SpanStubs) []string {
	out := make([]string, 0, len(spans))
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// TestCouncilSpans: a council's stages follow one another after the routing, each with one chat
// span per model call starting with its stage; failures set the status; a request without a
// traceparent starts a trace of its own.
func TestCouncilSpans(t *testing.T) {
	tr, exp := recorder(t, telemetry.Options{Systems: map[string]string{"gpt-x": "openai"}})
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &observe.Report{
		Start: start, Duration: 2 * time.Second, Endpoint: "/v1/answer", Method: "POST", Status: 502, ErrorCode: "quorum_not_met",
		Identity: access.Identity{Org: "acme", Team: "research"}, Authenticated: true,
		Outcome: &router.Outcome{Timings: router.Timings{Total: 100}, Trace: []router.Step{
			{Kind: router.StepSelect, Model: "fake", StartMS: 1, DurationMS: 90, Error: "model unreachable"},
		}},
		Council: &council.Result{
			Stage1: []council.Answer{
				{Model: "one", ModelID: "m1", Usage: council.CallUsage{PromptTokens: 11, CompletionTokens: 12, DurationMS: 300}},
				{Model: "two", ModelID: "gpt-x", Error: "timed out", Usage: council.CallUsage{DurationMS: 400}},
			},
			Stage2: []council.Review{{Model: "one", ModelID: "m1", Usage: council.CallUsage{DurationMS: 200}}},
			Stage3: &council.Synthesis{Model: "chair", ModelID: "m3", Usage: council.CallUsage{PromptTokens: 30, CompletionTokens: 40, DurationMS: 500}},
			Usage: council.Usage{Stage1: council.StageUsage{DurationMS: 400}, Stage2: council.StageUsage{DurationMS: 200},
				Stage3: council.StageUsage{DurationMS: 500}, Total: council.StageUsage{DurationMS: 1100}},
		},
		ModelCalls: []observe.ModelCall{{Phase: "completion", Model: "m1", Start: start.Add(1500 * time.Millisecond), Duration: 100 * time.Millisecond}},
	}
	tr.Observe(context.Background(), r)
	spans := exp.GetSpans()
	type want struct {
		parent      string
		from, until time.Duration // since the start
		errored     bool
		attrs       map[string]any
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	wants := map[string]want{
		"POST /v1/answer": {"", 0, ms(2000), true, map[string]any{"toolrouter.identity": "acme/research", "error.type": "quorum_not_met"}},
		"select":          {"POST /v1/answer", ms(1), ms(91), true, map[string]any{"gen_ai.request.model": "fake"}},
		"council":         {"POST /v1/answer", ms(100), ms(1200), false, nil},
		"council stage1":  {"council", ms(100), ms(500), false, nil},
		"council stage2":  {"council", ms(500), ms(700), false, nil},
		"council stage3":  {"council", ms(700), ms(1200), false, nil},
		"chat m3":         {"council stage3", ms(700), ms(1200), false, map[string]any{"gen_ai.usage.input_tokens": int64(30), "gen_ai.usage.output_tokens": int64(40), "toolrouter.council.member": "chair", "toolrouter.phase": "stage3"}},
		"chat gpt-x":      {"council stage1", ms(100), ms(500), true, map[string]any{"gen_ai.system": "openai", "toolrouter.council.member": "two"}},
	}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	count := map[string]int{}
	for _, s := range spans {
		count[s.Name]++
		if s.SpanContext.TraceID() != spans[0].SpanContext.TraceID() {
			t.Errorf("span %q is in trace %s, want one trace", s.Name, s.SpanContext.TraceID())
		}
		w, ok := wants[s.Name]
		if !ok {
			continue
		}
		parent := ""
		if p, ok := byID[s.Parent.SpanID()]; ok {
			parent = p.Name
		} else if s.Parent.IsValid() {
			parent = "elsewhere " + s.Parent.SpanID().String()
		}
		if parent != w.parent {
			t.Errorf("span %q: got parent %q, want %q", s.Name, parent, w.parent)
		}
		if got, want := s.StartTime.Sub(start), w.from; got != want {
			t.Errorf("span %q starts %v after the request, want %v", s.Name, got, want)
		}
		if got, want := s.EndTime.Sub(start), w.until; got != want {
			t.Errorf("span %q ends %v after the request, want %v", s.Name, got, want)
		}
		if errored := s.Status.Code == codes.Error; errored != w.errored {
			t.Errorf("span %q: got error status %v (%q), want %v", s.Name, errored, s.Status.Description, w.errored)
		}
		wantAttrs(t, s, w.attrs)
	}
	// m1 answered in stage 1 and 2 and made the completion.
	if count["chat m1"] != 3 {
		t.Errorf("got %d chat m1 spans, want 3 (stage 1, stage 2, the completion); spans %v", count["chat m1"], names(spans))
	}
	for name := range wants {
		if count[name] != 1 {
			t.Errorf("got %d spans %q, want 1; spans %v", count[name], name, names(spans))
		}
	}
}

// TestFromEnv: traces are on only when the standard variables ask for them, and a protocol or
// exporter this package does not speak is an error naming the variable.
func TestFromEnv(t *testing.T) {
	vars := []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"}
	tests := []struct {
		name    string
		env     map[string]string
		wantOn  bool
		wantErr string
	}{
		{"nothing set", nil, false, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, ""},
		{"exporter otlp alone", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false, ""},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false, ""},
		{"http/protobuf", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"}, false, `OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported`},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"grpc while off", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, ""},
		{"another exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, `OTEL_TRACES_EXPORTER="zipkin" is not supported`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range vars {
				t.Setenv(v, tc.env[v])
			}
			tr, err := telemetry.FromEnv(context.Background(), telemetry.Options{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if on := tr != nil; on != tc.wantOn {
				t.Fatalf("got traces on %v, want %v", on, tc.wantOn)
			}
			if tr != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := tr.Shutdown(ctx); err != nil {
					t.Errorf("shutdown with nothing to flush: %v", err)
				}
			}
		})
	}
}

// TestOTLPExport configures traces only through the OTEL_* variables and checks that a request's
// spans reach an OTLP/HTTP receiver, as protobuf at /v1/traces, once Shutdown has flushed them,
// with the service name and the caller's trace id.
func TestOTLPExport(t *testing.T) {
	got := make(chan *coltracepb.ExportTraceServiceRequest, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("receiver got %s %s (%s), want POST /v1/traces of protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(io.LimitReader(body, 16<<20))
		req := &coltracepb.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(b, req)
		}
		if err != nil {
			t.Errorf("receiver: decoding the export: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- req
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(receiver.Close)
	for _, v := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		t.Setenv(v, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "sidecar-under-test")

	tr, err := telemetry.FromEnv(context.Background(), telemetry.Options{})
	if err != nil || tr == nil {
		t.Fatalf("FromEnv: got %v, %v, want a tracer", tr, err)
	}
	base := serve(t, tr)
	post(t, base+"/v1/route", `{"query":"please add two and three"}`, map[string]string{"traceparent": traceparent})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	var spans []string
	service := ""
	for len(got) > 0 {
		req := <-got
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans = append(spans, s.Name)
					if id := hex.EncodeToString(s.TraceId); id != traceID {
						t.Errorf("span %q arrived in trace %s, want the caller's %s", s.Name, id, traceID)
					}
					if s.Name == "POST /v1/route" && hex.EncodeToString(s.ParentSpanId) != parentSpan {
						t.Errorf("request span arrived with parent %x, want %s", s.ParentSpanId, parentSpan)
					}
				}
			}
		}
	}
	slices.Sort(spans)
	want := []string{"POST /v1/route", "arguments", "execute calculator.add", "retrieval", "select"}
	if !slices.Equal(spans, want) {
		t.Errorf("the receiver got spans %v, want %v", spans, want)
	}
	if service != "sidecar-under-test" {
		t.Errorf("got service.name %q, want OTEL_SERVICE_NAME's", service)
	}
}

// TestUnsampledCallerRecordsNothing: a caller whose traceparent says its trace is not sampled
// gets no spans recorded under the default sampler.
func TestUnsampledCallerRecordsNothing(t *testing.T) {
	tr, exp := recorder(t, telemetry.Options{})
	tr.Observe(context.Background(), &observe.Report{Start: time.Now(), Duration: time.Second, Endpoint: "/v1/route", Method: "POST", Status: 200,
		Header: func(name string) string {
			if name == "traceparent" {
				return "00-" + traceID + "-" + parentSpan + "-00"
			}
			return ""
		},
		Outcome: &router.Outcome{Trace: []router.Step{{Kind: router.StepSelect, Model: "fake", DurationMS: 5}}}})
	if spans := exp.GetSpans(); len(spans) != 0 {
		t.Errorf("got spans %v for an unsampled caller, want none", names(spans))
	}
	// The same report from a sampled caller is recorded.
	tr.Observe(context.Background(), &observe.Report{Start: time.Now(), Duration: time.Second, Endpoint: "/v1/route", Method: "POST", Status: 200,
		Header:  func(name string) string { return map[string]string{"traceparent": traceparent}[name] },
		Outcome: &router.Outcome{Trace: []router.Step{{Kind: router.StepSelect, Model: "fake", DurationMS: 5}}}})
	if got := names(exp.GetSpans()); !slices.Equal(got, []string{"select", "POST /v1/route"}) {
		t.Errorf("got spans %v for a sampled caller, want select and the request's", got)
	}
}
