package dataset

import (
	"encoding/json"
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

// TestScenarioSet checks the requirements on the project's scenario set: at least 80
// queries, at least 25% needing no tool, every tool case with an expected tool on a listed server.
func TestScenarioSet(t *testing.T) {
	path := filepath.Join(data, "scenarios.json")
	ds, err := LoadScenarios("scenarios", path, ScenarioOptions{Vars: map[string]string{"SANDBOX": "/sb"}})
	if err != nil {
		t.Fatal(err)
	}
	none, traps, labeled := 0, 0, 0
	for _, c := range ds.Cases {
		if !c.NeedsTool {
			none++
		}
		if c.Trap != "" {
			traps++
		}
		for _, a := range c.Answers {
			if a.Labeled() {
				labeled++
				break
			}
		}
	}
	if len(ds.Cases) < 80 || float64(none) < 0.25*float64(len(ds.Cases)) || traps < 20 {
		t.Errorf("got %d scenarios, %d without a tool, %d traps; want ≥ 80, ≥ 25%%, ≥ 20", len(ds.Cases), none, traps)
	}
	if labeled < len(ds.Cases)-none-5 {
		t.Errorf("got %d tool scenarios with labeled arguments of %d", labeled, len(ds.Cases)-none)
	}
	raw, _ := json.Marshal(ds.Cases)
	if strings.Contains(string(raw), "${SANDBOX}") {
		t.Error("${SANDBOX} was not substituted")
	}

	only := func(s string) bool { return s == "calculator" || s == "clock" }
	builtin, err := LoadScenarios("scenarios", path, ScenarioOptions{Available: only})
	if err != nil {
		t.Fatal(err)
	}
	if len(builtin.Cases) >= len(ds.Cases) || len(builtin.Notes) != 1 || !strings.Contains(builtin.Notes[0], "everything, filesystem, memory") {
		t.Errorf("built-ins only: got %d cases, notes %q; want fewer than %d and a note naming the missing servers", len(builtin.Cases), builtin.Notes, len(ds.Cases))
	}
	for _, c := range builtin.Cases {
		for _, a := range c.Answers {
			if s := a.Calls[0].Name; !strings.HasPrefix(s, "calculator.") && !strings.HasPrefix(s, "clock.") {
				t.Errorf("%s: kept an answer on an unavailable server: %s", c.ID, s)
			}
		}
	}
}
