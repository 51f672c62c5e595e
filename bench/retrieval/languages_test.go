package retrieval

import (
	"context"
	"path/filepath"
	"testing"

	"toolrouter/retrieve/retrievetest"
)

// TestMeasureLanguages routes questions of the BFCL pool, in the tools' language and in Chinese:
// the Chinese one's shortlist is weak and does not show its tool, the search it must make with the
// English words reaches it; the English one's is not weak and shows it at once; and the pool's
// English queries are counted by part.
func TestMeasureLanguages(t *testing.T) {
	bfcl, err := BFCL(filepath.Join(retrievetest.DataDir(), "bfcl"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Serve(context.Background(), bfcl, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inv.Close)
	var q Query
	for _, c := range bfcl.Queries {
		if c.Gold != "" && len(c.Text) < 120 {
			q = c
			break
		}
	}
	qs := []Translated{
		{Pool: bfcl.Name, Part: PartReport, Lang: "zh", English: q.Text, Question: "请帮我用这个工具完成这个任务，谢谢你的帮忙", Gold: q.Gold},
		{Pool: bfcl.Name, Part: PartTune, Lang: "fr", English: q.Text, Question: q.Text, Gold: q.Gold}, // the tools' words: not weak
		{Pool: "MetaTool", Lang: "zh", English: "elsewhere", Question: "别处", Gold: "x.y"},              // another pool's: left out
	}
	got, err := MeasureLanguages(context.Background(), inv, bfcl, qs, RecallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Lang != "fr" || got[0].Part != PartTune || got[1].Lang != "zh" || got[1].Part != PartReport {
		t.Fatalf("got %+v, want fr (tune part) then zh (report part), one question each", got)
	}
	fr, zh := got[0], got[1]
	if zh.Questions != 1 || zh.Weak != 1 || zh.Shown != 0 || zh.WhenWeak != 1 || zh.Searching != 1 || zh.English != 1 {
		t.Errorf("zh: %+v, want weak, not shown, reached by the search it must make", zh)
	}
	if fr.Questions != 1 || fr.Weak != 0 || fr.Shown != 1 || fr.WhenWeak != 1 || fr.English != 1 {
		t.Errorf("English words: %+v, want not weak and shown", fr)
	}

	noTool := []string{"请帮我", "ありがとう", "thanks", "merci beaucoup", "danke schön", "gracias amigo"}
	want := map[string]int{}
	for _, q := range noTool {
		want[PartOf(AwarenessPool, q)]++
	}
	ws, err := MeasureWeak(context.Background(), inv, bfcl, noTool, RecallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parts := bfcl.parts()
	got2 := map[[2]string]WeakShare{}
	for _, w := range ws {
		got2[[2]string{w.Set, w.Part}] = w
	}
	for _, part := range Parts {
		if w := got2[[2]string{bfcl.Name, part}]; w.Queries != len(parts[part]) {
			t.Errorf("%s part: %+v, want its %d queries", part, w, len(parts[part]))
		}
		if w := got2[[2]string{NoToolSet, part}]; w.Queries != want[part] || w.Weak != want[part] {
			t.Errorf("no-tool queries, %s part: %+v, want all %d weak", part, w, want[part])
		}
	}
}
