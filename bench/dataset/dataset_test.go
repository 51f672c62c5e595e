package dataset

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const data = "../data"

func TestConvertSchema(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			"types, order and optional",
			`{"type": "dict", "properties": {"z": {"type": "float", "description": "Z."}, "a": {"type": "tuple", "items": {"type": "float"}}, "o": {"type": "string", "optional": "true", "default": "x"}}, "required": ["z", "o", "ghost"]}`,
			`{"type":"object","properties":{"z":{"type":"number","description":"Z."},"a":{"type":"array","items":{"type":"number"}},"o":{"type":"string","default":"x"}},"required":["z"]}`,
		},
		{
			"any has no type; nested dicts convert",
			`{"type": "dict", "properties": {"data": {"type": "any", "description": "D."}, "opts": {"type": "dict", "properties": {"k": {"type": "integer"}}, "required": ["k"]}, "list": {"type": "array", "items": {"type": "dict", "properties": {"n": {"type": "float"}}}}}, "required": []}`,
			`{"type":"object","properties":{"data":{"description":"D."},"opts":{"type":"object","properties":{"k":{"type":"integer"}},"required":["k"]},"list":{"type":"array","items":{"type":"object","properties":{"n":{"type":"number"}}}}},"required":[]}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConvertSchema(json.RawMessage(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if _, err := ConvertSchema(json.RawMessage(`{"type": "complex"}`)); err == nil || !strings.Contains(err.Error(), `unknown type "complex"`) {
		t.Errorf("got %v, want an unknown type error", err)
	}
}

func TestToolNames(t *testing.T) {
	got := toolNames([]string{"math.factorial", "math_factorial", "PDF&URLTool", "ok-name"})
	want := []string{"math_factorial", "math_factorial_2", "PDF_URLTool", "ok-name"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("name %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

// TestLoadBFCL loads the repository's copy of every BFCL category.
func TestLoadBFCL(t *testing.T) {
	tests := []struct {
		file      string
		answered  bool
		records   int
		wantCalls int // calls in the first record's answer
	}{
		{"BFCL_v4_simple_python.json", true, 400, 1},
		{"BFCL_v4_multiple.json", true, 200, 1},
		{"BFCL_v4_parallel.json", true, 200, 2},
		{"BFCL_v4_parallel_multiple.json", true, 200, 2},
		{"BFCL_v4_irrelevance.json", false, 240, 0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			answers := ""
			if tc.answered {
				answers = filepath.Join(data, "bfcl", "possible_answer", tc.file)
			}
			ds, err := LoadBFCL("x", filepath.Join(data, "bfcl", tc.file), answers)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds.Cases) != tc.records {
				t.Fatalf("got %d records, want %d", len(ds.Cases), tc.records)
			}
			for _, c := range ds.Cases {
				if c.NeedsTool != tc.answered || c.Query == "" || len(c.Toolset.Functions) == 0 {
					t.Fatalf("%s: needs tool %v, query %q, %d functions", c.ID, c.NeedsTool, c.Query, len(c.Toolset.Functions))
				}
				specs := c.Toolset.Specs()
				for _, a := range c.Answers {
					for _, call := range a.Calls {
						if _, ok := specs[call.Name]; !ok || !strings.HasPrefix(call.Name, BFCLServer+".") || strings.Contains(call.Name[len(BFCLServer)+1:], ".") {
							t.Fatalf("%s: expected call %q is not one of the toolset's qualified names", c.ID, call.Name)
						}
					}
				}
			}
			if first := ds.Cases[0]; tc.answered && len(first.Answers[0].Calls) != tc.wantCalls {
				t.Errorf("first record: got %d expected calls, want %d", len(first.Answers[0].Calls), tc.wantCalls)
			}
		})
	}
	// simple_python_1 offers math.factorial: served as math_factorial, expected with number 5.
	ds, err := LoadBFCL("x", filepath.Join(data, "bfcl", "BFCL_v4_simple_python.json"), filepath.Join(data, "bfcl", "possible_answer", "BFCL_v4_simple_python.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := ds.Cases[1]
	f := c.Toolset.Functions[0]
	if f.Name != "math_factorial" || f.Original != "math.factorial" || c.Answers[0].Calls[0].Name != "bfcl.math_factorial" {
		t.Errorf("got function %q (%q), expected call %q; want math_factorial (math.factorial), bfcl.math_factorial", f.Name, f.Original, c.Answers[0].Calls[0].Name)
	}
	if got := c.Answers[0].Calls[0].Args["number"]; len(got) != 1 || got[0] != json.Number("5") {
		t.Errorf("got allowed numbers %v, want [5]", got)
	}
}

func TestLoadBFCLErrors(t *testing.T) {
	dir := t.TempDir()
	q := filepath.Join(dir, "q.json")
	a := filepath.Join(dir, "a.json")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(q, `{"id": "r1", "question": [[{"role": "user", "content": "hi"}]], "function": [{"name": "f", "description": "", "parameters": {"type": "dict", "properties": {}}}]}`+"\n")
	write(a, `{"id": "r1", "ground_truth": [{"g": {}}]}`+"\n")
	if _, err := LoadBFCL("x", q, a); err == nil || !strings.Contains(err.Error(), `"g", which is not offered`) {
		t.Errorf("got %v, want an error naming the unknown function", err)
	}
	write(a, `{"id": "other", "ground_truth": [{"f": {}}]}`+"\n")
	if _, err := LoadBFCL("x", q, a); err == nil || !strings.Contains(err.Error(), "no possible answer") {
		t.Errorf("got %v, want a missing answer error", err)
	}
}

func TestLoadMetaTool(t *testing.T) {
	tools := filepath.Join(data, "metatool", "plugin_des.json")
	sel, err := LoadMetaToolSelection("s", filepath.Join(data, "metatool", "all_clean_data_sample.csv"), tools, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.Cases) != 2000 || len(sel.Cases[0].Toolset.Functions) != 199 {
		t.Fatalf("got %d cases over %d tools, want 2000 over 199", len(sel.Cases), len(sel.Cases[0].Toolset.Functions))
	}
	for _, c := range sel.Cases {
		if !c.NeedsTool || len(c.Answers) != 1 || c.Answers[0].Labeled() {
			t.Fatalf("%s: want one tool, no argument label", c.ID)
		}
	}
	small, err := LoadMetaToolSelection("s", filepath.Join(data, "metatool", "all_clean_data_sample.csv"), tools, 50, 3)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := LoadMetaToolSelection("s", filepath.Join(data, "metatool", "all_clean_data_sample.csv"), tools, 50, 3)
	if len(small.Cases) != 50 || small.Cases[7].ID != again.Cases[7].ID {
		t.Errorf("got %d sampled cases (not deterministic: %s vs %s), want 50", len(small.Cases), small.Cases[7].ID, again.Cases[7].ID)
	}
	aw, err := LoadMetaToolAwareness("a", filepath.Join(data, "metatool", "awareness.json"), tools)
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for _, c := range aw.Cases {
		if c.NeedsTool {
			pos++
		} else if len(c.Answers) != 0 {
			t.Fatalf("%s: a negative has an answer", c.ID)
		}
	}
	if len(aw.Cases) != 1040 || pos != 520 {
		t.Errorf("got %d cases, %d positive; want 1040, 520", len(aw.Cases), pos)
	}
}

func TestSample(t *testing.T) {
	rows := make([]Row, 100)
	for i := range rows {
		rows[i] = Row{Line: i + 2}
	}
	got := Sample(rows, 10, 1)
	if len(got) != 10 {
		t.Fatalf("got %d rows, want 10", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Line <= got[i-1].Line {
			t.Fatalf("sample not in file order: %v", got)
		}
	}
	if all := Sample(rows, 0, 1); len(all) != 100 {
		t.Errorf("n = 0: got %d rows, want all 100", len(all))
	}
}

// TestScenarioSet checks the project's scenario set: a few tens of queries, at least a quarter
// needing no tool, every tool query with labeled arguments, every query with a source, and every
// query runnable with the built-in servers alone (the npm servers are offered, not needed).
func TestScenarioSet(t *testing.T) {
	path := filepath.Join(data, "scenarios.json")
	ds, err := LoadScenarios("scenarios", path, ScenarioOptions{Vars: map[string]string{"SANDBOX": "/sb"}})
	if err != nil {
		t.Fatal(err)
	}
	none, labeled := 0, 0
	for _, c := range ds.Cases {
		if !c.NeedsTool {
			none++
		}
		for _, a := range c.Answers {
			if a.Labeled() {
				labeled++
				break
			}
		}
	}
	if n := len(ds.Cases); n < 20 || n > 60 || float64(none) < 0.25*float64(n) {
		t.Errorf("got %d scenarios, %d without a tool; want 20 to 60, at least 25%% without", n, none)
	}
	if labeled != len(ds.Cases)-none {
		t.Errorf("got %d tool scenarios with labeled arguments, want all %d", labeled, len(ds.Cases)-none)
	}

	only := func(s string) bool { return s == "calculator" || s == "clock" }
	builtin, err := LoadScenarios("scenarios", path, ScenarioOptions{Available: only})
	if err != nil {
		t.Fatal(err)
	}
	if len(builtin.Cases) != len(ds.Cases) || len(builtin.Notes) != 0 {
		t.Errorf("built-ins only: got %d cases, notes %q; want all %d, no note", len(builtin.Cases), builtin.Notes, len(ds.Cases))
	}
	for _, c := range builtin.Cases {
		for _, a := range c.Answers {
			for _, call := range a.Calls {
				if s := call.Name; !strings.HasPrefix(s, "calculator.") && !strings.HasPrefix(s, "clock.") {
					t.Errorf("%s: kept an answer on an unavailable server: %s", c.ID, s)
				}
			}
		}
	}
}

// TestLoadScenarios checks the scenario format on small files: sources are required, an answer
// may be several calls made together, and answers on servers that cannot run are dropped.
func TestLoadScenarios(t *testing.T) {
	const head = `{"servers": {"clock": "builtin", "memory": "npm"}, "scenarios": [`
	tests := []struct {
		name      string
		scenarios string
		avail     func(string) bool
		wantErr   string
		wantCalls [][]string // per case, per answer: the tools
	}{
		{
			name:      "one call, several calls, no call",
			scenarios: `{"id": "a", "query": "q", "source": "s", "expect": [{"tool": "clock.now"}, {"calls": [{"tool": "clock.now"}, {"tool": "memory.read"}]}]}, {"id": "b", "query": "r", "source": "s", "expect": []}`,
			wantCalls: [][]string{{"clock.now", "clock.now+memory.read"}, nil},
		},
		{
			name:      "an answer on a server that cannot run is dropped",
			scenarios: `{"id": "a", "query": "q", "source": "s", "expect": [{"tool": "clock.now"}, {"calls": [{"tool": "clock.now"}, {"tool": "memory.read"}]}]}`,
			avail:     func(s string) bool { return s == "clock" },
			wantCalls: [][]string{{"clock.now"}},
		},
		{
			name:      "no source",
			scenarios: `{"id": "a", "query": "q", "expect": []}`,
			wantErr:   "scenario a: no source",
		},
		{
			name:      "an answer with no tool",
			scenarios: `{"id": "a", "query": "q", "source": "s", "expect": [{"calls": []}]}`,
			wantErr:   "names no tool",
		},
		{
			name:      "a tool on an unlisted server",
			scenarios: `{"id": "a", "query": "q", "source": "s", "expect": [{"calls": [{"tool": "files.read"}]}]}`,
			wantErr:   `tool "files.read" is not on a listed server`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.json")
			if err := os.WriteFile(path, []byte(head+tc.scenarios+"]}"), 0o644); err != nil {
				t.Fatal(err)
			}
			ds, err := LoadScenarios("s", path, ScenarioOptions{Available: tc.avail})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, c := range ds.Cases {
				var answers []string
				for _, a := range c.Answers {
					var names []string
					for _, call := range a.Calls {
						names = append(names, call.Name)
					}
					answers = append(answers, strings.Join(names, "+"))
				}
				got = append(got, answers)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantCalls) {
				t.Errorf("got answers %v, want %v", got, tc.wantCalls)
			}
		})
	}
}
