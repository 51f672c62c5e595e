package retrieve

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
)

// The fields of a document, each weighted and length-normalised on its own (BM25F).
const (
	fieldName        = iota // the tool's name split into words
	fieldPurpose            // the server's purpose and name
	fieldDescription        // the tool's description
	fieldParams             // parameter names, descriptions and allowed values
	fieldExamples           // example queries people wrote: configured, or a built-in server's own
	fieldLearned            // example queries learned from answered requests
	numFields
)

// BM25F parameters (Robertson & Zaragoza, "The Probabilistic Relevance Framework", 2009): a term's
// frequencies in the fields are summed, each times its field's weight and divided by the field's
// length normalisation 1 − b + b·len/avglen, before one saturation with k1. Names and examples say
// most about what a tool is for; the purpose (and the server's name) is shared by a whole server
// and so weighs little. Examples people wrote weigh more than learned ones, which are whatever
// queries a tool happened to answer. avglen is over the documents that have the field: a few
// tools with examples among thousands without are not judged against an average of nearly
// nothing.
var (
	fieldWeight = [numFields]float64{3, 0.5, 1, 0.6, 1.5, 0.9}
	fieldB      = [numFields]float64{0.5, 0.75, 0.75, 0.75, 0.75, 0.75}
)

const k1 = 1.2

// learnedConfidence sets how much a tool's learned examples count by how many it has: n of them
// weigh n²/(n²+learnedConfidence²) of the field's weight (1 of them 3%, 3 of them 20%, 12 of
// them 80%, the default cap of 20 92%), so that one or two stray queries do not pull a tool up
// for everything they share with other queries, while a tool that answered many counts them
// nearly in full. It was n/(n+2), at which one learned query (a third of the weight) let a tool
// outrank others that fit the query better. With the learned field's weight lowered from 1 to
// 0.9 beside it, R@1 with examples went from 0.652 to 0.730 on the BFCL pool and R@10 from 0.973
// to 0.980; on MetaTool from 0.679 to 0.682 and 0.915 to 0.915, recall within a 2,000-token
// budget held at 0.971 (go run ./bench retrieval, with the other changes of the commit that set
// it). A weaker field alone (n/(n+20)) raised MetaTool's R@1 more, but cost its recall within
// the budget.
const learnedConfidence = 6

// stemOnly is what a match of a query word's stem counts for in the example fields when the word
// as written is not there, but is somewhere in the index: "17 times 23" meets an example saying
// "times" in full before one saying "time".
const stemOnly = 0.3

// Weights of the weaker matches of a query, against the score of a word's stem: a word of a
// tool's name met by its looseStem or as an abbreviation (partialKeys), and the date a query
// asks for (asksDate) met by the word "date". On the BFCL pool's 600 queries, R@10 without
// examples is 0.980 with all three, 0.977 without the loose match, 0.978 without abbreviations
// and 0.975 without the date (0.968 before any of them); MetaTool's R@10 rose from 0.692 to
// 0.696, though with examples the loose match lost it 13 queries at R@1 ("export" also finds
// PDF_Exporter). At full weight the partial matches cost more than they found; an abbreviation,
// four letters or more of a word, is the weakest evidence: at 0.4 it lost more BFCL queries than
// it found (go run ./bench retrieval). Those figures were taken on all of the pools' queries; on
// the held-out report parts (Matching) the loose match found nothing more at 10, 20 or 50 and
// lost queries at 5, so it is off unless Matching.Loose asks for it.
const (
	looseWeight  = 0.5
	abbrevWeight = 0.3
	dateWeight   = 0.5
)

// exampleField reports whether f holds example queries, whose words are also indexed as written
// (exactKey) and whose numbers, operators and file names are evidence keys.
func exampleField(f int) bool { return f == fieldExamples || f == fieldLearned }

// nameKey prefixes the index keys of whole tool names (never produced by Terms, which yields
// letters and digits only); a query that names a tool verbatim finds it through them.
const nameKey = "\x00"

// Hit is one ranked tool.
type Hit struct {
	Qualified string
	Score     float64
}

// Index is a BM25F index of tool documents, kept per server so that one server's tools can be
// replaced without reindexing the others. Searches read an immutable snapshot swapped in
// atomically by each change, so they never wait for a writer; writers are serialised.
type Index struct {
	mu      sync.Mutex // serialises writers; readers only load cur
	cur     atomic.Pointer[snapshot]
	scratch sync.Pool // *scratch, per-search score buffers
}

// NewIndex returns an empty index that matches words every way it knows (the zero Matching).
func NewIndex() *Index { return NewIndexWith(Matching{}) }

// NewIndexWith returns an empty index that matches words as m says.
func NewIndexWith(m Matching) *Index {
	x := &Index{}
	x.cur.Store(&snapshot{terms: map[string][]posting{}, servers: map[string]*serverDocs{}, match: m})
	return x
}

// snapshot is one immutable state of the index.
type snapshot struct {
	version uint64
	// docs holds every document by id, nil where one was removed; ids are reused only when the
	// snapshot is compacted.
	docs   []*docEntry
	live   int
	lenSum [numFields]int64
	// withField counts, per field, the live documents in which the field is not empty.
	withField [numFields]int64
	// norms holds, per id, numFields factors weight/(1 − b + b·len/avglen).
	norms []float64
	// terms maps each term to its postings, live documents only, ascending ids.
	terms   map[string][]posting
	servers map[string]*serverDocs
	// byName lists the live ids in qualified-name order.
	byName []int32
	// match is how words are matched, fixed for the index's life.
	match Matching
}

// serverDocs is one server's part of the index: the documents as given (to tell a change from a
// repeat) and their ids.
type serverDocs struct {
	docs []Doc
	ids  []int32
}

type docEntry struct {
	qualified string
	// learned counts the document's learned examples.
	learned int32
	lens    [numFields]int32
	// terms holds each distinct term of the document with its frequency per field; whole-name
	// keys have no frequencies.
	terms []termFreq
}

type termFreq struct {
	term string
	tf   [numFields]uint16
}

type posting struct {
	doc int32
	tf  [numFields]uint16
}

// newDocEntry tokenises d.
func newDocEntry(d Doc, m Matching) *docEntry {
	e := &docEntry{qualified: d.Qualified, learned: int32(len(d.Learned))}
	pos := map[string]int{}
	bump := func(f int, t string) {
		i, ok := pos[t]
		if !ok {
			i = len(e.terms)
			pos[t] = i
			e.terms = append(e.terms, termFreq{term: t})
		}
		if e.terms[i].tf[f] < 1<<16-1 {
			e.terms[i].tf[f]++
		}
	}
	add := func(f int, text string) {
		words(text, m, func(w, stem string) {
			bump(f, stem)
			e.lens[f]++
			if exampleField(f) {
				bump(f, exactKey+w)
			}
			if f == fieldName {
				partialKeys(w, stem, m, func(k string) { bump(f, k) })
			}
		})
		if exampleField(f) {
			evidence(text, func(k string) { bump(f, k) })
		}
	}
	// The server's name goes with its purpose: it is in every one of its tools' names, and a
	// common word ("everything", "memory") would otherwise pull up all of them.
	if name, ok := strings.CutPrefix(d.Qualified, d.Server+"."); ok && d.Server != "" {
		add(fieldName, copyless(name))
		add(fieldPurpose, d.Server)
	} else {
		add(fieldName, copyless(d.Qualified))
	}
	add(fieldPurpose, d.Purpose)
	add(fieldDescription, d.Description)
	for _, p := range d.Params {
		add(fieldParams, p.Name)
		add(fieldParams, p.Description)
		for _, v := range p.Enum {
			add(fieldParams, v)
		}
	}
	if !m.NoValues {
		// Not counted in the field's length: a tool is not longer for taking a date.
		paramValues(d.Params, func(k string) { bump(fieldParams, k) })
	}
	for _, ex := range d.Examples {
		add(fieldExamples, ex)
	}
	for _, ex := range d.Learned {
		add(fieldLearned, ex)
	}
	keys := []string{nameKey + strings.ToLower(d.Qualified)}
	if identifierLike(d.Name) && !strings.EqualFold(d.Name, d.Qualified) {
		keys = append(keys, nameKey+strings.ToLower(d.Name))
	}
	for _, k := range keys {
		e.terms = append(e.terms, termFreq{term: k})
	}
	return e
}

// copyless returns a tool's name without a final number set off by "_" or "-" ("convert_2"), the
// mark that tells apart tools of one name: it says nothing of what the tool does, yet matched
// every number a query held ("5 days") and made the name longer than its twins'. Dropping it
// raised the BFCL pool's R@10 from 0.968 to 0.970 (0.978 to 0.980 with the weaker matches); the
// whole name still finds the tool verbatim (nameKey).
func copyless(name string) string {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i < len(name) && i > 1 && (name[i-1] == '_' || name[i-1] == '-') {
		return name[:i-1]
	}
	return name
}

// identifierLike reports whether a bare tool name would not be taken for an ordinary word in a
// query ("get_weather", "listFiles", "v2"), so that naming it counts as naming the tool.
func identifierLike(name string) bool {
	var prev rune
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || unicode.IsDigit(r),
			unicode.IsLower(prev) && unicode.IsUpper(r):
			return true
		}
		prev = r
	}
	return false
}

// nameCandidates returns the lower-cased runs of letters, digits, '.', '_' and '-' in a query,
// trimmed of dots and dashes at either end, each as a whole-name key: the ways a query can name
// a tool verbatim ("use `weather.forecast`.").
func nameCandidates(query string) []string {
	var out []string
	isPart := func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-'
	}
	for _, f := range strings.FieldsFunc(query, func(r rune) bool { return !isPart(r) }) {
		f = strings.Trim(f, ".-")
		if f != "" && identifierLike(f) {
			out = append(out, nameKey+strings.ToLower(f))
		}
	}
	return out
}

// normalise fills in the qualified name and the server's name and purpose.
func normalise(server, purpose string, docs []Doc) []Doc {
	out := make([]Doc, len(docs))
	for i, d := range docs {
		d.Server, d.Purpose = server, purpose
		d.Qualified = d.qualified()
		out[i] = d
	}
	return out
}

// Version returns the version last given to Sync.
func (x *Index) Version() uint64 { return x.cur.Load().version }

// Len returns the number of tools indexed.
func (x *Index) Len() int { return x.cur.Load().live }

// Has reports whether a tool is indexed.
func (x *Index) Has(qualified string) bool {
	return len(x.cur.Load().terms[nameKey+strings.ToLower(qualified)]) > 0
}

// Update replaces the documents of one server with docs (their Server and Purpose are set to
// server and purpose), leaving every other server's documents and postings untouched; no docs
// removes the server.
func (x *Index) Update(server, purpose string, docs []Doc) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.cur.Load()
	x.cur.Store(s.apply(s.version, map[string][]Doc{server: normalise(server, purpose, docs)}))
}

// Remove removes a server's documents.
func (x *Index) Remove(server string) {
	x.Update(server, "", nil)
}

// Sync makes the index hold exactly docs, grouped by Doc.Server (a server's purpose taken from its
// first document), reindexing only the servers whose documents differ from those indexed, and
// records version (the inventory's, say). It returns the servers it reindexed or removed, sorted.
func (x *Index) Sync(version uint64, docs []Doc) (changed []string) {
	groups := map[string][]Doc{}
	var order []string
	for _, d := range docs {
		if _, ok := groups[d.Server]; !ok {
			order = append(order, d.Server)
		}
		groups[d.Server] = append(groups[d.Server], d)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.cur.Load()
	changes := map[string][]Doc{}
	for _, name := range order {
		g := normalise(name, groups[name][0].Purpose, groups[name])
		if old, ok := s.servers[name]; !ok || !slices.EqualFunc(old.docs, g, Doc.equal) {
			changes[name] = g
		}
	}
	for name := range s.servers {
		if _, ok := groups[name]; !ok {
			changes[name] = nil
		}
	}
	if len(changes) == 0 {
		if version != s.version {
			n := *s
			n.version = version
			x.cur.Store(&n)
		}
		return nil
	}
	x.cur.Store(s.apply(version, changes))
	return slices.Sorted(maps.Keys(changes))
}

// apply returns the snapshot with each changed server's documents replaced (nil or empty: the
// server removed). Only the postings of terms that occur in removed or added documents are
// rebuilt; statistics are adjusted by what was removed and added. When removed ids outnumber live
// ones the result is compacted instead.
func (s *snapshot) apply(version uint64, changes map[string][]Doc) *snapshot {
	n := &snapshot{
		version:   version,
		docs:      slices.Clone(s.docs),
		live:      s.live,
		lenSum:    s.lenSum,
		withField: s.withField,
		servers:   maps.Clone(s.servers),
		match:     s.match,
	}
	var removed []*docEntry
	var added []int32
	for _, name := range slices.Sorted(maps.Keys(changes)) {
		if old, ok := n.servers[name]; ok {
			for _, id := range old.ids {
				e := n.docs[id]
				removed = append(removed, e)
				n.docs[id] = nil
				n.live--
				for f := range numFields {
					n.lenSum[f] -= int64(e.lens[f])
					if e.lens[f] > 0 {
						n.withField[f]--
					}
				}
			}
			delete(n.servers, name)
		}
		docs := changes[name]
		if len(docs) == 0 {
			continue
		}
		sd := &serverDocs{docs: docs, ids: make([]int32, len(docs))}
		for i, d := range docs {
			e := newDocEntry(d, s.match)
			id := int32(len(n.docs))
			n.docs = append(n.docs, e)
			sd.ids[i] = id
			added = append(added, id)
			n.live++
			for f := range numFields {
				n.lenSum[f] += int64(e.lens[f])
				if e.lens[f] > 0 {
					n.withField[f]++
				}
			}
		}
		n.servers[name] = sd
	}
	if dead := len(n.docs) - n.live; dead > n.live && dead > 64 {
		return n.compact()
	}

	// Postings of the added documents, by term, in ascending ids (above every existing id).
	fresh := map[string][]posting{}
	for _, id := range added {
		for _, t := range n.docs[id].terms {
			fresh[t.term] = append(fresh[t.term], posting{doc: id, tf: t.tf})
		}
	}
	stale := map[string]bool{}
	for _, e := range removed {
		for _, t := range e.terms {
			stale[t.term] = true
		}
	}
	n.terms = maps.Clone(s.terms)
	for t := range stale {
		old := s.terms[t]
		ps := make([]posting, 0, len(old)+len(fresh[t]))
		for _, p := range old {
			if n.docs[p.doc] != nil {
				ps = append(ps, p)
			}
		}
		ps = append(ps, fresh[t]...)
		if len(ps) == 0 {
			delete(n.terms, t)
		} else {
			n.terms[t] = ps
		}
	}
	for t, ps := range fresh {
		if stale[t] {
			continue
		}
		if old := s.terms[t]; len(old) > 0 {
			// Copy: old is shared with s and with readers.
			ps = append(old[:len(old):len(old)], ps...)
		}
		n.terms[t] = ps
	}

	// byName: the surviving ids, already in order, merged with the added ones.
	slices.SortFunc(added, func(a, b int32) int { return strings.Compare(n.docs[a].qualified, n.docs[b].qualified) })
	n.byName = make([]int32, 0, n.live)
	i := 0
	for _, id := range s.byName {
		if n.docs[id] == nil {
			continue
		}
		for i < len(added) && n.docs[added[i]].qualified < n.docs[id].qualified {
			n.byName = append(n.byName, added[i])
			i++
		}
		n.byName = append(n.byName, id)
	}
	n.byName = append(n.byName, added[i:]...)
	n.computeNorms()
	return n
}

// compact renumbers the live documents densely (server by server, in name order) and rebuilds the
// postings from their stored terms, without tokenising again.
func (n *snapshot) compact() *snapshot {
	c := &snapshot{version: n.version, live: n.live, lenSum: n.lenSum, withField: n.withField, servers: make(map[string]*serverDocs, len(n.servers)), match: n.match}
	c.docs = make([]*docEntry, 0, n.live)
	c.terms = map[string][]posting{}
	for _, name := range slices.Sorted(maps.Keys(n.servers)) {
		old := n.servers[name]
		sd := &serverDocs{docs: old.docs, ids: make([]int32, len(old.ids))}
		for i, oid := range old.ids {
			e := n.docs[oid]
			id := int32(len(c.docs))
			c.docs = append(c.docs, e)
			sd.ids[i] = id
			for _, t := range e.terms {
				c.terms[t.term] = append(c.terms[t.term], posting{doc: id, tf: t.tf})
			}
		}
		c.servers[name] = sd
	}
	c.byName = make([]int32, len(c.docs))
	for i := range c.byName {
		c.byName[i] = int32(i)
	}
	slices.SortFunc(c.byName, func(a, b int32) int { return strings.Compare(c.docs[a].qualified, c.docs[b].qualified) })
	c.computeNorms()
	return c
}

// computeNorms sets every live document's field factors from the current average field lengths.
func (s *snapshot) computeNorms() {
	var avg [numFields]float64
	if s.live > 0 {
		for f := range numFields {
			if s.withField[f] > 0 {
				avg[f] = float64(s.lenSum[f]) / float64(s.withField[f])
			}
		}
	}
	s.norms = make([]float64, len(s.docs)*numFields)
	for id, e := range s.docs {
		if e == nil {
			continue
		}
		for f := range numFields {
			if e.lens[f] == 0 || avg[f] == 0 {
				continue
			}
			s.norms[id*numFields+f] = fieldWeight[f] / (1 - fieldB[f] + fieldB[f]*float64(e.lens[f])/avg[f])
			if f == fieldLearned {
				n := float64(e.learned)
				s.norms[id*numFields+f] *= n * n / (n*n + learnedConfidence*learnedConfidence)
			}
		}
	}
}
