package router_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"toolrouter/internal/fakeollama"
	"toolrouter/router"
)

// TestSearchInEnglishReachesToolsForAQuestionInChinese: among 2,000 real tools described in
// English, a question in Chinese shares no word with the tool it needs, so the first shortlist
// does not hold it; phase 1's search, which the model writes in English, reaches it, and the
// route calls it.
func TestSearchInEnglishReachesToolsForAQuestionInChinese(t *testing.T) {
	target := "big.calculate_triangle_area"
	model := fakeollama.NewFunc(t, chooser(target, "triangle area base height"))
	rt, _, _ := shortlistEnv(t, 2000, router.Settings{Options: map[string]any{"num_ctx": 4096}, MaxSearches: 1}, model)
	out, err := rt.Route(context.Background(), router.Request{Query: "求一个底为10、高为5的三角形的面积"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	if first := formatEnum(t, reqs[0].Format); slices.Contains(first, target) {
		t.Fatalf("the first shortlist already holds %s; the test needs a question that shares no word with it", target)
	}
	if out.Searches != 1 || !hasStep(out, router.StepSearch) {
		t.Fatalf("got %d searches, want 1 with its step", out.Searches)
	}
	if second := formatEnum(t, reqs[1].Format); !slices.Contains(second, target) {
		t.Errorf("the shortlist after the search lacks %s: %v", target, second)
	}
	if !out.UseTool || qualifiedOf(out) != target {
		t.Errorf("got %s (use_tool %v), want %s", qualifiedOf(out), out.UseTool, target)
	}
}

// TestWeakShortlistSearchesBeforeNoTool: a question that shares fewer than half of its words
// with every tool's text gets a weak shortlist, and with retrieval.search_when_weak phase 1 may
// answer "no tool" only with search words: a model that would give up (it searches only when it
// must) reaches the tool through its English search. Without the setting, or for a question the
// tools' words meet, "no tool" stays open and the same model gives up or chooses at once.
func TestWeakShortlistSearchesBeforeNoTool(t *testing.T) {
	const target = "big.calculate_triangle_area"
	chinese := "求一个底为10、高为5的三角形的面积"
	tests := []struct {
		name     string
		query    string
		whenWeak bool
		prefill  bool
		wantWeak bool // the first shortlist is weak
		wantMust bool // and phase 1 had to search
		wantTool bool
	}{
		{"weak, search required: the model searches in English and the tool is called", chinese, true, false, true, true, true},
		{"weak, search required, answered value by value", chinese, true, true, true, true, true},
		{"weak, search not required: the model gives up", chinese, false, false, true, false, false},
		{"not weak: no search required, the tool is on the first shortlist", "Find the area of a triangle with a base of 10 and a height of 5", true, false, false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.NewFunc(t, func(req api.ChatRequest) fakeollama.Reply {
				if !strings.Contains(string(req.Format), `"use_tool"`) && !tc.prefill {
					return args(`{"base": 10, "height": 5}`)
				}
				// The shortlist shown is in the system prompt (value by value, the format of the
				// first value does not list the tools).
				if strings.Contains(req.Messages[0].Content, "- "+target+":") {
					return sel(target, true)
				}
				// Value by value the model is asked its first value only: it writes a search, and
				// the router decides whether that value is asked for and under which schema.
				if tc.prefill || searchRequired(req.Format) {
					return fakeollama.Reply{Content: `{"use_tool":false,"calls":[],"needs_more":false,"direct":false,"search":"triangle area base height"}`}
				}
				return sel("none", false)
			})
			if tc.prefill {
				model.Lead = ""
			}
			rt, _, _ := shortlistEnv(t, 2000, router.Settings{Options: map[string]any{"num_ctx": 4096}, MaxSearches: 1,
				SearchWhenWeak: tc.whenWeak, Prefill: tc.prefill, Renders: tc.prefill}, model)
			out, err := rt.Route(context.Background(), router.Request{Query: tc.query})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Shortlists) == 0 || out.Shortlists[0].Weak != tc.wantWeak {
				t.Fatalf("shortlists %+v: want the first weak=%v", out.Shortlists, tc.wantWeak)
			}
			if got := hasStep(out, router.StepWeakShortlist); got != tc.wantMust {
				t.Errorf("weak_shortlist step %v, want %v", got, tc.wantMust)
			}
			reqs := model.Requests()
			if tc.prefill {
				var search []string
				for _, r := range reqs {
					last := r.Messages[len(r.Messages)-1]
					if last.Role == "assistant" && strings.HasSuffix(last.Content, `"search":`) {
						search = append(search, string(r.Format))
					}
				}
				if len(search) == 0 || !strings.Contains(search[0], `"minLength":1`) {
					t.Errorf("the search words were asked under %v, want a schema with minLength 1", search)
				}
			} else if got := searchRequired(reqs[0].Format); got != tc.wantMust {
				t.Errorf("the first selection's format requires search: %v, want %v: %s", got, tc.wantMust, reqs[0].Format)
			}
			if got := out.UseTool && qualifiedOf(out) == target; got != tc.wantTool {
				t.Errorf("called %s (use_tool %v), want the target called: %v", qualifiedOf(out), out.UseTool, tc.wantTool)
			}
		})
	}
}

// searchRequired reports whether a phase-1 format makes the search words required and not empty.
func searchRequired(format json.RawMessage) bool {
	var f struct {
		Required   []string `json:"required"`
		Properties struct {
			Search struct {
				MinLength int `json:"minLength"`
			} `json:"search"`
		} `json:"properties"`
	}
	return json.Unmarshal(format, &f) == nil && slices.Contains(f.Required, "search") && f.Properties.Search.MinLength > 0
}
