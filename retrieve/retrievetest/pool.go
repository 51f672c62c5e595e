// Package retrievetest builds pools of tool documents from real schemas — the BFCL functions and
// MetaTool plugins under bench/data — and the real queries that go with them, for retrieve's tests
// and benchmarks and for the benchmark harness. It owns no index; it only reads the data files.
package retrievetest

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"toolrouter/retrieve"
)

// perServer is how many tools of one source share a made-up server.
const perServer = 20

// DataDir returns the repository's bench/data directory, found from this source file.
func DataDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "bench", "data")
}

// Tools returns the distinct real tools under dataDir: the BFCL functions (bfcl/*.json, first
// definition of each name) and the MetaTool plugins (metatool/plugin_des.json), each source sorted
// by name and dealt to servers of 20 tools ("bfcl00", "bfcl01", …, "metatool00", …).
func Tools(dataDir string) ([]retrieve.Doc, error) {
	fns, err := bfclFunctions(dataDir)
	if err != nil {
		return nil, err
	}
	plugins, err := metaToolPlugins(dataDir)
	if err != nil {
		return nil, err
	}
	var docs []retrieve.Doc
	deal := func(prefix, purpose string, tools []retrieve.Doc) {
		for i, d := range tools {
			d.Server = fmt.Sprintf("%s%02d", prefix, i/perServer)
			d.Purpose = purpose
			d.Qualified = d.Server + "." + d.Name
			docs = append(docs, d)
		}
	}
	deal("bfcl", "Functions from the Berkeley Function Calling Leaderboard.", fns)
	deal("metatool", "ChatGPT plugins collected by MetaTool.", plugins)
	return docs, nil
}

// Pool returns n tools drawn from tools: a fixed shuffle of them, repeated as often as needed,
// the r-th repetition on servers renamed "<server>-r" so every qualified name is distinct.
func Pool(tools []retrieve.Doc, n int) []retrieve.Doc {
	if len(tools) == 0 {
		return nil
	}
	perm := rand.New(rand.NewPCG(1, 2)).Perm(len(tools))
	out := make([]retrieve.Doc, n)
	for i := range out {
		d := tools[perm[i%len(tools)]]
		if r := i / len(tools); r > 0 {
			d.Server = fmt.Sprintf("%s-%d", d.Server, r)
			d.Qualified = d.Server + "." + d.Name
		}
		out[i] = d
	}
	return out
}

// Labeled is a real query with the tool that answers it.
type Labeled struct {
	Query string
	// Tool is the tool's qualified name among the tools given to Queries.
	Tool string
}

// Queries returns real user queries with the tool among tools (as Tools returns them) that
// answers each: BFCL's simple and multiple categories (the one expected function) and MetaTool's
// sampled selection rows (metatool/all_clean_data_sample.csv). Queries whose tool is not among
// tools are left out.
func Queries(dataDir string, tools []retrieve.Doc) ([]Labeled, error) {
	qualified := map[string]string{}
	for _, d := range tools {
		if _, ok := qualified[d.Name]; !ok {
			qualified[d.Name] = d.Qualified
		}
	}
	var out []Labeled
	for _, name := range []string{"BFCL_v4_simple_python.json", "BFCL_v4_multiple.json"} {
		gold := map[string]string{}
		err := readLines(filepath.Join(dataDir, "bfcl", "possible_answer", name), func(line []byte) error {
			var a struct {
				ID          string           `json:"id"`
				GroundTruth []map[string]any `json:"ground_truth"`
			}
			if err := json.Unmarshal(line, &a); err != nil {
				return err
			}
			if len(a.GroundTruth) == 1 && len(a.GroundTruth[0]) == 1 {
				for fn := range a.GroundTruth[0] {
					gold[a.ID] = fn
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		err = readLines(filepath.Join(dataDir, "bfcl", name), func(line []byte) error {
			var r bfclRecord
			if err := json.Unmarshal(line, &r); err != nil {
				return err
			}
			if q, tool := r.firstUser(), qualified[gold[r.ID]]; q != "" && tool != "" {
				out = append(out, Labeled{Query: q, Tool: tool})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	f, err := os.Open(filepath.Join(dataDir, "metatool", "all_clean_data_sample.csv"))
	if err != nil {
		return nil, fmt.Errorf("reading metatool queries: %w", err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("reading metatool queries: %w", err)
	}
	for _, row := range rows[min(1, len(rows)):] {
		if len(row) >= 2 && row[0] != "" && qualified[row[1]] != "" {
			out = append(out, Labeled{Query: row[0], Tool: qualified[row[1]]})
		}
	}
	return out, nil
}

type bfclRecord struct {
	ID       string `json:"id"`
	Question [][]struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"question"`
	Function []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  struct {
			Properties map[string]struct {
				Type        string `json:"type"`
				Format      string `json:"format"`
				Description string `json:"description"`
				Enum        []any  `json:"enum"`
			} `json:"properties"`
		} `json:"parameters"`
	} `json:"function"`
}

func (r bfclRecord) firstUser() string {
	for _, turn := range r.Question {
		for _, m := range turn {
			if m.Role == "user" {
				return m.Content
			}
		}
	}
	return ""
}

// bfclTypes are BFCL's parameter types that JSON Schema names otherwise, as the accuracy
// benchmark converts them (dataset.ConvertSchema).
var bfclTypes = map[string]string{"dict": "object", "float": "number", "tuple": "array"}

// bfclFunctions returns every distinct function of the BFCL files, by name.
func bfclFunctions(dataDir string) ([]retrieve.Doc, error) {
	files, err := filepath.Glob(filepath.Join(dataDir, "bfcl", "*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("reading bfcl functions: no bfcl/*.json under %s", dataDir)
	}
	slices.Sort(files)
	byName := map[string]retrieve.Doc{}
	for _, file := range files {
		err := readLines(file, func(line []byte) error {
			var r bfclRecord
			if err := json.Unmarshal(line, &r); err != nil {
				return err
			}
			for _, fn := range r.Function {
				if _, ok := byName[fn.Name]; ok || fn.Name == "" {
					continue
				}
				d := retrieve.Doc{Name: fn.Name, Description: fn.Description}
				for _, p := range slices.Sorted(maps.Keys(fn.Parameters.Properties)) {
					prop := fn.Parameters.Properties[p]
					param := retrieve.Param{Name: p, Description: prop.Description, Type: bfclTypes[prop.Type], Format: prop.Format}
					if param.Type == "" {
						param.Type = prop.Type
					}
					for _, v := range prop.Enum {
						param.Enum = append(param.Enum, fmt.Sprint(v))
					}
					d.Params = append(d.Params, param)
				}
				byName[fn.Name] = d
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return sortedDocs(byName), nil
}

// metaToolPlugins returns MetaTool's plugins (name → description), by name.
func metaToolPlugins(dataDir string) ([]retrieve.Doc, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, "metatool", "plugin_des.json"))
	if err != nil {
		return nil, fmt.Errorf("reading metatool plugins: %w", err)
	}
	var des map[string]string
	if err := json.Unmarshal(data, &des); err != nil {
		return nil, fmt.Errorf("reading metatool plugins: %w", err)
	}
	byName := map[string]retrieve.Doc{}
	for name, d := range des {
		byName[name] = retrieve.Doc{Name: name, Description: d}
	}
	return sortedDocs(byName), nil
}

func sortedDocs(byName map[string]retrieve.Doc) []retrieve.Doc {
	out := make([]retrieve.Doc, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// readLines calls fn with each non-blank line of a JSON Lines file.
func readLines(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			if ferr := fn(line); ferr != nil {
				return fmt.Errorf("reading %s line %d: %w", filepath.Base(path), n, ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", filepath.Base(path), err)
		}
	}
}
