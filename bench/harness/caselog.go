package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"toolrouter/bench/metrics"
	"toolrouter/bench/report"
	"toolrouter/router"
)

// The per-case file (cases.jsonl in the output folder) keeps every router's answer to every case
// as the run goes: a header line with the run's parameters, then one JSON line per router and case,
// written as soon as the case is done. An interrupted run (a slow model, a killed process) keeps
// what it did, and -resume runs only the cases the file lacks, then reports from all the lines.
// Every prediction the scorer sees goes through its line, so a resumed run and a clean one score
// the same answers the same way.

// CaseFormat names the per-case file's format in its header; a file of another format is never
// resumed. Version 2 added the decode and uncached prompt tokens and the time split.
const CaseFormat = "toolrouter-bench-cases/2"

// Outcome is what one router did with one case.
type Outcome string

// Outcomes.
const (
	OutcomeTool   Outcome = "tool"    // called one or more tools
	OutcomeNoTool Outcome = "no_tool" // answered without a tool
	// OutcomeRanked is a thresholded router's best tool and score: whether it uses the tool is
	// decided after the run, by the threshold tuned on the other folds of its source.
	OutcomeRanked Outcome = "ranked"
	// OutcomeDegraded: the model failed and the router fell back; never right.
	OutcomeDegraded Outcome = "degraded"
	// OutcomeTimedOut: the case ran over the case timeout and was cancelled; never right.
	OutcomeTimedOut Outcome = "timed_out"
)

// CaseParams are the run parameters a case's answer depends on. A file is resumed only by a run
// with the same ones; the model server's URL is not among them (a restarted server may listen
// elsewhere).
type CaseParams struct {
	Datasets []string `json:"datasets"`
	// Sources are the datasets' files, in the order of Datasets.
	Sources []string `json:"sources"`
	Routers []string `json:"routers"`
	// Reasoning lists the router.reasoning settings the routers that select with phase 1 run
	// with (Options.Reasoning; absent when no model router is requested).
	Reasoning      []router.Reasoning `json:"reasoning,omitempty"`
	Limit          int                `json:"limit"`
	Seed           uint64             `json:"seed"`
	MetaToolSample int                `json:"metatool_sample"`
	// Model is the model the model routers use ("" when none is requested).
	Model         string `json:"model"`
	FakeModel     bool   `json:"fake_model"`
	RandomWeights bool   `json:"random_weights"`
	CaseTimeout   string `json:"case_timeout"`
}

// CaseHeader is the per-case file's first line.
type CaseHeader struct {
	Format   string     `json:"format"`
	Params   CaseParams `json:"params"`
	ModelURL string     `json:"model_url,omitempty"`
	Started  time.Time  `json:"started"`
	// Label says what the model rows are when they are not measurements ("random weights: not an
	// accuracy figure").
	Label string `json:"label,omitempty"`
}

// CaseRecord is one router's answer to one case.
type CaseRecord struct {
	// Router is the name of the run (Variant): the router, with its reasoning setting when that
	// is not the shipped one.
	Router string `json:"router"`
	// Reasoning is the run's router.reasoning (routers that select with phase 1 only).
	Reasoning router.Reasoning `json:"reasoning,omitempty"`
	Dataset   string           `json:"dataset"`
	Case      string           `json:"case"`
	Outcome   Outcome          `json:"outcome"`
	// Calls are the tool calls of the answer (a model-free router's: the chosen tool, no arguments).
	Calls []metrics.Call `json:"calls,omitempty"`
	// Best and Score are a ranking router's top tool and its score.
	Best  string  `json:"best,omitempty"`
	Score float64 `json:"score,omitempty"`
	// RoutingRight says whether the case was routed right (see score); absent where that is
	// decided later (thresholded routers) or is no measurement (the fake and random-weight models).
	RoutingRight *bool   `json:"routing_right,omitempty"`
	LatencyMS    float64 `json:"latency_ms"`
	ModelCalls   int     `json:"model_calls"`
	PromptTokens int     `json:"prompt_tokens"`
	// DecodeTokens are the tokens the model generated, UncachedPromptTokens the prompt tokens it
	// evaluated (not served from its prompt cache).
	DecodeTokens         int `json:"decode_tokens"`
	UncachedPromptTokens int `json:"uncached_prompt_tokens"`
	// TimeSplit is where LatencyMS went (model routers; zero for the others): load_ms,
	// prefill_ms, decode_ms, rest_ms, tools_ms, sidecar_ms.
	report.TimeSplit
	// Confidence is phase 1's confidence in its first selection, {"use_tool", "tool"}, from the
	// model server's logprobs (Outcome.Confidence): absent without them and for the routers
	// without phase 1, a figure absent when the answer did not carry it.
	Confidence *router.Confidence `json:"confidence,omitempty"`
	DegradedBy string             `json:"degraded_by,omitempty"`
	// Degraded is the router's explanation of a degraded answer.
	Degraded   string `json:"degraded,omitempty"`
	Failed     int    `json:"failed"`
	Executed   int    `json:"executed"`
	Recorded   int    `json:"recorded"`
	Mismatches int    `json:"mismatches"`
}

// record turns a prediction of a run into its line.
func (p prediction) record(rn routerRun, ds, id string) CaseRecord {
	r := CaseRecord{
		Router: rn.name, Reasoning: rn.reasoning, Dataset: ds, Case: id, Calls: p.calls, Best: p.best, Score: p.score,
		LatencyMS:  float64(p.latency.Nanoseconds()) / 1e6,
		ModelCalls: p.modelCalls, PromptTokens: p.promptTokens, DegradedBy: p.degradedBy, Degraded: p.degradedWhy,
		DecodeTokens: p.decodeTokens, UncachedPromptTokens: p.uncachedTokens, TimeSplit: p.time, Confidence: p.confidence,
		Failed: p.failed, Executed: p.executed, Recorded: p.recorded, Mismatches: p.mismatches,
	}
	switch {
	case p.timedOut:
		r.Outcome = OutcomeTimedOut
	case p.degraded:
		r.Outcome = OutcomeDegraded
	case thresholded(rn.router):
		r.Outcome = OutcomeRanked
	case p.used:
		r.Outcome = OutcomeTool
	default:
		r.Outcome = OutcomeNoTool
	}
	return r
}

// prediction turns a line back into the prediction it was made from.
func (r CaseRecord) prediction() prediction {
	return prediction{
		used: !thresholded(r.Router) && len(r.Calls) > 0, calls: r.Calls, best: r.Best, score: r.Score,
		latency:    time.Duration(math.Round(r.LatencyMS * 1e6)),
		modelCalls: r.ModelCalls, promptTokens: r.PromptTokens, decodeTokens: r.DecodeTokens, uncachedTokens: r.UncachedPromptTokens, time: r.TimeSplit,
		confidence: r.Confidence,
		degraded:   r.Outcome == OutcomeDegraded, degradedBy: r.DegradedBy, degradedWhy: r.Degraded, timedOut: r.Outcome == OutcomeTimedOut,
		failed: r.Failed, executed: r.Executed, recorded: r.Recorded, mismatches: r.Mismatches,
	}
}

type caseKey struct{ router, dataset, id string }

// CaseLog is an open per-case file. Its methods are safe for concurrent use; a nil *CaseLog keeps
// nothing and resumes nothing.
type CaseLog struct {
	path string

	mu    sync.Mutex // guards f, done, wrote
	f     *os.File
	done  map[caseKey]CaseRecord
	wrote int
}

// OpenCaseLog opens the per-case file at path. Without resume it starts the file over with h as
// its header. With resume it keeps the file's lines for Lookup, refusing a file whose header names
// another format or other parameters; a missing file is started over. A last line cut short (the
// process was killed while writing it) is dropped.
func OpenCaseLog(path string, h CaseHeader, resume bool) (*CaseLog, error) {
	h.Format = CaseFormat
	l := &CaseLog{path: path, done: map[caseKey]CaseRecord{}}
	if resume {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
		switch {
		case err == nil:
			if err := l.load(f, h.Params); err != nil {
				f.Close()
				return nil, err
			}
			l.f = f
			return l, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("opening %s: %w", path, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	l.f = f
	if err := l.writeLine(h); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// load reads an existing file for resuming and drops a last line cut short.
func (l *CaseLog) load(f *os.File, want CaseParams) error {
	raw, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("reading %s: %w", l.path, err)
	}
	if end := bytes.LastIndexByte(raw, '\n') + 1; end < len(raw) {
		if err := f.Truncate(int64(end)); err != nil {
			return fmt.Errorf("dropping the cut-short last line of %s: %w", l.path, err)
		}
		raw = raw[:end]
	}
	h, recs, err := parseCases(raw)
	if err != nil {
		return fmt.Errorf("resuming %s: %w", l.path, err)
	}
	if diff := paramsDiff(h.Params, want); diff != "" {
		return fmt.Errorf("resuming %s: it was made with other parameters (%s); rerun with the same flags, "+
			"or without -resume to start over", l.path, diff)
	}
	for _, r := range recs {
		l.done[caseKey{r.Router, r.Dataset, r.Case}] = r
	}
	return nil
}

// ReadCases reads a per-case file: its header and its lines, in order.
func ReadCases(path string) (CaseHeader, []CaseRecord, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return CaseHeader{}, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	h, recs, err := parseCases(raw)
	if err != nil {
		return CaseHeader{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, recs, nil
}

func parseCases(raw []byte) (CaseHeader, []CaseRecord, error) {
	var h CaseHeader
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<20)
	var recs []CaseRecord
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if n == 1 {
			if err := dec.Decode(&h); err != nil || h.Format != CaseFormat {
				return h, nil, fmt.Errorf("line 1 is not a %s header", CaseFormat)
			}
			continue
		}
		var r CaseRecord
		if err := dec.Decode(&r); err != nil {
			return h, nil, fmt.Errorf("line %d: %w", n, err)
		}
		recs = append(recs, r)
	}
	if h.Format == "" {
		return h, nil, fmt.Errorf("no %s header", CaseFormat)
	}
	return h, recs, sc.Err()
}

// paramsDiff names the parameters that differ between a file's and this run's, "" when none.
func paramsDiff(had, now CaseParams) string {
	var a, b map[string]json.RawMessage
	ja, _ := json.Marshal(had)
	jb, _ := json.Marshal(now)
	_ = json.Unmarshal(ja, &a)
	_ = json.Unmarshal(jb, &b)
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if !bytes.Equal(a[k], b[k]) {
			diffs = append(diffs, fmt.Sprintf("%s: %s in the file, %s now", k, orNone(a[k]), b[k]))
		}
	}
	return strings.Join(diffs, "; ")
}

func orNone(v json.RawMessage) string {
	if len(v) == 0 {
		return "none"
	}
	return string(v)
}

// Path is the file's path ("" for a nil log).
func (l *CaseLog) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// Resumed is the number of lines the file held when it was opened.
func (l *CaseLog) Resumed() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.done) - l.wrote
}

// Lines is the number of case lines in the file.
func (l *CaseLog) Lines() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.done)
}

// lookup returns a router's earlier answer to a case.
func (l *CaseLog) lookup(router, ds, id string) (CaseRecord, bool) {
	if l == nil {
		return CaseRecord{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.done[caseKey{router, ds, id}]
	return r, ok
}

// add writes one answer as one line, in one write, so a killed process leaves whole lines.
func (l *CaseLog) add(r CaseRecord) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writeLine(r); err != nil {
		return err
	}
	l.done[caseKey{r.Router, r.Dataset, r.Case}] = r
	l.wrote++
	return nil
}

func (l *CaseLog) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding a line of %s: %w", l.path, err)
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file.
func (l *CaseLog) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
