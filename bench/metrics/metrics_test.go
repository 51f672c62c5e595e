package metrics

import (
	"math"
	"testing"
	"time"
)

func TestConfusion(t *testing.T) {
	tests := []struct {
		name        string
		decisions   [][2]bool // needed, used
		degraded    []bool    // needed, for answers that degraded (the model failed)
		p, r, f1    float64
		pOK, rOK, f bool
	}{
		{
			// TP=3 FP=1 FN=2 TN=4: P = 3/4, R = 3/5, F1 = 6/9.
			name: "mixed",
			decisions: [][2]bool{
				{true, true}, {true, true}, {true, true},
				{false, true},
				{true, false}, {true, false},
				{false, false}, {false, false}, {false, false}, {false, false},
			},
			p: 0.75, r: 0.6, f1: 6.0 / 9, pOK: true, rOK: true, f: true,
		},
		{
			// Never uses a tool: precision undefined, recall 0/2, F1 = 0/(0+0+2) = 0.
			name:      "never uses a tool",
			decisions: [][2]bool{{true, false}, {true, false}, {false, false}},
			r:         0, pOK: false, rOK: true, f: true,
		},
		{
			// TP=1 FN=0 plus one degraded tool case: a miss, R = 1/2, F1 = 2/3; P = 1/1.
			name:      "a degraded tool case is a miss",
			decisions: [][2]bool{{true, true}},
			degraded:  []bool{true},
			p:         1, r: 0.5, f1: 2.0 / 3, pOK: true, rOK: true, f: true,
		},
		{
			// A model that always fails: nothing is right, recall 0/2, and the two no-tool cases
			// are not true negatives.
			name:     "a dead model",
			degraded: []bool{true, true, false, false},
			r:        0, pOK: false, rOK: true, f: true,
		},
		{
			// Nothing needs a tool and nothing used one: all undefined.
			name:      "all negatives",
			decisions: [][2]bool{{false, false}},
			pOK:       false, rOK: false, f: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Confusion
			for _, d := range tc.decisions {
				c.Add(d[0], d[1])
			}
			for _, needed := range tc.degraded {
				c.AddDegraded(needed)
			}
			if c.Total() != len(tc.decisions)+len(tc.degraded) || c.Degraded() != len(tc.degraded) {
				t.Fatalf("got total %d, %d degraded; want %d, %d", c.Total(), c.Degraded(), len(tc.decisions)+len(tc.degraded), len(tc.degraded))
			}
			if tn := trueNegatives(tc.decisions); c.TN != tn {
				t.Errorf("got TN %d, want %d: a degraded answer is never a true negative", c.TN, tn)
			}
			check := func(what string, got float64, ok bool, want float64, wantOK bool) {
				t.Helper()
				if ok != wantOK || (ok && math.Abs(got-want) > 1e-12) {
					t.Errorf("%s: got %v (defined %v), want %v (defined %v)", what, got, ok, want, wantOK)
				}
			}
			p, ok := c.Precision()
			check("precision", p, ok, tc.p, tc.pOK)
			r, ok := c.Recall()
			check("recall", r, ok, tc.r, tc.rOK)
			f, ok := c.F1()
			check("F1", f, ok, tc.f1, tc.f)
		})
	}
}

func TestRatio(t *testing.T) {
	var r Ratio
	if _, ok := r.Value(); ok {
		t.Fatal("got a value for an empty ratio, want none")
	}
	for _, ok := range []bool{true, false, true, true} {
		r.Add(ok)
	}
	if v, _ := r.Value(); r.Correct != 3 || r.Total != 4 || v != 0.75 {
		t.Fatalf("got %d/%d = %v, want 3/4 = 0.75", r.Correct, r.Total, v)
	}
}

func TestLatencies(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		in   []time.Duration
		want Latency
	}{
		// Nearest rank: p50 of 10 samples is the 5th, p95 the ceil(9.5) = 10th.
		{"ten", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), Latency{P50: 5 * time.Millisecond, P95: 10 * time.Millisecond, P99: 10 * time.Millisecond, Mean: 5500 * time.Microsecond, Max: 10 * time.Millisecond}},
		// p50 of 3 is the ceil(1.5) = 2nd, p95 the ceil(2.85) = 3rd.
		{"three", ms(30, 10, 20), Latency{P50: 20 * time.Millisecond, P95: 30 * time.Millisecond, P99: 30 * time.Millisecond, Mean: 20 * time.Millisecond, Max: 30 * time.Millisecond}},
		{"one", ms(7), Latency{P50: 7 * time.Millisecond, P95: 7 * time.Millisecond, P99: 7 * time.Millisecond, Mean: 7 * time.Millisecond, Max: 7 * time.Millisecond}},
		{"none", nil, Latency{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Latencies(tc.in); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	// 200 samples 1..200 ms: p95 is the 190th, p99 the 198th.
	var many []time.Duration
	for i := 200; i >= 1; i-- {
		many = append(many, time.Duration(i)*time.Millisecond)
	}
	if got := Latencies(many); got.P95 != 190*time.Millisecond || got.P99 != 198*time.Millisecond || got.P50 != 100*time.Millisecond {
		t.Errorf("got p50 %v p95 %v p99 %v, want 100ms 190ms 198ms", got.P50, got.P95, got.P99)
	}
}

// trueNegatives counts the answers that needed no tool and used none.
func trueNegatives(decisions [][2]bool) int {
	n := 0
	for _, d := range decisions {
		if !d[0] && !d[1] {
			n++
		}
	}
	return n
}
