package server_test

import (
	"bufio"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"toolrouter/internal/fakeollama"
	"toolrouter/router"
	"toolrouter/server"
)

// fieldNames returns the sorted keys of a JSON object, without skip.
func fieldNames(t *testing.T, raw []byte, skip string) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	delete(m, skip)
	return slices.Sorted(maps.Keys(m))
}

// TestEveryEventHasType: every event of both streams, the council's and the terminal ones
// included, carries its name in a type field, as a client dispatching on type reads it; the
// complete event carries every field of the plain endpoint's answer beside it.
func TestEveryEventHasType(t *testing.T) {
	tests := []struct {
		name      string
		path      string // the stream; the plain endpoint is the path without /stream
		replies   []fakeollama.Reply
		council   bool
		failing   bool // the council fails: the stream ends with an error event
		wantLast  string
		wantNames []string // events that must be among those sent
	}{
		{name: "route", path: "/v1/route/stream", replies: append(selectAdd(true), selectAdd(true)...), wantLast: "complete",
			wantNames: []string{"select_start", "tool_result"}},
		{name: "answer with the council", path: "/v1/answer/stream", replies: append(selectAdd(false), selectAdd(false)...), council: true,
			wantLast: "complete", wantNames: []string{"select_start", "stage1_start", "stage1_complete", "stage2_start", "stage2_complete", "stage3_start", "stage3_complete"}},
		{name: "answer without quorum", path: "/v1/answer/stream", replies: selectAdd(false), council: true, failing: true, wantLast: "error",
			wantNames: []string{"select_start", "stage1_start"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := fakeollama.New(t, tc.replies...)
			var e *env
			if tc.council {
				e = answerEnv(t, model, newCouncil(t, 2, tc.failing).council)
			} else {
				e = newEnv(t, model, router.Settings{}, server.Options{})
			}
			base := listen(t, e.app)
			resp, err := http.Post(base+tc.path, "application/json", strings.NewReader(`{"query":"2+3?"}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			names, data := readEvents(t, bufio.NewReader(resp.Body), nil)
			if len(names) == 0 || names[len(names)-1] != tc.wantLast {
				t.Fatalf("got events %v, want %s last", names, tc.wantLast)
			}
			for _, want := range tc.wantNames {
				if !slices.Contains(names, want) {
					t.Errorf("got events %v, want %s among them", names, want)
				}
			}
			for i, name := range names {
				var ev struct {
					Type string `json:"type"`
				}
				if err := json.Unmarshal([]byte(data[i]), &ev); err != nil || ev.Type != name {
					t.Errorf("event %s: got type %q in %s, want %q", name, ev.Type, data[i], name)
				}
			}
			if tc.wantLast != "complete" {
				return
			}
			status, raw, _ := do(t, e.app, http.MethodPost, strings.TrimSuffix(tc.path, "/stream"), []byte(`{"query":"2+3?"}`))
			if status != http.StatusOK {
				t.Fatalf("plain endpoint: got status %d (%s), want 200", status, raw)
			}
			got, want := fieldNames(t, []byte(data[len(data)-1]), "type"), fieldNames(t, raw, "")
			if !slices.Equal(got, want) {
				t.Errorf("complete event fields: got %v, want the plain answer's %v", got, want)
			}
		})
	}
}
