package router_test

import (
	"context"
	"slices"
	"testing"

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
