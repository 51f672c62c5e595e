package harness

import (
	"fmt"
	"slices"

	"toolrouter/config"
	"toolrouter/router"
)

// The routers that select with phase 1 (two-phase, and hybrid behind its keyword gate) run once
// per router.reasoning setting of Options.Reasoning, each run with its own rows and its own lines.
// Variant names a run: the setting the sidecar ships with keeps the router's plain name, so a
// default run's rows, lines and documents keep their shape.

// DefaultReasoning is router.reasoning as the sidecar ships it (config.Default).
var DefaultReasoning = config.Default().Router.Reasoning

// Reasonings lists router.reasoning's settings, in report order.
var Reasonings = []router.Reasoning{router.ReasoningNone, router.ReasoningBrief, router.ReasoningFull}

// usesPhase1 reports whether a router selects with phase 1, whose answer router.reasoning shapes.
// The native router does not: Ollama's tool calling has no phase-1 format.
func usesPhase1(name string) bool { return name == TwoPhase || name == Hybrid }

// Variant is the name of a router's rows and lines under a reasoning setting: the router's own
// name for the shipped setting ("" stands for it) and for routers without phase 1, else
// "NAME (reasoning SETTING)".
func Variant(name string, r router.Reasoning) string {
	if !usesPhase1(name) || r == "" || r == DefaultReasoning {
		return name
	}
	return fmt.Sprintf("%s (reasoning %s)", name, r)
}

// routerRun is one router as the harness runs it: the name of its rows and lines (Variant), the
// router, and its reasoning setting ("" for a router without phase 1).
type routerRun struct {
	name, router string
	reasoning    router.Reasoning
}

// expand lists the runs of routers under reasonings (empty: DefaultReasoning alone), in report
// order: each router's runs together, in the order of reasonings.
func expand(routers []string, reasonings []router.Reasoning) []routerRun {
	if len(reasonings) == 0 {
		reasonings = []router.Reasoning{DefaultReasoning}
	}
	var out []routerRun
	for _, name := range routers {
		if !usesPhase1(name) {
			out = append(out, routerRun{name: name, router: name})
			continue
		}
		for _, r := range reasonings {
			out = append(out, routerRun{name: Variant(name, r), router: name, reasoning: r})
		}
	}
	return out
}

// runOf is a router's run under the shipped setting.
func runOf(name string) routerRun { return expand([]string{name}, nil)[0] }

// checkReasonings refuses a setting router.reasoning does not have, and one given twice.
func checkReasonings(rs []router.Reasoning) error {
	for i, r := range rs {
		if !slices.Contains(Reasonings, r) {
			return fmt.Errorf("unknown reasoning %q (known: %v)", r, Reasonings)
		}
		if slices.Contains(rs[:i], r) {
			return fmt.Errorf("reasoning %q given twice", r)
		}
	}
	return nil
}

// reasoningsOf lists the reasoning settings of runs, each once, in order.
func reasoningsOf(runs []routerRun) []router.Reasoning {
	var out []router.Reasoning
	for _, rn := range runs {
		if rn.reasoning != "" && !slices.Contains(out, rn.reasoning) {
			out = append(out, rn.reasoning)
		}
	}
	return out
}
