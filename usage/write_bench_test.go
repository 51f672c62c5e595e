package usage

import (
	"fmt"
	"testing"
	"time"

	"toolrouter/internal/services"
)

// typical is a batch of n records as a routed request leaves them: one tool call and two model
// calls (selection and arguments) each.
func typical(n int) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = Record{Start: base.Add(time.Duration(i) * time.Second), Org: "acme", Team: "research", Agent: "bot",
			KeyName: fmt.Sprintf("key-%d", i%8), Endpoint: "/v1/route", Status: 200, UseTool: true, Stopped: "answered",
			Duration: 40 * time.Millisecond,
			Tools:    []ToolCall{{Server: "calculator", Tool: "add", Outcome: OutcomeOK, DurationMS: 2}},
			Models: []ModelCall{
				{Phase: "select", Model: "qwen3:4b", PromptTokens: 900, CompletionTokens: 20, DurationMS: 15},
				{Phase: "arguments", Model: "qwen3:4b", PromptTokens: 400, CompletionTokens: 30, DurationMS: 12},
			}}
	}
	return out
}

// benchWrite measures writing one batch of 256 typical records.
func benchWrite(b *testing.B, s *Store) {
	recs := typical(256)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.write(b.Context(), recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(recs)), "µs/record")
}

func BenchmarkWriteSQLite(b *testing.B) {
	s := openSQLite(b, "")
	defer s.Close()
	benchWrite(b, s)
}

func BenchmarkWritePostgres(b *testing.B) {
	pg := services.Postgres(b)
	s, err := Open(b.Context(), "", pg.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchWrite(b, s)
}
