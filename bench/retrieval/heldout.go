package retrieval

import (
	"context"
	"fmt"
	"hash/fnv"
	"runtime"
	"strings"
	"unicode"

	"golang.org/x/sync/errgroup"

	"toolrouter/inventory"
	"toolrouter/retrieve"
)

// The held-out protocol. Every query of a pool belongs to one of two parts, fixed by a hash of the
// pool's name and the query's normalised text (repeated queries share a part), never by a seed:
// the split is part of the benchmark, so that no change is judged on the data that shaped it.
// A rule or weight is chosen on the tune parts (and on one source when it is to be checked on the
// other: tuned on BFCL's tune part, checked on MetaTool's report part, and the other way round),
// and reported on the report parts.
const (
	PartTune   = "tune"
	PartReport = "report"
)

// Parts lists the parts in report order.
var Parts = []string{PartTune, PartReport}

// HeldOutKs are the ranks the held-out tables report.
var HeldOutKs = []int{5, 10, 20, 50}

// Candidate sets of the held-out tables.
const (
	// HeldOutBM25 is the shortlist's ranking with no examples.
	HeldOutBM25 = "bm25"
	// HeldOutTraffic is the same with the other part's queries learned as examples, as
	// answered requests become examples in a deployment: half of a pool's questions play the
	// traffic, the other half are asked.
	HeldOutTraffic = "bm25+traffic"
)

// ShortWords is the most words a short query has.
const ShortWords = 12

// Slices of a part's queries, by length and script.
const (
	SliceAll   = "all"
	SliceShort = "≤ 12 words"
	SliceLong  = "> 12 words"
	SliceLatin = "Latin script"
	SliceOther = "other scripts"
)

var sliceNames = []string{SliceAll, SliceShort, SliceLong, SliceLatin, SliceOther}

// PartOf returns the part of pool a query belongs to.
func PartOf(pool, text string) string {
	h := fnv.New64a()
	h.Write([]byte(pool))
	h.Write([]byte{0})
	h.Write([]byte(normalise(text)))
	// FNV-1a's bits are poorly mixed (its lowest is the parity of the bytes' lowest bits, which
	// would split queries by their letters): splitmix64's finaliser mixes them first.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	if x&1 == 0 {
		return PartTune
	}
	return PartReport
}

// LatinScript reports whether every letter of s is in the Latin script.
func LatinScript(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) && !unicode.Is(unicode.Latin, r) {
			return false
		}
	}
	return true
}

// sliceOf reports whether a query is in a slice.
func sliceOf(slice, text string) bool {
	switch slice {
	case SliceShort:
		return len(strings.Fields(text)) <= ShortWords
	case SliceLong:
		return len(strings.Fields(text)) > ShortWords
	case SliceLatin:
		return LatinScript(text)
	case SliceOther:
		return !LatinScript(text)
	}
	return true
}

// HeldOut is the recall of one candidate set on one part of one pool, by slice.
type HeldOut struct {
	Pool   string        `json:"pool"`
	Part   string        `json:"part"`
	Set    string        `json:"candidate_set"`
	Slices []SliceRecall `json:"slices"`
	// Learned counts the examples the part was ranked with (HeldOutTraffic).
	Learned int `json:"learned,omitempty"`
}

// SliceRecall is recall among the k best-ranked over the queries of one slice.
type SliceRecall struct {
	Slice   string `json:"slice"`
	Queries int    `json:"queries"`
	AtK     []AtK  `json:"at_k"`
}

// MeasureHeldOut ranks every query of p (served by inv) with the shortlist's ranker, without
// examples and with the other part's queries learned, and returns one HeldOut per part and set.
func MeasureHeldOut(ctx context.Context, inv *inventory.Manager, p *Pool, o RecallOptions) ([]HeldOut, error) {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	parts := p.parts()
	var res []HeldOut
	for _, set := range []string{HeldOutBM25, HeldOutTraffic} {
		for _, part := range Parts {
			var ex *retrieve.Examples
			learned := 0
			if set == HeldOutTraffic {
				var err error
				other := PartReport
				if part == PartReport {
					other = PartTune
				}
				ex, learned, err = learnExamples(p, [][]int{parts[part], parts[other]}, 0, o)
				if err != nil {
					return nil, fmt.Errorf("%s, %s part: %w", p.Name, part, err)
				}
			}
			ranks, err := rankDirect(ctx, inv, p, parts[part], newCatalog(ex, o.Log), o.Workers)
			if err != nil {
				return nil, err
			}
			h := HeldOut{Pool: p.Name, Part: part, Set: set, Learned: learned}
			for _, sl := range sliceNames {
				var in []int
				for j, i := range parts[part] {
					if sliceOf(sl, p.Queries[i].Text) {
						in = append(in, ranks[j])
					}
				}
				if len(in) == 0 {
					h.Slices = append(h.Slices, SliceRecall{Slice: sl})
					continue
				}
				h.Slices = append(h.Slices, SliceRecall{Slice: sl, Queries: len(in), AtK: recallAt(in)})
			}
			res = append(res, h)
		}
	}
	return res, nil
}

// rankDirect returns the rank of each query's gold tool (0: not among the best
// max(HeldOutKs)) by the ranker alone: the order router.Search shows (Offer.Ranked).
func rankDirect(ctx context.Context, inv *inventory.Manager, p *Pool, idx []int, c *retrieve.Catalog, workers int) ([]int, error) {
	snap := inv.Snapshot()
	c.Sync(snap)
	k := HeldOutKs[len(HeldOutKs)-1]
	ranks := make([]int, len(idx))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for j, i := range idx {
		q := p.Queries[i]
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			for r, h := range c.Rank(ctx, snap, q.Text, k, nil).Hits {
				if h.Qualified == q.Gold {
					ranks[j] = r + 1
					break
				}
			}
			return nil
		})
	}
	return ranks, g.Wait()
}

// Variant is one way of matching words, by the config name of what it turns off.
type Variant struct {
	Name  string
	Match retrieve.Matching
}

// Variants are the ways of matching the held-out tables compare: the sidecar's default, each
// way changed alone, and the rules as they were before the held-out protocol.
var Variants = []Variant{
	{"default", retrieve.Matching{}},
	{"loose on", retrieve.Matching{Loose: true}},
	{"abbreviations off", retrieve.Matching{NoAbbrev: true}},
	{"date off", retrieve.Matching{NoDate: true}},
	{"derivations off", retrieve.Matching{NoDerivation: true}},
	{"bigrams off", retrieve.Matching{NoBigrams: true}},
	{"related words off", retrieve.Matching{NoRelated: true}},
	{"values off", retrieve.Matching{NoValues: true}},
	{"as before: loose on, bigrams and related words off", retrieve.Matching{Loose: true, NoBigrams: true, NoRelated: true}},
}

// MatchingRecall is one variant's recall on one part of one pool, without examples.
type MatchingRecall struct {
	Pool    string `json:"pool"`
	Part    string `json:"part"`
	Variant string `json:"variant"`
	Queries int    `json:"queries"`
	AtK     []AtK  `json:"at_k"`
}

// MeasureMatching ranks every query of p (served by inv) with each of Variants, without examples,
// and returns the recall on each part.
func MeasureMatching(ctx context.Context, inv *inventory.Manager, p *Pool, o RecallOptions) ([]MatchingRecall, error) {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	parts := p.parts()
	var res []MatchingRecall
	for _, v := range Variants {
		for _, part := range Parts {
			ranks, err := rankDirect(ctx, inv, p, parts[part], newCatalogWith(v.Match, nil, o.Log), o.Workers)
			if err != nil {
				return nil, err
			}
			res = append(res, MatchingRecall{Pool: p.Name, Part: part, Variant: v.Name, Queries: len(ranks), AtK: recallAt(ranks)})
		}
	}
	return res, nil
}

// recallAt is the recall among the k best-ranked, for each of HeldOutKs, of queries whose gold
// tools ranked ranks (0: not among the best max(HeldOutKs)).
func recallAt(ranks []int) []AtK {
	out := make([]AtK, len(HeldOutKs))
	for i, k := range HeldOutKs {
		out[i].K = k
		for _, r := range ranks {
			if r > 0 && r <= k {
				out[i].Hits++
			}
		}
		out[i].Recall = float64(out[i].Hits) / float64(max(len(ranks), 1))
	}
	return out
}

// parts are the indexes of p's queries in each part (PartOf).
func (p *Pool) parts() map[string][]int {
	parts := map[string][]int{}
	for i, q := range p.Queries {
		part := PartOf(p.Name, q.Text)
		parts[part] = append(parts[part], i)
	}
	return parts
}
