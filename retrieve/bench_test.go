package retrieve_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"toolrouter/retrieve"
	"toolrouter/retrieve/retrievetest"
)

type realSet struct {
	tools   []retrieve.Doc
	queries []retrievetest.Labeled
}

var realData = sync.OnceValues(func() (realSet, error) {
	dir := retrievetest.DataDir()
	tools, err := retrievetest.Tools(dir)
	if err != nil {
		return realSet{}, err
	}
	qs, err := retrievetest.Queries(dir, tools)
	return realSet{tools, qs}, err
})

// loadReal returns the real tools and labeled queries under bench/data.
func loadReal(tb testing.TB) ([]retrieve.Doc, []retrievetest.Labeled) {
	tb.Helper()
	r, err := realData()
	if err != nil {
		tb.Fatalf("loading bench data: %v", err)
	}
	return r.tools, r.queries
}

var poolSizes = []int{200, 2000, 20000}

// BenchmarkSearch ranks real queries (BFCL and MetaTool) against pools of real tools, asking for
// the best 20 under an access filter that permits every tool.
func BenchmarkSearch(b *testing.B) {
	tools, qs := loadReal(b)
	for _, n := range poolSizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			idx := retrieve.NewIndex()
			idx.Sync(1, retrievetest.Pool(tools, n))
			permit := func(string) bool { return true }
			var took []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				idx.Search(qs[len(took)%len(qs)].Query, 20, permit)
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkBuild indexes pools of real tools from nothing; heap-MB is the heap in use after the
// build, with the index alive, less the heap in use before it.
func BenchmarkBuild(b *testing.B) {
	tools, _ := loadReal(b)
	for _, n := range poolSizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			docs := retrievetest.Pool(tools, n)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var idx *retrieve.Index
			b.ReportAllocs()
			for b.Loop() {
				idx = retrieve.NewIndex()
				idx.Sync(1, docs)
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapInuse-min(before.HeapInuse, after.HeapInuse))/(1<<20), "heap-MB")
			runtime.KeepAlive(idx)
		})
	}
}

// BenchmarkUpdate replaces one server's 20 tools in a 20,000-tool index.
func BenchmarkUpdate(b *testing.B) {
	tools, _ := loadReal(b)
	docs := retrievetest.Pool(tools, 20000)
	idx := retrieve.NewIndex()
	idx.Sync(1, docs)
	var one []retrieve.Doc
	for _, d := range docs {
		if d.Server == docs[0].Server {
			one = append(one, d)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		idx.Update(one[0].Server, one[0].Purpose, one)
	}
}

// hashEmbedder is an in-process Embedder of fixed-size pseudo-random vectors, to measure what
// dense retrieval adds to a search beyond the model's own time.
type hashEmbedder struct{ dim int }

func (h hashEmbedder) Embed(_ context.Context, _ string, inputs []string) ([][]float32, error) {
	out := make([][]float32, len(inputs))
	for i, in := range inputs {
		rng := rand.New(rand.NewPCG(uint64(len(in)), uint64(in[0])))
		v := make([]float32, h.dim)
		for j := range v {
			v[j] = rng.Float32() - 0.5
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkHybridSearch is BenchmarkSearch with dense retrieval fused in, using 768-dimension
// vectors from an in-process embedder (so without the embedding model's time).
func BenchmarkHybridSearch(b *testing.B) {
	tools, qs := loadReal(b)
	for _, n := range poolSizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			r, err := retrieve.NewRetriever(retrieve.NewIndex(), hashEmbedder{dim: 768}, retrieve.DenseOptions{Model: "m"})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Sync(b.Context(), 1, retrievetest.Pool(tools, n)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if res := r.Search(b.Context(), qs[i%len(qs)].Query, 20, nil); res.Fallback != "" {
					b.Fatal(res.Fallback)
				}
				i++
			}
		})
	}
}
