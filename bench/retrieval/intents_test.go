package retrieval

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"toolrouter/retrieve/retrievetest"
)

// TestObviousIntents: beside 200 and 2,000 real BFCL tools, every obvious intent's tool is among
// the 5 best-ranked, and on the shortlist phase 1 would be shown; pinning the built-in servers
// costs tokens of every shortlist and leaves fewer tools shown. (`go run ./bench retrieval`
// measures 20,000 as well.)
func TestObviousIntents(t *testing.T) {
	dir := retrievetest.DataDir()
	set, err := LoadIntents(filepath.Join(dir, "obvious_intents.json"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := LoadReference(filepath.Join(dir, "reference_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, refExamples, err := Examples(filepath.Join(dir, "reference_examples.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Intents) < 40 {
		t.Fatalf("got %d intents, want at least 40", len(set.Intents))
	}
	for _, n := range []int{200, 2000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			in, err := MeasureIntents(context.Background(), set, ref, refExamples, filepath.Join(dir, "bfcl"), n, quiet)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range in.Misses {
				t.Errorf("%q: %s ranked %d, want among the first 5 (got %s)", m.Query, m.Tool, m.Rank, strings.Join(m.Top, ", "))
			}
			if in.Shown != in.Queries {
				t.Errorf("%d of %d intents' tools on the default shortlist, want all", in.Shown, in.Queries)
			}
			if in.PinnedTools != 11 || in.PinnedTokens <= 0 || in.PinnedTokens >= in.Budget || in.MeanOthersShown >= in.MeanShown {
				t.Errorf("pinned built-ins: %d tools, %d of %d tokens, %.1f other tools shown against %.1f unpinned; want 11 tools taking part of the budget and fewer others shown",
					in.PinnedTools, in.PinnedTokens, in.Budget, in.MeanOthersShown, in.MeanShown)
			}
		})
	}
}

// TestIntentPoolLeavesOutSameJobTools: the pool holds the intents' servers and n BFCL tools,
// none of them one the set leaves out, and an exclusion that names no BFCL function is an error.
func TestIntentPoolLeavesOutSameJobTools(t *testing.T) {
	dir := retrievetest.DataDir()
	set, err := LoadIntents(filepath.Join(dir, "obvious_intents.json"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := LoadReference(filepath.Join(dir, "reference_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := IntentPool(set, ref, filepath.Join(dir, "bfcl"), 3000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range set.Exclude {
		out[unsafeName.ReplaceAllString(e.Function, "_")] = true
	}
	bfcl := 0
	for _, s := range p.Servers {
		if !strings.HasPrefix(s.Name, "bfcl") {
			continue
		}
		for _, tl := range s.Tools {
			bfcl++
			// A name several functions share gets a numeric suffix in the pool (mcpNames).
			if out[tl.Name] || out[numbered.ReplaceAllString(tl.Name, "")] {
				t.Errorf("%s.%s is left out by the set, yet in the pool", s.Name, tl.Name)
			}
		}
	}
	if bfcl != 3000 || len(p.Queries) != len(set.Intents) {
		t.Errorf("got %d BFCL tools and %d queries, want 3000 and %d", bfcl, len(p.Queries), len(set.Intents))
	}
	bad := *set
	bad.Exclude = append(bad.Exclude, Excluded{Function: "no_such_function", SameJobAs: "calculator.add"})
	if _, err := IntentPool(&bad, ref, filepath.Join(dir, "bfcl"), 200); err == nil || !strings.Contains(err.Error(), "no_such_function") {
		t.Errorf("an exclusion naming no function: got %v, want an error naming it", err)
	}
}

var numbered = regexp.MustCompile(`_[0-9]+$`)
