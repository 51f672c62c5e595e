package retrieve

import (
	"math"
	"slices"
	"strings"
	"sync"
)

// scratch is one search's working memory, pooled so that a search allocates nothing in
// proportion to the number of documents: scores and states are indexed by document id and only
// the entries in touched are set, and reset, per search.
type scratch struct {
	score   []float64
	state   []uint8
	touched []int32
}

// Document states during one search.
const (
	seen   uint8 = 1 << iota // permit has been asked
	denied                   // permit said no: never scored or returned
	named                    // the query names the tool verbatim
)

// queryTerm is one index key a query looks up.
type queryTerm struct {
	key string
	// exact are the query's words with this stem as written (exactKey), for the example fields.
	exact []string
	// weight scales the term's score: 1, or less for a weaker match (looseWeight, abbrevWeight,
	// dateWeight).
	weight float64
	// of, for a partial match of a word in tool names, is the word's stem: the documents it is in
	// count in the term's document frequency, which says how common the query's word is rather
	// than how rare the partial key.
	of string
}

// queryTerms returns the keys of a query, each once, sorted by key: the stem of each word (with
// the word as written) and its partial matches in tool names (partialQueryKeys) that terms
// holds, the evidence of operators and file names, and the stem of "date" when the query asks
// for one (asksDate).
func queryTerms(query string, terms map[string][]posting, m Matching) []queryTerm {
	at := map[string]int{}
	var out []queryTerm
	// add adds key with weight w, or raises the weight of the key already there.
	add := func(key string, w float64) int {
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, queryTerm{key: key})
		}
		out[i].weight = max(out[i].weight, w)
		return i
	}
	words(query, m, func(word, stem string) {
		i := add(stem, 1)
		if k := exactKey + word; !slices.Contains(out[i].exact, k) {
			out[i].exact = append(out[i].exact, k)
		}
		partialQueryKeys(word, stem, m, func(prefix, text string) {
			if len(terms[prefix+text]) == 0 {
				return // most are in no tool's name: not worth a key
			}
			w := looseWeight
			if prefix == abbrevKey {
				w = abbrevWeight
			}
			if j := add(prefix+text, w); out[j].of == "" {
				out[j].of = stem
			}
		})
	})
	if !m.NoRelated {
		var stems []string
		for _, t := range out {
			if t.weight == 1 {
				stems = append(stems, t.key)
			}
		}
		for _, s := range stems {
			related(s, func(r string) {
				if len(terms[r]) > 0 {
					add(r, relatedWeight)
				}
			})
		}
	}
	toks := lexTokens(query)
	evidenceIn(query, toks, func(k string) { add(k, 1) })
	if !m.NoDate && asksDate(toks) {
		add(dateStem, dateWeight)
	}
	if !m.NoValues {
		queryValues(query, toks, func(k string) {
			if len(terms[k]) > 0 {
				add(k, valueWeight)
			}
		})
	}
	slices.SortFunc(out, func(a, b queryTerm) int { return strings.Compare(a.key, b.key) })
	return out
}

// dateStem is the index key of the word "date".
var dateStem = Stem("date")

// ranked is a scored document during a search.
type ranked struct {
	id    int32
	score float64
	named bool
}

// Search returns the k best tools for query among those permit allows (nil permits all), best
// first: the tools the query matches, by BM25F score, then, when fewer than k match, the other
// permitted tools by name with score 0, so that asking for at least as many tools as there are
// returns them all. k ≤ 0 asks for all. A tool the query names verbatim ("use weather.forecast",
// or a bare identifier-like name such as "get_weather") ranks above every tool it does not name.
// permit is asked about a tool before the tool is scored; a tool it denies is neither scored nor
// returned. Ties break by qualified name.
func (x *Index) Search(query string, k int, permit func(qualified string) bool) []Hit {
	hits, _ := x.cur.Load().search(&x.scratch, query, k, permit)
	return hits
}

// search is Index.Search on one snapshot, with how many of the query's words the index knows.
func (s *snapshot) search(pool *sync.Pool, query string, k int, permit func(string) bool) ([]Hit, coverage) {
	r, cov := s.rank(pool, query, k, permit)
	hits := make([]Hit, len(r), max(len(r), min(k, s.live)))
	for i, h := range r {
		hits[i] = Hit{Qualified: s.docs[h.id].qualified, Score: h.score}
	}
	return s.pad(hits, k, permit), cov
}

// rank scores the documents that share a term with query or that it names, and returns the best k
// (all for k ≤ 0) in order, with how many of the query's words the index knows.
func (s *snapshot) rank(pool *sync.Pool, query string, k int, permit func(string) bool) ([]ranked, coverage) {
	terms := queryTerms(query, s.terms, s.match)
	cov := s.coverage(query, terms)
	names := nameCandidates(query)
	sc, _ := pool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	if len(sc.score) < len(s.docs) {
		sc.score = make([]float64, len(s.docs))
		sc.state = make([]uint8, len(s.docs))
	}
	defer func() {
		for _, id := range sc.touched {
			sc.score[id], sc.state[id] = 0, 0
		}
		sc.touched = sc.touched[:0]
		pool.Put(sc)
	}()
	allowed := func(id int32) bool {
		st := sc.state[id]
		if st == 0 {
			st = seen
			if permit != nil && !permit(s.docs[id].qualified) {
				st |= denied
			}
			sc.state[id] = st
			sc.touched = append(sc.touched, id)
		}
		return st&denied == 0
	}

	// Terms in sorted order: the float additions happen in the same order every time, so equal
	// indexes give bit-equal scores.
	live := float64(s.live)
	var bound float64 // above any score a document can reach without being named
	for _, qt := range terms {
		ps := s.terms[qt.key]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		if qt.of != "" {
			df += float64(len(s.terms[qt.of]))
		}
		idf := qt.weight * math.Log(1+(live-df+0.5)/(df+0.5))
		bound += idf * (k1 + 1)
		// The postings of the word as written, walked beside the stem's (both in ascending ids),
		// tell an exact match in the example fields from a stem-only one. When the word is
		// nowhere as written, every match is a stem match and counts in full.
		var exact [][]posting
		for _, k := range qt.exact {
			if l := s.terms[k]; len(l) > 0 {
				exact = append(exact, l)
			}
		}
		at := make([]int, len(exact))
		for _, p := range ps {
			if !allowed(p.doc) {
				continue
			}
			var exactTF [numFields]uint16
			for i, l := range exact {
				for at[i] < len(l) && l[at[i]].doc < p.doc {
					at[i]++
				}
				if at[i] < len(l) && l[at[i]].doc == p.doc {
					exactTF[fieldExamples] += l[at[i]].tf[fieldExamples]
					exactTF[fieldLearned] += l[at[i]].tf[fieldLearned]
				}
			}
			norms := s.norms[int(p.doc)*numFields : int(p.doc)*numFields+numFields]
			var tf float64
			for f, n := range p.tf {
				if n == 0 {
					continue
				}
				m := float64(n)
				if len(exact) > 0 && exampleField(f) {
					m = stemOnly*m + (1-stemOnly)*float64(min(exactTF[f], n))
				}
				tf += m * norms[f]
			}
			sc.score[p.doc] += idf * tf * (k1 + 1) / (tf + k1)
		}
	}
	for _, key := range names {
		for _, p := range s.terms[key] {
			if allowed(p.doc) {
				sc.state[p.doc] |= named
			}
		}
	}

	h := topK{k: k, less: func(a, b ranked) bool { return s.worse(a, b) }}
	for _, id := range sc.touched {
		st := sc.state[id]
		if st&denied != 0 || (sc.score[id] == 0 && st&named == 0) {
			continue
		}
		r := ranked{id: id, score: sc.score[id], named: st&named != 0}
		if r.named {
			r.score += bound + 1
		}
		h.push(r)
	}
	return h.sorted(), cov
}

// worse reports whether a ranks below b: a lower score, or an equal score and a later name.
func (s *snapshot) worse(a, b ranked) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return s.docs[a.id].qualified > s.docs[b.id].qualified
}

// pad appends permitted tools not in hits, by name with score 0, until there are k (all for
// k ≤ 0).
func (s *snapshot) pad(hits []Hit, k int, permit func(string) bool) []Hit {
	if k > 0 && len(hits) >= k || len(hits) >= s.live {
		return hits
	}
	in := make(map[string]bool, len(hits))
	for _, h := range hits {
		in[h.Qualified] = true
	}
	for _, id := range s.byName {
		if k > 0 && len(hits) >= k {
			break
		}
		q := s.docs[id].qualified
		if in[q] || permit != nil && !permit(q) {
			continue
		}
		hits = append(hits, Hit{Qualified: q})
	}
	return hits
}

// topK keeps the k best of what is pushed (all when k ≤ 0) in a min-heap ordered by less
// ("ranks below").
type topK struct {
	k    int
	less func(a, b ranked) bool
	h    []ranked
}

func (t *topK) push(r ranked) {
	if t.k <= 0 {
		t.h = append(t.h, r)
		return
	}
	if len(t.h) < t.k {
		t.h = append(t.h, r)
		// Sift up.
		i := len(t.h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !t.less(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if !t.less(t.h[0], r) {
		return
	}
	t.h[0] = r
	// Sift down.
	i := 0
	for {
		l, m := 2*i+1, i
		if l < len(t.h) && t.less(t.h[l], t.h[m]) {
			m = l
		}
		if l+1 < len(t.h) && t.less(t.h[l+1], t.h[m]) {
			m = l + 1
		}
		if m == i {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// sorted returns what was kept, best first.
func (t *topK) sorted() []ranked {
	slices.SortFunc(t.h, func(a, b ranked) int {
		switch {
		case t.less(b, a):
			return -1
		case t.less(a, b):
			return 1
		}
		return 0
	})
	return t.h
}
