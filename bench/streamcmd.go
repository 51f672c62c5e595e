package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/bench/fakemodel"
	"toolrouter/bench/harness"
	"toolrouter/bench/load"
	"toolrouter/bench/streaming"
	"toolrouter/internal/fakeollama"
)

// streamIntro says what the council-stream section measures.
const streamIntro = "When the first words of a streamed chat completion reach the client: `model: \"council\"` " +
	"(two members, peer review, a chairman) against the chairman's model answering alone (`model: NAME`, routed the " +
	"same way). The command builds the sidecar and starts it on loopback with the council configured; a proxy in " +
	"the benchmark process stands between the sidecar and the model server and times every model call (its request, " +
	"its first line of text, its end), so the client's and the model calls' times are read on one clock. **End of " +
	"stage 2** is when the last review ended at the sidecar; **chairman's own first token** is the chairman call's " +
	"time from its request to its first text; the target is the first content token by their sum plus 50 ms, and " +
	"the chairman's text in as many content deltas as the server sent it in. **Reasoning** is the first " +
	"`reasoning_content` delta (the deliberation, shown while stages 1 and 2 run). Times are milliseconds from " +
	"the request, medians over the runs after one warm-up of each.\n\n"

// runStream is `go run ./bench stream`: the council-stream section.
func runStream(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ollama := fs.String("ollama", "", "Ollama URL of a real model server (\"\": the fake model, whose timings are set by -fake-*)")
	routerModel := fs.String("model", "", "with -ollama: the router's model, and every council model unless -members or -chairman say otherwise")
	membersFlag := fs.String("members", "", "with -ollama: the two members' models, comma-separated (default: -model twice)")
	chairFlag := fs.String("chairman", "", "with -ollama: the chairman's model (default: -model)")
	chairTokens := fs.Int("chairman-tokens", 160, "with -ollama: the chairman's num_predict (at least 100 tokens of answer)")
	memberTokens := fs.Int("member-tokens", 48, "with -ollama: each member's num_predict")
	reps := fs.Int("reps", 5, "measured runs of each completion, after one warm-up")
	fakePrefill := fs.Duration("fake-prefill", 40*time.Millisecond, "without -ollama: each fake model call's wait before its first piece")
	fakePiece := fs.Duration("fake-piece", 3*time.Millisecond, "without -ollama: the fake model's wait before each further piece (8 characters)")
	binary := fs.String("binary", "", "toolrouter binary (default: go build the repository's)")
	probeTimeout := fs.Duration("probe-timeout", 2*time.Minute, "with -ollama: how long the test chat that must succeed first may take")
	docTo := docFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	docPath, err := docTo.resolve(fs)
	if err != nil {
		return err
	}
	doc := &docPath
	if *reps < 1 {
		return fmt.Errorf("-reps: want at least 1, got %d", *reps)
	}
	real := *ollama != ""
	if real && *routerModel == "" {
		return errors.New("-ollama needs -model")
	}
	upstream, what := *ollama, ""
	members := []string{"member-a", "member-b"}
	chair, router := "chairman", "fake"
	if real {
		router, chair = *routerModel, *routerModel
		members = []string{*routerModel, *routerModel}
		if *membersFlag != "" {
			members = strings.Split(*membersFlag, ",")
			if len(members) != 2 {
				return fmt.Errorf("-members: want two models, got %q", *membersFlag)
			}
		}
		if *chairFlag != "" {
			chair = *chairFlag
		}
		client, err := harness.Client(*ollama)
		if err != nil {
			return err
		}
		for _, m := range append([]string{router, chair}, members...) {
			if reason := harness.Probe(ctx, client, *ollama, m, harness.ProbeTimeouts{List: 3 * time.Second, Chat: *probeTimeout}); reason != "" {
				return fmt.Errorf("nothing measured: %s", reason)
			}
		}
		version, err := client.Version(ctx)
		if err != nil {
			version = "version unknown"
		}
		what = fmt.Sprintf("Ollama %s at %s: router %s, members %s, chairman %s (num_predict %d; members %d)",
			version, *ollama, router, strings.Join(members, " and "), chair, *chairTokens, *memberTokens)
		if randomWeightModel(chair) {
			what += "; random-weight models: the figures measure the server and the sidecar, not a model"
		}
	} else {
		fake := fakeollama.Start(fakeStreamModel(*fakePrefill, *fakePiece))
		defer fake.Close()
		fake.Models = append([]string{router, chair}, members...)
		upstream = fake.URL
		what = fmt.Sprintf("the fake model (internal/fakeollama): every call waits %s before its first piece and %s before each further one; "+
			"members write %d pieces, reviews %d, the chairman and the single model %d",
			*fakePrefill, *fakePiece, len(fakeollama.Pieces(fakeMemberText)), len(fakeollama.Pieces(fakeReviewText)), len(fakeollama.Pieces(fakeChairText)))
	}
	proxy, err := streaming.NewProxy(upstream)
	if err != nil {
		return err
	}
	defer proxy.Close()

	work, err := os.MkdirTemp("", "toolrouter-stream-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if *binary == "" {
		*binary = filepath.Join(work, "toolrouter")
		fmt.Fprintln(stderr, "bench stream: building the sidecar")
		if err := buildSidecar(ctx, *binary); err != nil {
			return err
		}
	}
	member := func(name, model string, tokens int) map[string]any {
		m := map[string]any{"name": name, "model": model, "timeout": "10m"}
		if real {
			m["options"] = map[string]any{"num_predict": tokens, "temperature": 0, "seed": 42}
		}
		return m
	}
	overlay := map[string]any{
		"ollama": map[string]any{"host": proxy.URL(), "model": router},
		"http":   map[string]any{"request_timeout": "20m", "write_timeout": "20m"},
		"router": map[string]any{"deadline": "10m"},
		"council": map[string]any{
			"members":  []map[string]any{member("one", members[0], *memberTokens), member("two", members[1], *memberTokens)},
			"chairman": member("chair", chair, *chairTokens),
		},
	}
	side, err := load.Start(ctx, load.Options{Binary: *binary, WorkDir: work}, proxy.URL(), overlay)
	if err != nil {
		return err
	}
	defer side.Stop()

	const query = "What is 17 times 23, plus 16? Explain how you got it."
	singleTokens := 0
	if real {
		singleTokens = *chairTokens
	}
	client := &http.Client{}
	loadStart := loadAverage()
	var council []streaming.CouncilRun
	var single []streaming.Completion
	for i := 0; i <= *reps; i++ {
		proxy.Take()
		c, start, err := streaming.Stream(ctx, client, side.URL(), "council", query, 0)
		if err != nil {
			return err
		}
		run, err := streaming.Council(c, start, proxy.Take())
		if err != nil {
			return err
		}
		// The single model writes as much as the chairman may.
		s, _, err := streaming.Stream(ctx, client, side.URL(), chair, query, singleTokens)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench stream: run %d/%d: council first words %.0f ms of %.0f (bound %.0f), single %.0f of %.0f\n",
			i, *reps, run.FirstContentMS, run.TotalMS, run.BoundMS, s.FirstContentMS, s.TotalMS)
		if i == 0 {
			continue // the warm-up: models loaded, caches filled
		}
		council, single = append(council, run), append(single, s)
	}
	cmdline := strings.Join(append([]string{"go run ./bench stream"}, relArgs(args)...), " ")
	md := streamMarkdown(cmdline, time.Now(), what, council, single, loadStart, loadAverage())
	section, head := sectionStream, "## Time to the first words of a council\n\n"+streamIntro
	if real {
		section, head = sectionStreamOn, "## Time to the first words of a council on a real Ollama\n\n"+
			"As above, on a real Ollama server (`scripts/real-ollama up` starts one with the tiny random-weight models `tiny` and "+
			"`tiny-json` and prints its URL). The members and the chairman are sent `num_predict`, and the single model as many "+
			"`max_tokens` as the chairman, so that models that do not stop still end.\n\n"
	}
	if err := updateDoc(*doc, section, head+md); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	return nil
}

// The fake model's answers in the stream benchmark.
var (
	fakeMemberText = "Seventeen times twenty-three is 391; adding sixteen gives 407. The calculator agrees."
	fakeReviewText = "Both answers reach 407 and show the steps.\n\nFINAL RANKING:\n1. Response A\n2. Response B"
	fakeChairText  = strings.Repeat("The council agrees that 17 times 23 is 391, and 391 plus 16 is 407; each step was checked. ", 9)
)

// fakeStreamModel answers the router as the load test's plumbing model does, and the council's
// and the single model's calls with fixed texts, prefill then each piece at a fixed pace.
func fakeStreamModel(prefill, piece time.Duration) func(api.ChatRequest) fakeollama.Reply {
	return func(req api.ChatRequest) fakeollama.Reply {
		if len(req.Format) > 0 || len(req.Tools) > 0 {
			return fakemodel.Reply(req)
		}
		r := fakeollama.Reply{Delay: prefill, PieceDelay: piece, PromptTokens: 200}
		var all strings.Builder
		for _, m := range req.Messages {
			all.WriteString(m.Content)
		}
		switch s := all.String(); {
		case strings.Contains(s, "You are reviewing answers"):
			r.Content = fakeReviewText
		case strings.Contains(s, "You are one member of a council"):
			r.Content = fakeMemberText
		default: // the chairman, or the single model
			r.Content = fakeChairText
		}
		r.CompletionTokens = len(strings.Fields(r.Content))
		return r
	}
}

// streamMarkdown is the section's figures: each measured run, then the medians, then whether the
// targets were met.
func streamMarkdown(cmdline string, date time.Time, what string, council []streaming.CouncilRun, single []streaming.Completion, loadBefore, loadAfter float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \n", cmdline)
	fmt.Fprintf(&b, "Date: %s.  \n", date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s.  \n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&b, "Models: %s.\n\n", what)
	b.WriteString("| run | council: reasoning | end of stage 2 | chairman's own first token | first content token | target | total | first / total | content deltas / server pieces | single model: first content token | total |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	met := 0
	for i, r := range council {
		s := single[i]
		ok := "met"
		if r.Met() {
			met++
		} else {
			ok = "missed"
		}
		fmt.Fprintf(&b, "| %d | %.0f | %.0f | %.0f | %.0f | ≤ %.0f, %s | %.0f | %.2f | %d / %d | %.0f | %.0f |\n",
			i+1, r.FirstReasoningMS, r.Stage2EndMS, r.ChairmanOwnMS, r.FirstContentMS, r.BoundMS, ok, r.TotalMS, r.FirstContentMS/r.TotalMS,
			r.ContentPieces, r.ChairmanPieces, s.FirstContentMS, s.TotalMS)
	}
	m := func(get func(streaming.CouncilRun) float64) float64 { return streaming.Median(council, get) }
	ms := func(get func(streaming.Completion) float64) float64 { return streaming.Median(single, get) }
	fmt.Fprintf(&b, "| median | %.0f | %.0f | %.0f | %.0f | ≤ %.0f | %.0f | %.2f | | %.0f | %.0f |\n",
		m(func(r streaming.CouncilRun) float64 { return r.FirstReasoningMS }), m(func(r streaming.CouncilRun) float64 { return r.Stage2EndMS }),
		m(func(r streaming.CouncilRun) float64 { return r.ChairmanOwnMS }), m(func(r streaming.CouncilRun) float64 { return r.FirstContentMS }),
		m(func(r streaming.CouncilRun) float64 { return r.BoundMS }), m(func(r streaming.CouncilRun) float64 { return r.TotalMS }),
		m(func(r streaming.CouncilRun) float64 { return r.FirstContentMS / r.TotalMS }),
		ms(func(s streaming.Completion) float64 { return s.FirstContentMS }), ms(func(s streaming.Completion) float64 { return s.TotalMS }))
	fmt.Fprintf(&b, "\nTargets met in %d of %d runs. The sidecar's own delay on the first words (first content token − the "+
		"chairman's first text at the proxy): median %.1f ms, at most %.1f ms. A council's first words come %.1f× as late as "+
		"the single model's (medians), and at %.0f%% of its own total time.\n",
		met, len(council), m(func(r streaming.CouncilRun) float64 { return r.AfterChairmanMS }), maxOf(council),
		m(func(r streaming.CouncilRun) float64 { return r.FirstContentMS })/ms(func(s streaming.Completion) float64 { return s.FirstContentMS }),
		100*m(func(r streaming.CouncilRun) float64 { return r.FirstContentMS / r.TotalMS }))
	if loadBefore >= 0 && loadAfter >= 0 {
		fmt.Fprintf(&b, "\nLoad average (1 min) %.1f at the start, %.1f at the end: the machine may be shared.\n", loadBefore, loadAfter)
	}
	return b.String()
}

func maxOf(runs []streaming.CouncilRun) float64 {
	out := 0.0
	for _, r := range runs {
		out = max(out, r.AfterChairmanMS)
	}
	return out
}
