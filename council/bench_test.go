package council_test

import (
	"context"
	"testing"
	"time"

	"toolrouter/council"
)

// BenchmarkCouncilWallTime shows that a council's wall time is its critical path — the slowest
// member, plus the slowest reviewer when peer review runs, plus the chairman — and not the sum of
// its calls. Members answer after fixed delays of 20, 40 and 60 ms (two on fake Ollama servers,
// one on a fake OpenAI-compatible server), the chairman after 30 ms; everything goes over HTTP.
//
//	go test ./council -run '^$' -bench CouncilWallTime -benchtime 20x
func BenchmarkCouncilWallTime(b *testing.B) {
	delays := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond}
	chairDelay := 30 * time.Millisecond
	fixed := func(d time.Duration, text string) script {
		return func(stage int, prompt string) turn {
			if stage == 2 {
				return turn{text: rankByQuality(prompt), delay: d}
			}
			return turn{text: text, delay: d}
		}
	}
	wires := []wire{ollamaWire, openaiWire, ollamaWire}
	var members []council.Member
	var sum, slowest time.Duration
	for i, d := range delays {
		m, _ := newMember(b, spec{name: string(rune('a' + i)), modelID: "m", wire: wires[i], script: fixed(d, "407. quality=1")})
		members = append(members, m)
		sum += d
		slowest = max(slowest, d)
	}
	chair, _ := newMember(b, spec{name: "chair", modelID: "c", wire: openaiWire, script: fixed(chairDelay, "407.")})
	for _, peer := range []bool{false, true} {
		name := "peer_review=off"
		wantSum, wantPath := sum+chairDelay, slowest+chairDelay
		if peer {
			name = "peer_review=on"
			wantSum, wantPath = 2*sum+chairDelay, 2*slowest+chairDelay
		}
		b.Run(name, func(b *testing.B) {
			c := council.New(members, chair, council.Options{PeerReview: peer, Quorum: 3})
			var wall time.Duration
			n := 0
			for b.Loop() {
				start := time.Now()
				res, err := c.Run(context.Background(), council.Input{Query: "What is 17*23+4^2?"}, nil)
				wall += time.Since(start)
				n++
				if err != nil || res.AnsweredBy != council.AnsweredByCouncil {
					b.Fatalf("got %v, %+v", err, res)
				}
			}
			b.ReportMetric(float64(wall.Microseconds())/1000/float64(n), "wall-ms/op")
			b.ReportMetric(float64(wantPath.Milliseconds()), "critical-path-ms")
			b.ReportMetric(float64(wantSum.Milliseconds()), "sum-of-calls-ms")
		})
	}
}
