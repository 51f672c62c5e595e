//go:build realollama

package realollama_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
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

// The figures docs/benchmarks.md quotes for a route's model calls on the real server, as Go
// benchmarks reporting Ollama's own counters per call:
//
//	eval "$(scripts/real-ollama up)"
//	go test -tags realollama -run '^$' -bench . -benchtime 3x ./internal/realollama/
//
// decode-tok is eval_count, text-tok the same answer's tokens by Qwen3's tokenizer (textTokens),
// rest-ms is total − load − prefill − decode, uncached-% is the share of the prompt not served from
// the server's cache (prompt_eval_count − prompt_eval_cached_count).

// callCost is one model call's counters as the server reported them.
type callCost struct {
	decode, prompt, uncached int
	restMS, prefillMS        float64
}

func costOf(x *exchange) (callCost, bool) {
	if x.final == nil {
		return callCost{}, false
	}
	st := provider.StatsOf(x.final.Metrics)
	return callCost{decode: st.DecodeTokens, prompt: st.PromptTokens, uncached: st.UncachedTokens,
		restMS: st.RestMS, prefillMS: st.PrefillMS}, true
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// textTokens is how many tokens Qwen3's tokenizer makes of text, counted by the real server (a raw
// prompt of the text alone, on the plain tiny model): what a trained model, which writes the
// vocabulary's merged tokens, decodes for the same answer. The random-weight json variant picks
// whichever token the format allows with the highest random logit, often a piece of one to three
// characters, so its own decode count runs higher.
func textTokens(b testing.TB, o ollama, text string) int {
	b.Helper()
	stream, raw := false, true
	var n int
	err := o.client().Generate(context.Background(), &api.GenerateRequest{Model: o.tiny, Prompt: text, Raw: raw, Stream: &stream,
		Options: map[string]any{"num_predict": 1, "num_ctx": 4096}}, func(r api.GenerateResponse) error {
		if r.Done {
			n = r.PromptEvalCount
		}
		return nil
	})
	if err != nil {
		b.Fatalf("counting the tokens of %q: %v", text, err)
	}
	return n
}

// BenchmarkRouteRounds routes one query over the built-in calculator and clock with the default
// budget of 4 calls, for each router.reasoning: the json variant always asks for more, so each
// route runs 4 rounds of phase 1 and phase 2. It reports phase 1's decode tokens, rest and
// uncached share per round, and the route's wall time.
func BenchmarkRouteRounds(b *testing.B) {
	o := realOllama(b)
	inv := newInventory(b, nil)
	for _, reasoning := range []router.Reasoning{router.ReasoningNone, router.ReasoningBrief, router.ReasoningFull} {
		b.Run("reasoning="+string(reasoning), func(b *testing.B) {
			rec := newRecorder(b, o)
			rt := newRouter(b, o, rec, inv, router.Settings{Reasoning: reasoning})
			const rounds = 4
			var sum [rounds]callCost
			var calls, text [rounds]int
			var wall time.Duration
			queries := []string{"what is 2 plus 40?", "what time is it in Tokyo?", "add 17 and 25"}
			for i := 0; b.Loop(); i++ {
				n := rec.mark()
				start := time.Now()
				if _, err := rt.Route(context.Background(), router.Request{Query: queries[i%len(queries)]}); err != nil {
					b.Fatal(err)
				}
				wall += time.Since(start)
				for r, x := range phase1(rec.since(n)) {
					c, ok := costOf(x)
					if !ok || r >= rounds {
						continue
					}
					text[r] += textTokens(b, o, x.content())
					sum[r].decode += c.decode
					sum[r].prompt += c.prompt
					sum[r].uncached += c.uncached
					sum[r].restMS += c.restMS
					calls[r]++
				}
			}
			for r := range rounds {
				if calls[r] == 0 {
					continue
				}
				n := float64(calls[r])
				b.ReportMetric(float64(sum[r].decode)/n, fmt.Sprintf("r%d-decode-tok", r+1))
				b.ReportMetric(float64(text[r])/n, fmt.Sprintf("r%d-text-tok", r+1))
				b.ReportMetric(sum[r].restMS/n, fmt.Sprintf("r%d-rest-ms", r+1))
				b.ReportMetric(100*float64(sum[r].uncached)/float64(max(1, sum[r].prompt)), fmt.Sprintf("r%d-uncached-%%", r+1))
			}
			b.ReportMetric(msOf(wall)/float64(b.N), "route-ms")
		})
	}
}

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
				c := o.client()
				for b.Loop() {
					var final api.ChatResponse
					if err := c.Chat(context.Background(), &req, func(r api.ChatResponse) error {
						if r.Done {
							final = r
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
					cost, _ := costOf(&exchange{final: &final})
					rest += cost.restMS
					decode += float64(cost.decode)
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
