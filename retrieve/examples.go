package retrieve

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// maxExampleBytes bounds one learned query; a longer one is not kept (it would make a poor
// example and a large file).
const maxExampleBytes = 1000

// Examples holds the example queries of tools: configured ones, and learned ones that callers
// add from queries a tool answered well. Learned examples are kept per tool up to a bound (the
// oldest dropped first), deduplicated ignoring case and spacing, and persisted as JSON Lines so
// that they survive a restart. It is safe for concurrent use.
type Examples struct {
	perTool int

	mu         sync.Mutex // guards everything below
	configured map[string][]string
	generated  map[string][]string // tool → queries the router's model wrote (Generator)
	learned    map[string][]string // tool → queries, oldest first
	lf         lineFile            // the learned examples' file
	version    uint64
}

// exampleRecord is one line of the examples file.
type exampleRecord struct {
	Tool  string `json:"tool"`
	Query string `json:"query"`
}

// OpenExamples loads the learned examples persisted at path (created if missing; "" keeps
// learned examples in memory only) and keeps at most perTool per tool (perTool ≤ 0 means 20).
// Unreadable lines, such as a line cut short by a crash, are skipped and dropped when the file is
// next rewritten.
func OpenExamples(path string, perTool int) (*Examples, error) {
	if perTool <= 0 {
		perTool = 20
	}
	e := &Examples{perTool: perTool, configured: map[string][]string{}, generated: map[string][]string{},
		learned: map[string][]string{}, lf: lineFile{path: path, what: "examples"}}
	damaged, err := e.lf.load(func(line []byte) bool {
		var r exampleRecord
		if json.Unmarshal(line, &r) != nil || r.Tool == "" {
			return false
		}
		e.add(r.Tool, r.Query)
		return true
	})
	if err != nil {
		return nil, err
	}
	if damaged || e.lf.n > e.compactAt() {
		if err := e.rewrite(); err != nil {
			return nil, err
		}
		return e, nil
	}
	if err := e.lf.open(); err != nil {
		return nil, err
	}
	return e, nil
}

// SetConfigured replaces the configured examples (tool → queries); a learned example that repeats
// one of them is no longer reported separately.
func (e *Examples) SetConfigured(configured map[string][]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.configured = maps.Clone(configured)
	e.version++
}

// SetGenerated replaces the examples the model wrote for tool (none: nil).
func (e *Examples) SetGenerated(tool string, queries []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(queries) == 0 {
		delete(e.generated, tool)
	} else {
		e.generated[tool] = slices.Clone(queries)
	}
	e.version++
}

// Learn records query as an example of tool. It reports whether the query was added: not when it
// is blank, over 1000 bytes, or already an example of the tool (ignoring case and spacing). When
// the tool has perTool learned examples the oldest is dropped. The error is about persisting it;
// the example is kept in memory either way.
func (e *Examples) Learn(tool, query string) (bool, error) {
	query = strings.Join(strings.Fields(query), " ")
	if tool == "" || query == "" || len(query) > maxExampleBytes {
		return false, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.add(tool, query) {
		return false, nil
	}
	e.version++
	if e.lf.file == nil {
		return true, nil
	}
	line, err := json.Marshal(exampleRecord{Tool: tool, Query: query})
	if err != nil {
		return true, fmt.Errorf("encoding example: %w", err)
	}
	if err := e.lf.append(append(line, '\n'), 1); err != nil {
		return true, err
	}
	if e.lf.n > e.compactAt() {
		if err := e.rewrite(); err != nil {
			return true, err
		}
	}
	return true, nil
}

// add adds a learned example unless the tool has it already, dropping the oldest over the bound.
func (e *Examples) add(tool, query string) bool {
	query = strings.Join(strings.Fields(query), " ")
	if query == "" || len(query) > maxExampleBytes {
		return false
	}
	key := normaliseExample(query)
	same := func(q string) bool { return normaliseExample(q) == key }
	if slices.ContainsFunc(e.configured[tool], same) || slices.ContainsFunc(e.learned[tool], same) {
		return false
	}
	qs := append(e.learned[tool], query)
	if len(qs) > e.perTool {
		qs = slices.Clone(qs[len(qs)-e.perTool:])
	}
	e.learned[tool] = qs
	return true
}

func normaliseExample(q string) string {
	return strings.Join(strings.Fields(strings.ToLower(q)), " ")
}

// compactAt is the number of file records past which the file is rewritten with only the kept
// examples: twice what is kept, and at least 256, so rewrites stay rare.
func (e *Examples) compactAt() int {
	n := 0
	for _, qs := range e.learned {
		n += len(qs)
	}
	return max(2*n, 256)
}

// rewrite replaces the file with the kept learned examples and reopens it for appending.
func (e *Examples) rewrite() error {
	return e.lf.rewrite(func(emit func([]byte)) {
		for _, tool := range slices.Sorted(maps.Keys(e.learned)) {
			for _, q := range e.learned[tool] {
				line, _ := json.Marshal(exampleRecord{Tool: tool, Query: q})
				emit(append(line, '\n'))
			}
		}
	})
}

// Prune forgets the learned examples of the tools keep rejects (tools that no longer exist, say)
// and rewrites the file without them.
func (e *Examples) Prune(keep func(tool string) bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := len(e.learned)
	maps.DeleteFunc(e.learned, func(tool string, _ []string) bool { return !keep(tool) })
	if len(e.learned) == n {
		return nil
	}
	e.version++
	if e.lf.file == nil {
		return nil
	}
	return e.rewrite()
}

// For returns the examples of one tool: configured ones, generated ones, then learned ones oldest
// first, each once (ignoring case and spacing).
func (e *Examples) For(tool string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.forLocked(tool)
}

func (e *Examples) forLocked(tool string) []string {
	out := slices.Clone(e.configured[tool])
	for _, q := range slices.Concat(e.generated[tool], e.learned[tool]) {
		key := normaliseExample(q)
		if !slices.ContainsFunc(out, func(c string) bool { return normaliseExample(c) == key }) {
			out = append(out, q)
		}
	}
	return out
}

// All returns every tool's examples, configured, generated and learned (see For).
func (e *Examples) All() map[string][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string][]string, len(e.configured)+len(e.learned))
	for tool := range e.configured {
		out[tool] = e.forLocked(tool)
	}
	for _, m := range []map[string][]string{e.generated, e.learned} {
		for tool := range m {
			out[tool] = e.forLocked(tool)
		}
	}
	return out
}

// Written returns the examples written for each tool rather than learned: the configured ones,
// then those the model wrote (Generator) that do not repeat them (ignoring case and spacing).
// The index weighs them alike.
func (e *Examples) Written() map[string][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string][]string, len(e.configured)+len(e.generated))
	for tool, qs := range e.configured {
		out[tool] = slices.Clone(qs)
	}
	for tool, qs := range e.generated {
		out[tool] = mergeExamples(out[tool], qs)
	}
	return out
}

// Learned returns the learned examples, by tool, oldest first, without those that repeat a
// configured one (ignoring case and spacing).
func (e *Examples) Learned() map[string][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string][]string, len(e.learned))
	for tool, qs := range e.learned {
		var keep []string
		for _, q := range qs {
			key := normaliseExample(q)
			if !slices.ContainsFunc(e.configured[tool], func(c string) bool { return normaliseExample(c) == key }) {
				keep = append(keep, q)
			}
		}
		if len(keep) > 0 {
			out[tool] = keep
		}
	}
	return out
}

// Version changes whenever the examples do, so a caller knows when to rebuild documents.
func (e *Examples) Version() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.version
}

// Close closes the file; learned examples are kept in memory only from then on.
func (e *Examples) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lf.close()
}
