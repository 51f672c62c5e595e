package dataset

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"

	"toolrouter/bench/metrics"
)

// MetaToolServer is the name of the in-process server that serves MetaTool's tools.
const MetaToolServer = "metatool"

// LoadMetaToolTools reads plugin_des.json (tool name → description) into a toolset of
// parameterless tools, in name order. byName maps MetaTool's names to qualified tool names.
func LoadMetaToolTools(path string) (ts *Toolset, byName map[string]string, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("opening tool descriptions: %w", err)
	}
	var des map[string]string
	if err := json.Unmarshal(raw, &des); err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	originals := make([]string, 0, len(des))
	for n := range des {
		originals = append(originals, n)
	}
	sort.Strings(originals)
	names := toolNames(originals)
	ts = &Toolset{ID: "metatool", Server: MetaToolServer, Purpose: "Plugins a chat assistant can call"}
	byName = map[string]string{}
	for i, o := range originals {
		fn := Function{Name: names[i], Original: o, Description: des[o], Schema: json.RawMessage(`{"type":"object","properties":{}}`)}
		fn.Spec = metrics.FunctionSpec{Name: ts.Qualified(fn), Params: map[string]metrics.ParamSpec{}}
		byName[o] = fn.Spec.Name
		ts.Functions = append(ts.Functions, fn)
	}
	return ts, byName, nil
}

// LoadMetaToolSelection reads MetaTool's tool-selection data (a CSV with columns Query,Tool) over
// the tools of plugin_des.json: every query needs exactly the named tool. With sample > 0 it keeps
// a seeded random sample of that many rows, in file order (see Sample).
func LoadMetaToolSelection(name, csvPath, toolsPath string, sample int, seed uint64) (*Dataset, error) {
	ts, byName, err := LoadMetaToolTools(toolsPath)
	if err != nil {
		return nil, err
	}
	rows, err := ReadCSV(csvPath)
	if err != nil {
		return nil, err
	}
	rows = Sample(rows, sample, seed)
	ds := &Dataset{Name: name, Family: "metatool", Source: csvPath + " + " + toolsPath}
	for i, r := range rows {
		q, ok := byName[r.Tool]
		if !ok {
			return nil, fmt.Errorf("%s row %d: tool %q is not in %s", csvPath, i+1, r.Tool, toolsPath)
		}
		ds.Cases = append(ds.Cases, Case{
			ID: fmt.Sprintf("sel-%d", r.Line), Query: r.Query, Toolset: ts, NeedsTool: true,
			Answers: []Answer{{Calls: []metrics.Expected{{Name: q}}}},
		})
	}
	return ds, nil
}

// Row is one row of MetaTool's CSV; Line is its line number in the file (the header is line 1).
type Row struct {
	Line        int
	Query, Tool string
}

// ReadCSV reads a Query,Tool CSV with a header.
func ReadCSV(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening dataset: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	qi, ti := slices.Index(head, "Query"), slices.Index(head, "Tool")
	if qi < 0 || ti < 0 {
		return nil, fmt.Errorf("%s: want columns Query and Tool, got %v", path, head)
	}
	var rows []Row
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if len(rec) <= max(qi, ti) || strings.TrimSpace(rec[qi]) == "" {
			continue
		}
		l, _ := r.FieldPos(0)
		rows = append(rows, Row{Line: l, Query: rec[qi], Tool: strings.TrimSpace(rec[ti])})
	}
}

// WriteCSV writes rows as a Query,Tool CSV with a header.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"Query", "Tool"}); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write([]string{r.Query, r.Tool}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Sample returns n rows chosen uniformly without replacement by a PCG generator seeded with
// (seed, seed), in their original order; all rows when n ≤ 0 or n ≥ len(rows).
func Sample(rows []Row, n int, seed uint64) []Row {
	if n <= 0 || n >= len(rows) {
		return rows
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	idx := rng.Perm(len(rows))[:n]
	slices.Sort(idx)
	out := make([]Row, n)
	for i, j := range idx {
		out[i] = rows[j]
	}
	return out
}

// LoadMetaToolAwareness reads MetaTool's tool-use awareness data (awareness.json: query, label
// "positive" when an external tool is needed, and for most positives the tool) over the tools of
// plugin_des.json. A positive whose tool is named is scored on selection too.
func LoadMetaToolAwareness(name, path, toolsPath string) (*Dataset, error) {
	ts, byName, err := LoadMetaToolTools(toolsPath)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("opening dataset: %w", err)
	}
	var items []struct {
		Query string  `json:"query"`
		Label string  `json:"label"`
		Tool  *string `json:"tool"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	ds := &Dataset{Name: name, Family: "metatool", Source: path + " + " + toolsPath}
	unnamed := 0
	for i, it := range items {
		c := Case{ID: fmt.Sprintf("aw-%d", i), Query: it.Query, Toolset: ts}
		switch it.Label {
		case "positive":
			c.NeedsTool = true
			if it.Tool != nil {
				if q, ok := byName[*it.Tool]; ok {
					c.Answers = []Answer{{Calls: []metrics.Expected{{Name: q}}}}
				}
			}
			if len(c.Answers) == 0 {
				unnamed++
			}
		case "negative":
		default:
			return nil, fmt.Errorf("%s item %d: label %q, want positive or negative", path, i, it.Label)
		}
		ds.Cases = append(ds.Cases, c)
	}
	if unnamed > 0 {
		ds.Notes = append(ds.Notes, fmt.Sprintf("%d positive queries name no tool of the 199: scored on the decision only", unnamed))
	}
	return ds, nil
}
