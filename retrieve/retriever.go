package retrieve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// rrfK is the constant of reciprocal rank fusion (Cormack et al. 2009): a tool's fused score is
// the sum over the rankings of 1/(rrfK + rank).
const rrfK = 60

// DenseOptions configure a Retriever's dense side; only Model is needed.
type DenseOptions struct {
	// Model is the embedding model (e.g. "nomic-embed-text").
	Model string
	// CachePath is the vector cache, JSON Lines ("": vectors kept in memory only).
	CachePath string
	// Candidates is how many tools of each ranking enter the fusion (0: 100, never fewer than k).
	Candidates int
	// QueryTimeout bounds embedding one query (0: 2 seconds); past it the search falls back.
	QueryTimeout time.Duration
	// SyncBatch is how many tool texts Sync embeds and caches at a time (0: 256).
	SyncBatch int
}

// Result is a ranking and, when dense retrieval was wanted but not used, why.
type Result struct {
	Hits []Hit
	// Fallback, when not empty, says why the ranking is BM25 only (the embedding model is missing
	// or unreachable, say).
	Fallback string
	// Weak says the ranking was lexical and the query reads as another language than the tools':
	// fewer than half of its words are in any tool's text and few are English function words
	// (see coverage.weak): its best tools may be no better than any others. A ranking fused with
	// embedding similarity is never weak.
	Weak bool
}

// Retriever ranks tools with the BM25F index and, when it has an embedder, fuses the ranking with
// one by embedding similarity (reciprocal rank fusion). Without an embedder, or when embedding
// fails, it ranks by BM25F alone and says so in Result.Fallback; it never fails a search.
type Retriever struct {
	index *Index
	emb   Embedder
	opts  DenseOptions
	cache *vectorCache

	mu    sync.Mutex // serialises Sync
	dense atomic.Pointer[denseSet]
	// quietUntil (unix ns): after a query could not be embedded, searches skip the embedding
	// model until then instead of each waiting QueryTimeout for a server that is down.
	quietUntil atomic.Int64
}

// queryBackoff is how long searches rank lexically after a query could not be embedded.
const queryBackoff = 30 * time.Second

// denseSet is the tools' vectors for one Sync, immutable.
type denseSet struct {
	names []string
	vecs  [][]float32 // unit length, all of dim dimensions
	dim   int
	// off, when not empty, says why dense retrieval is off.
	off string
}

// NewRetriever returns a retriever over idx. With emb nil it ranks by BM25F only; otherwise it
// embeds with opts.Model and loads the vector cache at opts.CachePath.
func NewRetriever(idx *Index, emb Embedder, opts DenseOptions) (*Retriever, error) {
	if opts.Candidates <= 0 {
		opts.Candidates = 100
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = 2 * time.Second
	}
	if opts.SyncBatch <= 0 {
		opts.SyncBatch = 256
	}
	r := &Retriever{index: idx, emb: emb, opts: opts}
	if emb == nil {
		return r, nil
	}
	if opts.Model == "" {
		return nil, fmt.Errorf("dense retrieval: no embedding model")
	}
	c, err := openVectorCache(opts.CachePath)
	if err != nil {
		return nil, err
	}
	r.cache = c
	r.dense.Store(&denseSet{off: "dense retrieval: tools not embedded yet"})
	return r, nil
}

// Index returns the retriever's lexical index.
func (r *Retriever) Index() *Index { return r.index }

// Close closes the vector cache file.
func (r *Retriever) Close() error {
	if r.cache == nil {
		return nil
	}
	return r.cache.close()
}

// EmbedText is the text of a tool that is embedded: its name, server purpose, description and
// parameters. Examples are left out, so that learning one does not re-embed the tool.
func EmbedText(d Doc) string {
	var b strings.Builder
	b.WriteString(d.qualified())
	b.WriteString(": ")
	b.WriteString(d.Description)
	if d.Purpose != "" {
		b.WriteString("\nServer: ")
		b.WriteString(d.Purpose)
	}
	for i, p := range d.Params {
		if i == 0 {
			b.WriteString("\nParameters:")
		}
		b.WriteString("\n- ")
		b.WriteString(p.Name)
		if p.Description != "" {
			b.WriteString(": ")
			b.WriteString(p.Description)
		}
		if len(p.Enum) > 0 {
			b.WriteString(" (one of ")
			b.WriteString(strings.Join(p.Enum, ", "))
			b.WriteString(")")
		}
	}
	return b.String()
}

// Sync brings the index to docs (see Index.Sync) and, with an embedder, makes sure every tool has
// a vector: cached ones are reused, the others embedded in batches and cached. The lexical index
// is updated whatever happens; an error means dense retrieval is off (searches fall back to BM25F
// and say why) until a later Sync succeeds. It returns the servers reindexed.
func (r *Retriever) Sync(ctx context.Context, version uint64, docs []Doc) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := r.index.Sync(version, docs)
	if r.emb == nil {
		return changed, nil
	}
	if err := r.embedDocs(ctx, docs); err != nil {
		r.dense.Store(&denseSet{off: err.Error()})
		return changed, err
	}
	return changed, nil
}

func (r *Retriever) embedDocs(ctx context.Context, docs []Doc) error {
	model := r.opts.Model
	keys := make([]vecKey, len(docs))
	var missing []vecKey
	var texts []string
	queued := map[vecKey]bool{}
	for i, d := range docs {
		text := EmbedText(d)
		keys[i] = keyOf(model, text)
		if _, ok := r.cache.get(keys[i]); !ok && !queued[keys[i]] {
			queued[keys[i]] = true
			missing = append(missing, keys[i])
			texts = append(texts, text)
		}
	}
	for start := 0; start < len(texts); start += r.opts.SyncBatch {
		end := min(start+r.opts.SyncBatch, len(texts))
		vecs, err := r.emb.Embed(ctx, model, texts[start:end])
		if err != nil {
			return fmt.Errorf("embedding tools with %s: %w", model, err)
		}
		if len(vecs) != end-start {
			return fmt.Errorf("embedding tools with %s: %d vectors for %d texts", model, len(vecs), end-start)
		}
		if err := r.cache.put(missing[start:end], vecs); err != nil {
			return err
		}
	}
	set := &denseSet{names: make([]string, len(docs)), vecs: make([][]float32, len(docs))}
	live := make(map[vecKey]bool, len(keys))
	for i, d := range docs {
		v, _ := r.cache.get(keys[i])
		if i == 0 {
			set.dim = len(v)
		}
		if len(v) != set.dim || len(v) == 0 {
			return fmt.Errorf("embedding tools with %s: vectors of %d and %d dimensions", model, set.dim, len(v))
		}
		set.names[i], set.vecs[i] = d.qualified(), v
		live[keys[i]] = true
	}
	r.dense.Store(set)
	return r.cache.prune(func(k vecKey) bool { return live[k] })
}

// Search ranks the tools permit allows (nil: all) for query, as Index.Search does, fusing the
// BM25F ranking with the embedding ranking when dense retrieval is on. Tools the query names
// verbatim come first either way. Scores are fused scores (or BM25F scores on fallback): they
// order the hits and mean nothing across queries.
func (r *Retriever) Search(ctx context.Context, query string, k int, permit func(qualified string) bool) Result {
	if r.emb == nil {
		return r.lexical(query, k, permit, "")
	}
	ds := r.dense.Load()
	switch {
	case ds.off != "":
		return r.lexical(query, k, permit, ds.off)
	case len(ds.vecs) == 0:
		return r.lexical(query, k, permit, "")
	}
	if until := r.quietUntil.Load(); time.Now().UnixNano() < until {
		return r.lexical(query, k, permit, fmt.Sprintf("embedding model %s failed recently; retrying after %s", r.opts.Model, time.Unix(0, until).UTC().Format(time.RFC3339)))
	}
	qctx, cancel := context.WithTimeout(ctx, r.opts.QueryTimeout)
	qv, err := r.emb.Embed(qctx, r.opts.Model, []string{query})
	cancel()
	switch {
	case err != nil:
		if ctx.Err() == nil { // the search's own caller going away says nothing of the model
			r.quietUntil.Store(time.Now().Add(queryBackoff).UnixNano())
		}
		return r.lexical(query, k, permit, fmt.Sprintf("embedding query with %s: %v", r.opts.Model, err))
	case len(qv) != 1 || len(qv[0]) != ds.dim:
		return r.lexical(query, k, permit, fmt.Sprintf("embedding query with %s: no vector of %d dimensions", r.opts.Model, ds.dim))
	}

	s := r.index.cur.Load()
	n := max(r.opts.Candidates, k)
	type fusedScore struct {
		score float64
		named bool
	}
	fused := map[string]*fusedScore{}
	ranked, _ := s.rank(&r.index.scratch, query, n, permit)
	for i, h := range ranked {
		fused[s.docs[h.id].qualified] = &fusedScore{score: 1.0 / float64(rrfK+i+1), named: h.named}
	}
	for i, name := range ds.nearest(unit(qv[0]), n, permit) {
		if f := fused[name]; f != nil {
			f.score += 1.0 / float64(rrfK+i+1)
		} else {
			fused[name] = &fusedScore{score: 1.0 / float64(rrfK+i+1)}
		}
	}
	hits := make([]Hit, 0, len(fused))
	for name, f := range fused {
		if f.named {
			f.score++ // above any fused score, which is below 2/(rrfK+1)
		}
		// The dense set may be a Sync behind the index: keep to indexed tools.
		if len(s.terms[nameKey+strings.ToLower(name)]) > 0 {
			hits = append(hits, Hit{Qualified: name, Score: f.score})
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Qualified, b.Qualified)
	})
	if k > 0 && len(hits) > k {
		hits = hits[:k]
	}
	return Result{Hits: s.pad(hits, k, permit)}
}

// lexical is the BM25F ranking alone, with why dense retrieval was not used (fallback, "" when it
// is not configured or has no vectors yet).
func (r *Retriever) lexical(query string, k int, permit func(string) bool, fallback string) Result {
	s := r.index.cur.Load()
	hits, cov := s.search(&r.index.scratch, query, k, permit)
	return Result{Hits: hits, Fallback: fallback, Weak: cov.weak()}
}

// nearest returns the names of the n permitted tools (all for n ≤ 0) whose vectors are most
// similar to q (unit length), most similar first, ties by name.
func (ds *denseSet) nearest(q []float32, n int, permit func(string) bool) []string {
	h := topK{k: n, less: func(a, b ranked) bool {
		if a.score != b.score {
			return a.score < b.score
		}
		return ds.names[a.id] > ds.names[b.id]
	}}
	for i, v := range ds.vecs {
		if permit != nil && !permit(ds.names[i]) {
			continue
		}
		h.push(ranked{id: int32(i), score: float64(dot(q, v))})
	}
	best := h.sorted()
	out := make([]string, len(best))
	for i, r := range best {
		out[i] = ds.names[r.id]
	}
	return out
}

func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
