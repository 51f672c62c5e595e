//go:build realollama

package realollama_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/ollama/ollama/api"

	"toolrouter/config"
	"toolrouter/internal/bfcltools"
	"toolrouter/inventory"
	"toolrouter/provider"
	"toolrouter/router"
)

// BenchmarkPhase1Rest measures, on the real server, what the format, the logprobs and the enum's
// size each add to a phase-1 call (what a whole route costs by round and reasoning setting is
// go run ./bench cost, written to docs/benchmarks.md):
//
//	eval "$(scripts/real-ollama up)"
//	go test -tags realollama -run '^$' -bench . -benchtime 5x ./internal/realollama/
//
// rest-ms is total − load − prefill − decode, by Ollama's own counters.

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkPhase1Rest makes one phase-1 call (the cache warm after the first) over 10, 30 and 200
// BFCL tools as the router sends it (format and logprobs), without logprobs, and without a format,
// reporting the rest of each call and the decode time per token: whether the time outside prefill
// and decode grows with the enum and the format schema's size, and what the grammar and the
// logprobs add per generated token.
func BenchmarkPhase1Rest(b *testing.B) {
	o := realOllama(b)
	for _, n := range []int{10, 30, 200} {
		big, fns := bfcltools.Server(b, n)
		inv := inventory.New(map[string]config.Server{"big": builtin("big")},
			inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"big": big}})
		inv.Start(context.Background())
		b.Cleanup(inv.Close)
		variants := []string{"format+logprobs", "format", "none"}
		if n > 10 {
			variants = append(variants, "format-enum10")
		}
		for _, variant := range variants {
			format, logprobs := variant != "none", variant == "format+logprobs"
			b.Run(fmt.Sprintf("tools=%d/%s", n, variant), func(b *testing.B) {
				rec := newRecorder(b, o)
				rt := newRouter(b, o, rec, inv, router.Settings{MaxToolCalls: 1,
					Options: map[string]any{"temperature": 0, "seed": 42, "num_ctx": 32768}})
				var p1 *exchange
				if _, err := rt.Route(context.Background(), router.Request{Query: fns[0].Question}); err != nil {
					b.Fatal(err)
				}
				if xs := phase1(rec.since(0)); len(xs) > 0 {
					p1 = xs[0]
				}
				if p1 == nil {
					b.Fatal("no phase-1 call recorded")
				}
				req := p1.req
				if !format {
					req.Format = nil
				}
				if !logprobs {
					req.Logprobs, req.TopLogprobs = false, 0
				}
				if variant == "format-enum10" {
					req.Format = enumCut(b, req.Format, 10) // the same prompt, a format of 10 names
				}
				stream := false
				req.Stream = &stream
				var rest, decode, decodeMS float64
				for b.Loop() {
					final := replay(b, o, &req)
					st := provider.StatsOf(final.Metrics)
					rest += st.RestMS
					decode += float64(st.DecodeTokens)
					decodeMS += msOf(final.EvalDuration)
				}
				b.ReportMetric(rest/float64(b.N), "rest-ms")
				b.ReportMetric(decode/float64(b.N), "decode-tok")
				b.ReportMetric(decodeMS/max(decode, 1), "ms/decode-tok")
				b.ReportMetric(float64(len(req.Format)), "format-bytes")
			})
		}
	}
}

// replay sends req to the real server again and returns its final message.
func replay(b *testing.B, o ollama, req *api.ChatRequest) api.ChatResponse {
	b.Helper()
	var final api.ChatResponse
	if err := o.client().Chat(context.Background(), req, func(r api.ChatResponse) error {
		if r.Done {
			final = r
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return final
}

// enumCut is a phase-1 format with its tool enum cut to the first n names, its text otherwise as
// sent: the grammar follows the order of the schema's keys, which re-encoding would sort.
func enumCut(b testing.TB, format json.RawMessage, n int) json.RawMessage {
	b.Helper()
	const key = `"items":{"type":"string","enum":`
	i := bytes.Index(format, []byte(key))
	if i < 0 {
		b.Fatalf("no tool enum in %s", format)
	}
	start := i + len(key)
	end := start + bytes.IndexByte(format[start:], ']') + 1
	var names []string
	if err := json.Unmarshal(format[start:end], &names); err != nil {
		b.Fatal(err)
	}
	cut, err := json.Marshal(names[:min(n, len(names))])
	if err != nil {
		b.Fatal(err)
	}
	return slices.Concat(format[:start], cut, format[end:])
}

// BenchmarkContinuedList measures the call that writes phase 1's list of calls under prefill, over
// 10, 30 and 200 BFCL tools: as the router sends it (every qualified name), with the names' server
// prefix dropped ("short"), and with the enum cut to its first 10 names ("head10"), the same
// prompt and answer so far each time. It reports the decoded tokens, the call's time and the
// decode time per token: whether fewer or shorter alternatives pay. With random weights the
// tokens a variant decodes are not comparable (a logit a hair apart picks another piece), the
// time per token is.
//
//	go test -tags realollama -run '^$' -bench ContinuedList -benchtime 5x ./internal/realollama/
func BenchmarkContinuedList(b *testing.B) {
	o := realOllama(b)
	for _, n := range []int{10, 30, 200} {
		big, fns := bfcltools.Server(b, n)
		inv := inventory.New(map[string]config.Server{"big": builtin("big")},
			inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"big": big}})
		inv.Start(context.Background())
		b.Cleanup(inv.Close)
		rec := newRecorder(b, o)
		rt := newRouter(b, o, rec, inv, router.Settings{MaxToolCalls: 1, Prefill: true, Renders: true,
			Options: map[string]any{"temperature": 0, "seed": 42, "num_ctx": 32768}})
		if _, err := rt.Route(context.Background(), router.Request{Query: fns[0].Question}); err != nil {
			b.Fatal(err)
		}
		var list *exchange
		for _, x := range rec.since(0) {
			if m := x.req.Messages; len(m) > 0 && m[len(m)-1].Role == "assistant" && strings.HasSuffix(m[len(m)-1].Content, `"calls":`) {
				list = x
			}
		}
		if list == nil {
			b.Skipf("%d tools: the model chose no tool, so no list was asked for", n)
		}
		for _, variant := range []string{"qualified", "short", "head10"} {
			b.Run(fmt.Sprintf("tools=%d/%s", n, variant), func(b *testing.B) {
				req := list.req
				var f map[string]any
				if err := json.Unmarshal(req.Format, &f); err != nil {
					b.Fatal(err)
				}
				items := f["items"].(map[string]any)
				names := items["enum"].([]any)
				switch variant {
				case "short":
					short := make([]any, len(names))
					for i, n := range names {
						short[i] = strings.TrimPrefix(n.(string), "big.")
					}
					items["enum"] = short
				case "head10":
					items["enum"] = names[:min(10, len(names))]
				}
				format, err := json.Marshal(f) // keys sorted: items, maxItems, minItems, type; the grammar is the same
				if err != nil {
					b.Fatal(err)
				}
				req.Format = format
				stream := false
				req.Stream = &stream
				var tokens, total, decodeMS float64
				for b.Loop() {
					final := replay(b, o, &req)
					tokens += float64(final.EvalCount)
					total += msOf(final.TotalDuration)
					decodeMS += msOf(final.EvalDuration)
				}
				b.ReportMetric(tokens/float64(b.N), "decode-tok")
				b.ReportMetric(total/float64(b.N), "call-ms")
				b.ReportMetric(decodeMS/max(tokens, 1), "ms/decode-tok")
			})
		}
	}
}
