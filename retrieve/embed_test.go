package retrieve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/retrieve"
)

// embedServer is a fake Ollama answering POST /api/embed in Ollama's wire format (see
// server/routes.go EmbedHandler in ollama v0.34.4): api.EmbedRequest in, with input a string or
// a list of strings; api.EmbedResponse out with unit-length vectors; {"error": …} and 404 for a
// model it does not have, 400 for a bad body. Its vectors are bags of concepts, so that texts
// sharing no word can still be near.
type embedServer struct {
	*httptest.Server
	models []string
	// status, when not 0, answers every request with that status and an error message.
	status atomic.Int32
	// hang makes requests wait until the client gives up (or the test ends).
	hang atomic.Bool
	// pulled false makes every model missing.
	pulled   atomic.Bool
	quit     chan struct{}
	requests atomic.Int64
	inputs   atomic.Int64
}

const fakeDim = 48

// concepts maps words to a shared dimension, the fake model's "meaning".
var concepts = map[string]string{
	"rain": "weather", "umbrella": "weather", "sunny": "weather", "forecast": "weather", "weather": "weather",
	"sum": "add", "plus": "add", "total": "add",
	"product": "multiply", "times": "multiply",
}

func fakeVector(text string) []float32 {
	v := make([]float32, fakeDim)
	for _, w := range strings.Fields(strings.ToLower(text)) {
		w = strings.Trim(w, ".,:;!?()`'\"")
		if c, ok := concepts[w]; ok {
			w = c
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%fakeDim]++
	}
	var sum float64
	for _, x := range v {
		sum += float64(x * x)
	}
	if sum > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / math.Sqrt(sum))
		}
	}
	return v
}

func newEmbedServer(t *testing.T, models ...string) *embedServer {
	t.Helper()
	s := &embedServer{models: models, quit: make(chan struct{})}
	s.pulled.Store(true)
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.quit) }) // runs first: releases hung requests
	return s
}

func (s *embedServer) url(t *testing.T) *url.URL {
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *embedServer) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/embed" {
		http.NotFound(w, r)
		return
	}
	s.requests.Add(1)
	var req api.EmbedRequest
	switch err := json.NewDecoder(r.Body).Decode(&req); {
	case errors.Is(err, io.EOF):
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "missing request body"})
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	var inputs []string
	switch in := req.Input.(type) {
	case string:
		if in != "" {
			inputs = append(inputs, in)
		}
	case []any:
		for _, v := range in {
			str, ok := v.(string)
			if !ok {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid input type"})
				return
			}
			inputs = append(inputs, str)
		}
	case nil:
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid input type"})
		return
	}
	if s.hang.Load() {
		select {
		case <-r.Context().Done():
		case <-s.quit:
		}
		return
	}
	if st := s.status.Load(); st != 0 {
		writeJSON(w, int(st), map[string]string{"error": "llama runner process has terminated"})
		return
	}
	if !s.pulled.Load() || !slices.Contains(s.models, req.Model) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("model '%s' not found", req.Model)})
		return
	}
	s.inputs.Add(int64(len(inputs)))
	resp := api.EmbedResponse{Model: req.Model, Embeddings: [][]float32{}}
	for _, in := range inputs {
		resp.Embeddings = append(resp.Embeddings, fakeVector(in))
	}
	writeJSON(w, http.StatusOK, resp)
}

func TestOllamaEmbedderBatches(t *testing.T) {
	srv := newEmbedServer(t, "embedder")
	emb := retrieve.NewOllamaEmbedder(srv.url(t), srv.Client(), retrieve.EmbedderOptions{BatchSize: 32})
	inputs := make([]string, 70)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("text number %d", i)
	}
	vecs, err := emb.Embed(t.Context(), "embedder", inputs)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if got := srv.requests.Load(); got != 3 {
		t.Errorf("got %d requests, want 3 (70 inputs in batches of 32)", got)
	}
	if len(vecs) != len(inputs) {
		t.Fatalf("got %d vectors, want %d", len(vecs), len(inputs))
	}
	for i, v := range vecs {
		if !slices.Equal(v, fakeVector(inputs[i])) {
			t.Fatalf("vector %d: got %v, want the vector of %q", i, v[:4], inputs[i])
		}
	}
}

func TestOllamaEmbedderErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(s *embedServer) (model string, opts retrieve.EmbedderOptions)
		check func(err error) bool
		want  string
	}{
		{"model missing", func(s *embedServer) (string, retrieve.EmbedderOptions) {
			return "absent", retrieve.EmbedderOptions{}
		}, func(err error) bool {
			var se api.StatusError
			return errors.As(err, &se) && se.StatusCode == 404 && strings.Contains(se.ErrorMessage, "'absent' not found")
		}, "api.StatusError 404 naming the model"},
		{"server error", func(s *embedServer) (string, retrieve.EmbedderOptions) {
			s.status.Store(500)
			return "embedder", retrieve.EmbedderOptions{}
		}, func(err error) bool {
			var se api.StatusError
			return errors.As(err, &se) && se.StatusCode == 500 && strings.Contains(se.ErrorMessage, "terminated")
		}, "api.StatusError 500 with the message"},
		{"response too large", func(s *embedServer) (string, retrieve.EmbedderOptions) {
			return "embedder", retrieve.EmbedderOptions{MaxResponseBytes: 100}
		}, func(err error) bool { return errors.Is(err, retrieve.ErrResponseTooLarge) }, "ErrResponseTooLarge"},
		{"timeout", func(s *embedServer) (string, retrieve.EmbedderOptions) {
			s.hang.Store(true)
			return "embedder", retrieve.EmbedderOptions{Timeout: 50 * time.Millisecond}
		}, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }, "context.DeadlineExceeded"},
		{"server down", func(s *embedServer) (string, retrieve.EmbedderOptions) {
			s.Close()
			return "embedder", retrieve.EmbedderOptions{}
		}, func(err error) bool { return err != nil }, "an error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newEmbedServer(t, "embedder")
			u := srv.url(t)
			model, opts := tc.setup(srv)
			_, err := retrieve.NewOllamaEmbedder(u, nil, opts).Embed(t.Context(), model, []string{"some text to embed"})
			if !tc.check(err) {
				t.Errorf("got error %v, want %s", err, tc.want)
			}
		})
	}
}

func newRetriever(t *testing.T, srv *embedServer, model, cache string) *retrieve.Retriever {
	t.Helper()
	emb := retrieve.NewOllamaEmbedder(srv.url(t), srv.Client(), retrieve.EmbedderOptions{BatchSize: 8})
	r, err := retrieve.NewRetriever(retrieve.NewIndex(), emb, retrieve.DenseOptions{Model: model, CachePath: cache})
	if err != nil {
		t.Fatalf("NewRetriever: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestEmbedCacheSurvivesRestart(t *testing.T) {
	srv := newEmbedServer(t, "embedder")
	cache := filepath.Join(t.TempDir(), "vectors.jsonl")
	docs := realTools(t, "determine_body_mass_index", "calculate_compound_interest", "currency_converter",
		"triangle_properties.get", "circle_properties.get", "calculator", "airqualityforeast", "ChatOCR",
		"stellarexplorer", "SummarizeAnything_pr")

	first := newRetriever(t, srv, "embedder", cache)
	if _, err := first.Sync(t.Context(), 1, docs); err != nil {
		t.Fatalf("first Sync: %v", err)
	}
	if got := srv.inputs.Load(); got != int64(len(docs)) {
		t.Fatalf("first build embedded %d texts, want %d", got, len(docs))
	}
	first.Close()

	tests := []struct {
		name         string
		edit         func(docs []retrieve.Doc)
		wantRequests int64
		wantInputs   int64
	}{
		{"same tools", func([]retrieve.Doc) {}, 0, 0},
		{"one description changed", func(d []retrieve.Doc) { d[3].Description += " Also the angles." }, 1, 1},
		{"an example learned", func(d []retrieve.Doc) { d[4].Examples = []string{"round things"} }, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs := slices.Clone(docs)
			tc.edit(docs)
			reqs, ins := srv.requests.Load(), srv.inputs.Load()
			r := newRetriever(t, srv, "embedder", cache)
			if _, err := r.Sync(t.Context(), 2, docs); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			if got := srv.requests.Load() - reqs; got != tc.wantRequests {
				t.Errorf("got %d embed requests, want %d", got, tc.wantRequests)
			}
			if got := srv.inputs.Load() - ins; got != tc.wantInputs {
				t.Errorf("got %d texts embedded, want %d", got, tc.wantInputs)
			}
			res := r.Search(t.Context(), "air quality forecast for my zip code", 3, nil)
			if res.Fallback != "" || len(res.Hits) == 0 || res.Hits[0].Qualified != tool(docs, "airqualityforeast") {
				t.Errorf("search: got %v (fallback %q), want airqualityforeast first and no fallback", res.Hits, res.Fallback)
			}
		})
	}
}

func TestRetrieverFallback(t *testing.T) {
	tests := []struct {
		name string
		// breakBefore breaks the server before Sync, breakAfter after it.
		breakBefore, breakAfter func(s *embedServer)
		model                   string
		syncFails               bool
		want                    string // in Fallback
	}{
		{name: "model missing", model: "absent", syncFails: true, want: "'absent' not found"},
		{name: "server error at sync", model: "embedder", syncFails: true, want: "500",
			breakBefore: func(s *embedServer) { s.status.Store(500) }},
		{name: "server down at sync", model: "embedder", syncFails: true, want: "embedding tools",
			breakBefore: func(s *embedServer) { s.Close() }},
		{name: "server error at query", model: "embedder", want: "embedding query",
			breakAfter: func(s *embedServer) { s.status.Store(500) }},
		{name: "model gone at query", model: "embedder", want: "not found",
			breakAfter: func(s *embedServer) { s.pulled.Store(false) }},
		{name: "server down at query", model: "embedder", want: "embedding query",
			breakAfter: func(s *embedServer) { s.Close() }},
	}
	docs := smallDocs()
	bm25 := retrieve.NewIndex()
	bm25.Sync(1, docs)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newEmbedServer(t, "embedder")
			r := newRetriever(t, srv, tc.model, "")
			if tc.breakBefore != nil {
				tc.breakBefore(srv)
			}
			_, err := r.Sync(t.Context(), 1, docs)
			if (err != nil) != tc.syncFails {
				t.Fatalf("Sync: got error %v, want failure %v", err, tc.syncFails)
			}
			if tc.breakAfter != nil {
				tc.breakAfter(srv)
			}
			query := "weather forecast for Paris"
			res := r.Search(t.Context(), query, 3, nil)
			if !strings.Contains(res.Fallback, tc.want) {
				t.Errorf("got fallback %q, want it to mention %q", res.Fallback, tc.want)
			}
			if want := bm25.Search(query, 3, nil); !slices.Equal(res.Hits, want) {
				t.Errorf("got hits %v, want the BM25 ranking %v", res.Hits, want)
			}
		})
	}
}

func TestRetrieverFusion(t *testing.T) {
	srv := newEmbedServer(t, "embedder")
	r := newRetriever(t, srv, "embedder", "")
	if _, err := r.Sync(t.Context(), 1, smallDocs()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	deny := map[string]bool{"weather.current": true}
	permit := func(q string) bool { return !deny[q] }
	tests := []struct {
		name, query string
		k           int
		want        []string
	}{
		// No word of the query is in any tool; the embedding knows rain is weather.
		{"dense finds what words miss", "will I need an umbrella tomorrow", 1, []string{"weather.forecast"}},
		{"named tool stays first", "use calc.add: will it be sunny", 1, []string{"calc.add"}},
		{"all tools, filtered", "zzz", 0, []string{"calc.add", "calc.multiply", "files.list_directory", "files.read_file", "weather.forecast"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Search(t.Context(), tc.query, tc.k, permit)
			if res.Fallback != "" {
				t.Fatalf("got fallback %q, want none", res.Fallback)
			}
			got := names(res.Hits)
			if tc.k == 0 {
				slices.Sort(got)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRetrieverWithoutEmbedder(t *testing.T) {
	idx := retrieve.NewIndex()
	r, err := retrieve.NewRetriever(idx, nil, retrieve.DenseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Sync(t.Context(), 1, smallDocs()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	res := r.Search(t.Context(), "read a file", 2, nil)
	if want := idx.Search("read a file", 2, nil); res.Fallback != "" || !slices.Equal(res.Hits, want) {
		t.Errorf("got %v (fallback %q), want %v and no fallback", res.Hits, res.Fallback, want)
	}
}
