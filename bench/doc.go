package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"toolrouter/bench/harness"
)

// The benchmark's figures live in one generated file, docs/benchmarks.md: a fixed head (what is
// measured and how) and one section per command, between HTML comment markers. A command given
// -docs rewrites its own section and keeps the others as they are; without it, or when its run is
// partial, it leaves the file alone (docTarget).

// Section names, in document order.
const (
	sectionAccuracy  = "accuracy"
	sectionLoad      = "load"
	sectionRetrieval = "retrieval"
	sectionFeatures  = "load-features"
	sectionConsole   = "load-console"
	sectionPath      = "load-path"
	sectionRouteCost = "route-cost"
	sectionMemory    = "memory"
	sectionWaiting   = "approvals-waiting"
	sectionStream    = "council-stream"
	sectionStreamOn  = "council-stream-ollama"
	sectionTrust     = "client-tools"
	sectionTrustOn   = "client-tools-ollama"
)

var docSections = []string{sectionAccuracy, sectionLoad, sectionFeatures, sectionConsole, sectionPath, sectionMemory, sectionWaiting,
	sectionRetrieval, sectionRouteCost, sectionStream, sectionStreamOn, sectionTrust, sectionTrustOn}

// notYetRun is a section's body before its command first ran.
var notYetRun = map[string]string{
	sectionAccuracy:  "## Routing accuracy\n\nNot generated yet: run `go run ./bench -docs`.\n",
	sectionLoad:      "## Load test of the sidecar\n\nNot generated yet: run `go run ./bench load -docs`.\n",
	sectionFeatures:  "## Cost of limits, usage records and metrics\n\nNot generated yet: run `go run ./bench load -features -docs`.\n",
	sectionConsole:   "## Cost of the console\n\nNot generated yet: run `go run ./bench load -console -docs`.\n",
	sectionPath:      "## The sidecar's own path\n\nNot generated yet: run `go run ./bench load -path -docs`.\n",
	sectionRetrieval: "## Retrieval: the phase-1 shortlist\n\nNot generated yet: run `go run ./bench retrieval -docs`.\n",
	sectionRouteCost: "## Route cost on a real Ollama\n\nNot generated yet: run `go run ./bench cost -ollama URL -model NAME -docs`.\n",
	sectionMemory:    "## Memory under large tool results\n\nNot generated yet: run `go run ./bench memory -docs`.\n",
	sectionWaiting:   "## Routes waiting for approval\n\nNot generated yet: run `go run ./bench approvals -docs`.\n",
	sectionStream:    "## Time to the first words of a council\n\nNot generated yet: run `go run ./bench stream -docs`.\n",
	sectionStreamOn:  "## Time to the first words of a council on a real Ollama\n\nNot generated yet: run `go run ./bench stream -ollama URL -model NAME -docs`.\n",
	sectionTrust:     "## Client tools: calls a client can trust\n\nNot generated yet: run `go run ./bench trust -docs`.\n",
	sectionTrustOn:   "## Client tools on a real Ollama\n\nNot generated yet: run `go run ./bench trust -ollama URL -model NAME -docs`.\n",
}

func beginMarker(name string) string {
	return "<!-- BEGIN " + name + " (generated; rewritten by its command) -->"
}
func endMarker(name string) string { return "<!-- END " + name + " -->" }

// defaultDoc is where the commands write the document.
func defaultDoc() string { return filepath.Join(moduleDir(), "docs", "benchmarks.md") }

// docTarget is where a command writes its section: nowhere unless asked. -docs asks for the
// repository's docs/benchmarks.md, which only a complete run may rewrite; -doc PATH for another
// document, a scratch copy, which any run may.
type docTarget struct {
	repo bool
	path string
}

// docFlags declares -docs and -doc on fs.
func docFlags(fs *flag.FlagSet) *docTarget {
	d := &docTarget{}
	fs.BoolVar(&d.repo, "docs", false, "rewrite this command's section of docs/benchmarks.md (a complete run only: refused with a flag that narrows the run)")
	fs.StringVar(&d.path, "doc", "", "rewrite this command's section of this document instead, a scratch copy (any run; \"\": none)")
	return d
}

// errPartial is returned when a partial run is asked to rewrite the repository's document.
var errPartial = errors.New("a partial run may not rewrite docs/benchmarks.md")

// resolve returns the document the run writes ("" none), after fs is parsed. partial names the
// flags that narrow the run (fewer datasets, routers, sizes or queries, output elsewhere): set to
// anything but its default, it makes the run partial, and a partial run is refused the
// repository's document, before it starts, so that a scratch run never replaces a complete
// section with its few rows.
func (d *docTarget) resolve(fs *flag.FlagSet, partial ...string) (string, error) {
	repo := defaultDoc()
	path := d.path
	if d.repo {
		if path != "" && !samePath(path, repo) {
			return "", errors.New("-docs and -doc name different documents: give one")
		}
		path = repo
	}
	if path == "" || !samePath(path, repo) {
		return path, nil
	}
	var narrowed []string
	for _, name := range partial {
		if f := fs.Lookup(name); f != nil && f.Value.String() != f.DefValue {
			narrowed = append(narrowed, "-"+name+" "+f.Value.String())
		}
	}
	if len(narrowed) > 0 {
		return "", fmt.Errorf("%w (%s): drop -docs, or write a scratch copy with -doc PATH", errPartial, strings.Join(narrowed, ", "))
	}
	return path, nil
}

// samePath reports whether two paths name the same file, by their absolute, cleaned forms.
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// updateDoc rewrites section name of the document at path with body, keeping the other sections;
// it creates the file (and its folder) when missing. path "" writes nothing.
func updateDoc(path, name, body string) error {
	if path == "" {
		return nil
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	sections := map[string]string{}
	for _, s := range docSections {
		sections[s] = notYetRun[s]
		if kept, ok := sectionOf(string(old), s); ok {
			sections[s] = kept
		}
	}
	sections[name] = strings.TrimRight(body, "\n") + "\n"
	var b strings.Builder
	b.WriteString(docHead)
	for _, s := range docSections {
		fmt.Fprintf(&b, "\n%s\n%s%s\n", beginMarker(s), sections[s], endMarker(s))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// sectionOf returns the body between a section's markers in doc.
func sectionOf(doc, name string) (string, bool) {
	_, rest, ok := strings.Cut(doc, beginMarker(name)+"\n")
	if !ok {
		return "", false
	}
	body, _, ok := strings.Cut(rest, endMarker(name))
	return body, ok
}

// docHead is the document's fixed part: definitions and commands, no figures.
var docHead = `# Benchmarks

<!-- Generated by ` + "`go run ./bench`" + ` and its modes ` + "`load`, `retrieval`, `cost`, `memory`, `approvals`, `stream` and `trust`" + `:
each, given -docs, rewrites its own section below. Edit
bench/doc.go (this head) or the generators, not this file. -->

Every figure in this file is generated, next to the command that produced it, the date and the
machine. Nothing here is typed by hand. How toolrouter's router compares with keyword matching on
labeled data, what the sidecar costs under load, how well and how cheaply the phase-1 shortlist
finds the right tool in a large inventory, and what a route costs on a real Ollama server.

**No model's accuracy appears here unless a model server answered a test chat with that model.**
Without one, the rows of the model routers (` + "`two-phase`, `native`, `hybrid`" + `) say "skipped: …"
with the reason; they are never shown as zeros. A real-model run is one flag away:

` + "```sh" + `
ollama pull qwen2.5:7b
go run ./bench -ollama http://127.0.0.1:11434 -model qwen2.5:7b -docs      # every dataset (hours on a CPU), into this file
go run ./bench -ollama http://127.0.0.1:11434 -model qwen2.5:7b -limit 50  # first 50 queries of each: stdout and -out only
` + "```" + `

The harness first lists the server's models (3 s), then makes one short chat with the model
(` + "`-probe-timeout`" + `, 2 minutes, which covers loading it); only when that chat succeeds do the model
rows run. Every answer is written to ` + "`cases.jsonl`" + ` in ` + "`-out`" + ` as soon as it is made, so an
interrupted run keeps what it did, and ` + "`-resume`" + ` with the same flags runs only the rest.
A command writes its section here only when given ` + "`-docs`" + `, and refuses to
when its run is partial (fewer datasets, routers, queries or sizes than by default, or ` + "`-out`" + `
elsewhere): a scratch run goes to another document with ` + "`-doc PATH`" + `, or to none. ` + "`-fake-model`" + ` runs the model routers against a
fake model as a plumbing check (listed apart, no accuracy). ` + "`-reasoning none,brief,full`" + ` runs the
routers that select with phase 1 (` + "`two-phase`" + `, ` + "`hybrid`" + `) once per ` + "`router.reasoning`" + ` setting, each
setting its own rows: the shipped setting (` + "`none`" + `) keeps the router's name, the others are named
` + "`two-phase (reasoning brief)`" + ` and so on; ` + "`native`" + ` has no phase 1 and runs once. Without the flag
only the shipped setting runs.

` + "`go run ./bench cost -ollama URL -model NAME`" + ` measures what a route costs on a real Ollama
server, from the router's own outcome (each phase-1 trace step carries the server's counters): per
` + "`router.reasoning`" + ` and selection round the decode tokens, the same answers' tokens by the model's
tokenizer (` + "`-tokenizer-model`" + `, default the model itself), the rest of the server's time and the
share of the prompt not served from its cache, with each route's wall time and model calls
(` + "`-reasoning`" + `, ` + "`-rounds-reps`" + `); and phase 1's rest and decode time per token over 10, 30 and 200
BFCL tools (` + "`-sizes`" + `, ` + "`-reps`" + `). It needs a server that answers a test chat with the model, and
writes nothing otherwise. A model with random weights (scripts/real-ollama's tiny models:
` + "`-random-weights`" + `, or recognised by name) is allowed there, since the section measures the
server rather than the model, and is labelled so.

## What is compared

| router | what it is |
|---|---|
| ` + "`council-keywords`" + ` | a port of the keyword lists councils use to decide on tools without a model: a tool when the lower-cased query contains one of its math or search indicators; the tool sharing most words with the query |
| ` + "`keyword-overlap`" + ` | distinct shared terms between the query and each tool's name, description and parameter names; "no tool" at or below a tuned threshold |
| ` + "`bm25`" + ` | Okapi BM25 (k1 1.2, b 0.75) over tool documents; "no tool" at or below a tuned threshold |
| ` + "`two-phase`" + ` | this project's router (` + "`router.New`" + `, built-in settings): selection, then arguments, with a model |
| ` + "`native`" + ` | the router's native mode: Ollama's tool calling |
| ` + "`hybrid`" + ` | the council's keyword gate in front of ` + "`two-phase`" + ` |

Every router sees the same tools, brought up the production way (MCP servers in an
` + "`inventory.Manager`" + `). BFCL records get one in-process server each, MetaTool's 199 tools one server;
the scenario set offers the built-in calculator and clock and, when node is installed, the npm
reference servers (everything, filesystem, memory). Sources and licences: ` + "`bench/data/SOURCE.md`" + `;
every scenario names the record its wording is quoted from.

The "no tool" thresholds of ` + "`keyword-overlap`" + ` and ` + "`bm25`" + ` are tuned per source, never per
dataset: BFCL's five categories pooled, MetaTool's selection and awareness pooled, and the
scenarios, so each source's tuning data hold "tool" and "no tool" queries. Within a source, a
query falls in one of ` + strconv.Itoa(harness.Folds) + ` folds by a hash of the seed, its source, its dataset and its id, and is
decided by the threshold that maximises routing accuracy on the source's other ` + strconv.Itoa(harness.Folds-1) + ` folds. Adding
data to one source never moves another source's figures. A source run with one label only (say
BFCL's tool categories alone) learns no threshold: its rows use a tool on any match and carry a
note saying so.

## Metrics

- **degraded**: answers where the model failed and the router fell back (` + "`Outcome.Degraded`" + `, or
  the loop stopped on a model failure). A degraded answer is its own outcome and right by no
  measure, a "no tool" query included. A run with more than 1% degraded answers says so at the
  top of its section.
- **timed out**: answers cancelled at ` + "`-case-timeout`" + ` (2 minutes by default), counted apart
  from the degraded ones and, like them, right by no measure. A report with any says so at the top.
- **Decision**: precision, recall and F1 of "needs a tool"; a degraded answer on a tool query is a
  miss, on a no-tool query it is not a true negative.
- **Selection**: over queries that need a tool and name it, the distinct tools called are exactly
  those of an acceptable answer.
- **Arguments** (model routers): over queries with the right tools and labeled arguments, the calls
  pass BFCL's AST checker (ported from ` + "`ast_checker.py`" + `).
- **Routing**: over every query: a no-tool query without a call, a tool query with exactly the
  right tools.
- **End-to-end** (model routers; n/a for routers that execute nothing): routing, and every call
  executed and returned without error (no call error, a result not marked ` + "`isError`" + `), and the
  arguments right where they are labeled.
- **Latency** p50/p95/p99 per query (nearest rank); model calls and prompt tokens per query;
  queries per second of one goroutine for the keyword routers.
- **Where the time went** (model routers, a table under each dataset's): model calls, decode
  tokens and uncached prompt tokens (not served from the server's prompt cache) per query, and the
  mean milliseconds per query of each part of the wall time: the model server's **load**,
  **prefill** and **decode** (as it reports them), the **rest** of the model calls' wall time (the
  server's other work, waiting for a slot, the transport), **tools** (tool calls outside model
  calls) and the **sidecar** (neither running: prompts, validation, the loop). The parts add up to
  the mean latency; calls that overlap count once, the server's figures scaled to the wall time
  they cover. Each line of ` + "`cases.jsonl`" + ` carries the same for its case: ` + "`decode_tokens`" + `,
  ` + "`uncached_prompt_tokens`" + `, ` + "`load_ms`" + `, ` + "`prefill_ms`" + `, ` + "`decode_ms`" + `, ` + "`rest_ms`" + `, ` + "`tools_ms`" + `,
  ` + "`sidecar_ms`" + ` (adding up to ` + "`latency_ms`" + `); ` + "`-check`" + ` fails a model router's line without them
  or whose parts do not add up.
- **Phase-1 confidence** (routers that select with phase 1, against a server that sends
  logprobs): the mean of the model's own probability for its first selection's ` + "`use_tool`" + ` and for
  its choice of tools, each over the answers that carry it, in a line under each dataset's table.
  Each line of ` + "`cases.jsonl`" + ` carries its run's ` + "`reasoning`" + ` and that selection's ` + "`confidence`" + `
  (` + "`use_tool`" + `, ` + "`tool`" + `, as ` + "`/v1/route`" + ` returns it; absent without logprobs); ` + "`-check`" + ` fails a line
  whose ` + "`reasoning`" + ` is not its run's or whose confidence lies outside [0, 1].
`
