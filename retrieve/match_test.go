package retrieve_test

import (
	"testing"

	"toolrouter/retrieve"
)

// TestMatching checks each way of matching a word beyond its stem, on and off: a question in a
// script written without spaces meets a tool described in it through pairs of characters, and a
// question naming an act in another form meets the tool named by the verb through WordNet's
// derivational links.
func TestMatching(t *testing.T) {
	docs := []retrieve.Doc{
		{Server: "wx", Name: "forecast", Description: "查询城市的天气预报"},
		{Server: "wx", Name: "air_quality", Description: "查询城市的空气质量指数"},
		{Server: "math", Name: "multiply", Description: "Returns a times b.", Params: []retrieve.Param{{Name: "a"}, {Name: "b"}}},
		{Server: "math", Name: "add", Description: "Returns the sum of a and b.", Params: []retrieve.Param{{Name: "a"}, {Name: "b"}}},
		{Server: "music", Name: "play_artist", Description: "Plays every track by an artist."},
		{Server: "files", Name: "store_file", Description: "Writes a file to the bucket."},
	}
	tests := []struct {
		name, query string
		m           retrieve.Matching
		want        string // first hit; "" for none
	}{
		{"chinese, pairs of characters", "明天北京的天气怎么样", retrieve.Matching{}, "wx.forecast"},
		{"chinese, pairs of characters, other tool", "北京今天的空气质量", retrieve.Matching{}, "wx.air_quality"},
		{"chinese, bigrams off", "明天北京的天气怎么样", retrieve.Matching{NoBigrams: true}, ""},
		{"chinese mixed with latin words", "forecast 天气", retrieve.Matching{}, "wx.forecast"},
		{"a noun for the act", "what is the multiplication of 3 and 2", retrieve.Matching{}, "math.multiply"},
		{"a noun for the act, related words off", "what is the multiplication of 3 and 2", retrieve.Matching{NoRelated: true}, ""},
		{"a noun for the verb", "keep my notes in storage", retrieve.Matching{}, "files.store_file"},
		{"a noun for the verb, related words off", "keep my notes in storage", retrieve.Matching{NoRelated: true}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx := retrieve.NewIndexWith(tc.m)
			idx.Sync(1, docs)
			hits := idx.Search(tc.query, 3, nil)
			got := ""
			if len(hits) > 0 && hits[0].Score > 0 {
				got = hits[0].Qualified
			}
			if got != tc.want {
				t.Errorf("%q: got %q first (%v), want %q", tc.query, got, hits, tc.want)
			}
		})
	}
}

// TestUnspacedWords checks how a run of a script written without spaces becomes words: its pairs
// of characters, a single character alone, Latin words and digits beside it as their own.
func TestUnspacedWords(t *testing.T) {
	idx := retrieve.NewIndex()
	tests := []struct {
		text string
		want []string
	}{
		{"天气预报", []string{"天气", "气预", "预报"}},
		{"天", []string{"天"}},
		{"北京weather", []string{"北京", "weather"}},
		{"ありがとう", []string{"あり", "りが", "がと", "とう"}},
	}
	for _, tc := range tests {
		idx.Sync(1, []retrieve.Doc{{Server: "s", Name: "t", Description: tc.text}})
		for _, w := range tc.want {
			if hits := idx.Search(w, 1, nil); len(hits) == 0 || hits[0].Score == 0 {
				t.Errorf("%q: the word %q finds nothing", tc.text, w)
			}
		}
	}
}
