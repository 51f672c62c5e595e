package main

import (
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"toolrouter/bench/fakemodel"
	"toolrouter/bench/load"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/testmcp"
)

// `go run ./bench memory` measures what large tool results cost the sidecar's memory: the built
// binary, with its defaults (the console and its recent requests on), routes again and again to a
// real mcp-go tool over stdio (this command, re-executed with -serve-tool) whose every answer is
// megabytes of structured content, chosen by the zero-latency fake model. It reports the
// process's resident memory above what it had idle, and what the console's recent requests hold.

// memoryTargetMB is the most the routes may add to the sidecar's resident memory.
const memoryTargetMB = 150

// memoryIntro says what the section measures.
const memoryIntro = "What tool results that answer megabytes cost the sidecar's memory. The benchmark builds the " +
	"sidecar and starts it on 127.0.0.1 with its defaults (the console and its recent requests on: " +
	"`ui.recent_requests` 100, `ui.recent_requests_bytes` 16 MiB; `router.max_result_bytes` 256 KiB), the " +
	"built-in servers off, and one stdio MCP server: a real mcp-go tool (the benchmark itself, re-executed) " +
	"whose every answer is a JSON object of records as structured content, with a line of text. The fake model " +
	"chooses that tool; routes run one after another. Idle is the sidecar's resident memory (`VmRSS`) once " +
	"it serves, before the first route; the peak is the highest `VmRSS` read after each route and the " +
	"process's own `VmHWM`. The target is a peak under " + "150 MiB above idle for 1,000 routes of 6 MB each.\n\n"

// memoryResult is one run.
type memoryResult struct {
	Routes, Done, Errors         int
	ResultBytes                  int
	Seconds                      float64
	IdleMB, PeakMB, HWMMB, EndMB float64
	RingBytes, RingMaxBytes      int
	RingKept                     int
	StructuredBytes              int // the structured content's JSON length, as the results report it
	FirstError                   string
}

// runMemory is `go run ./bench memory`.
func runMemory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	routes := fs.Int("routes", 1000, "routes to run, one after another")
	size := fs.Int("bytes", 6_000_000, "bytes of structured content's JSON each tool answer carries")
	binary := fs.String("binary", "", "toolrouter binary to test (default: go build the repository's)")
	docTo := docFlags(fs)
	serveTool := fs.Bool("serve-tool", false, "serve the records tool over stdio (the sidecar runs this)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *serveTool {
		return serveRecords(*size)
	}
	docPath, err := docTo.resolve(fs)
	if err != nil {
		return err
	}
	doc := &docPath
	if *routes < 1 || *size < 1 {
		return errors.New("-routes and -bytes must be at least 1")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this command's binary for the tool server: %w", err)
	}
	work, err := os.MkdirTemp("", "toolrouter-memory-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if *binary == "" {
		*binary = filepath.Join(work, "toolrouter")
		fmt.Fprintln(stderr, "bench memory: building the sidecar")
		if err := buildSidecar(ctx, *binary); err != nil {
			return err
		}
	}
	before := loadAverage()
	// Interrupted (Ctrl-C), the run stops routing and still writes how far it went, saying so.
	res, err := measureMemory(ctx, *binary, self, work, *routes, *size, stderr)
	if err != nil {
		return err
	}
	cmdline := strings.Join(append([]string{"go run ./bench memory"}, args...), " ")
	md := memoryMarkdown(cmdline, time.Now(), res, before, loadAverage())
	if err := updateDoc(*doc, sectionMemory, "## Memory under large tool results\n\n"+memoryIntro+md); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	return nil
}

// serveRecords serves one read-only tool, "records", over stdio: every call answers records
// whose JSON is at least size bytes as structured content, and a line of text.
func serveRecords(size int) error {
	// Encoded once: the server's own cost per call is then writing the message.
	js, err := json.Marshal(map[string]any{"records": testmcp.Records(size)})
	if err != nil {
		return err
	}
	text := fmt.Sprintf("%d bytes of records", len(js))
	answer := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}, StructuredContent: json.RawMessage(js)}
	s := server.NewMCPServer("records", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("records", mcp.WithDescription("Lists every record."), mcp.WithReadOnlyHintAnnotation(true)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return answer, nil })
	return server.ServeStdio(s)
}

// measureMemory starts the sidecar and runs the routes.
func measureMemory(ctx context.Context, binary, self, work string, routes, size int, progress io.Writer) (*memoryResult, error) {
	fake := fakeollama.Start(fakemodel.Reply)
	defer fake.Close()
	off := map[string]any{"enabled": false}
	cfg := map[string]any{
		"usage": map[string]any{"path": filepath.Join(work, "usage.db")},
		"servers": map[string]any{"calculator": off, "clock": off, "big": map[string]any{
			"purpose": "records", "transport": "stdio", "command": self,
			"args": []string{"memory", "-serve-tool", "-bytes", fmt.Sprint(size)}}},
	}
	sc, err := load.Start(ctx, load.Options{Binary: binary, WorkDir: work, StartTimeout: 2 * time.Minute}, fake.URL, cfg)
	if err != nil {
		return nil, err
	}
	defer sc.Stop()
	client := &http.Client{Timeout: 2 * time.Minute}
	if err := waitReady(ctx, client, sc.URL()); err != nil {
		return nil, err
	}
	res := &memoryResult{Routes: routes, ResultBytes: size, IdleMB: sc.RSSMB()}
	res.PeakMB = res.IdleMB
	body := []byte(`{"query":"list every record"}`)
	start := time.Now()
	for i := 1; i <= routes; i++ {
		if ctx.Err() != nil {
			break // interrupted: the figures say how far it went
		}
		res.Done = i
		n, err := routeTruncated(ctx, client, sc.URL(), body)
		if err != nil {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = err.Error()
			}
		} else {
			res.StructuredBytes = n
		}
		res.PeakMB = max(res.PeakMB, sc.RSSMB())
		if i%100 == 0 {
			fmt.Fprintf(progress, "bench memory: %d routes, %.0f s, RSS %.1f MiB (idle %.1f)\n", i, time.Since(start).Seconds(), sc.RSSMB(), res.IdleMB)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.EndMB, res.HWMMB = sc.RSSMB(), sc.PeakRSSMB()
	var ring struct {
		Bytes    int   `json:"bytes"`
		MaxBytes int   `json:"max_bytes"`
		Requests []any `json:"requests"`
	}
	if err := getJSON(context.WithoutCancel(ctx), client, sc.URL()+"/ui/api/requests", &ring); err != nil {
		return nil, fmt.Errorf("reading the recent requests: %w", err)
	}
	res.RingBytes, res.RingMaxBytes, res.RingKept = ring.Bytes, ring.MaxBytes, len(ring.Requests)
	return res, nil
}

// waitReady polls /readyz until the sidecar is ready and its tool server up (at most two minutes).
func waitReady(ctx context.Context, c *http.Client, base string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var ready struct {
			Ready   bool `json:"ready"`
			Servers []struct {
				Name, Status string
			} `json:"servers"`
		}
		err := getJSON(ctx, c, base+"/readyz", &ready)
		if err == nil && ready.Ready && len(ready.Servers) == 1 && ready.Servers[0].Status == "up" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sidecar was not ready with its tool server up within two minutes: %v (%+v)", err, ready)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// routeTruncated makes one route and checks its result is cut: it returns the structured
// content's length as the result reports it.
func routeTruncated(ctx context.Context, c *http.Client, base string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/route", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var out struct {
		Result *struct {
			Structured      any  `json:"structured"`
			StructuredBytes int  `json:"structured_bytes"`
			Truncated       bool `json:"truncated"`
		} `json:"result"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil || out.Result == nil {
		return 0, fmt.Errorf("route: got %d %.300s, want 200 with a result", resp.StatusCode, raw)
	}
	if !out.Result.Truncated || out.Result.Structured != nil {
		return 0, fmt.Errorf("route: got a result with truncated %v and structured content %v, want it cut", out.Result.Truncated, out.Result.Structured != nil)
	}
	return out.Result.StructuredBytes, nil
}

func getJSON(ctx context.Context, c *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
		return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// memoryMarkdown is the section's figures.
func memoryMarkdown(cmdline string, date time.Time, r *memoryResult, loadBefore, loadAfter float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \n", cmdline)
	fmt.Fprintf(&b, "Date: %s.  \n", date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s. %d routes of %d bytes of structured content each (%d as the results report it), in %.0f s.\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), r.Done, r.ResultBytes, r.StructuredBytes, r.Seconds)
	if r.Done < r.Routes {
		fmt.Fprintf(&b, "**Interrupted after %d of the %d routes asked for**: the figures cover those only.\n\n", r.Done, r.Routes)
	}
	b.WriteString("| idle RSS MiB | peak RSS MiB | peak above idle MiB | VmHWM above idle MiB | RSS at the end above idle MiB | recent requests kept | their bytes | their bound | errors |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| %.1f | %.1f | %.1f | %.1f | %.1f | %d | %d | %d | %d |\n",
		r.IdleMB, r.PeakMB, r.PeakMB-r.IdleMB, r.HWMMB-r.IdleMB, r.EndMB-r.IdleMB, r.RingKept, r.RingBytes, r.RingMaxBytes, r.Errors)
	verdict := "met"
	if above := max(r.PeakMB, r.HWMMB) - r.IdleMB; above >= memoryTargetMB || r.Errors > 0 {
		verdict = "not met"
	} else if r.Done < 1000 {
		verdict = "not shown (fewer than 1,000 routes ran)"
	}
	fmt.Fprintf(&b, "\nTarget (under %d MiB above idle, every result cut): %s.\n", memoryTargetMB, verdict)
	if r.FirstError != "" {
		fmt.Fprintf(&b, "\nFirst error: %s\n", r.FirstError)
	}
	if loadBefore >= 0 && loadAfter >= 0 {
		fmt.Fprintf(&b, "\nLoad average (1 min) %.1f at the start, %.1f at the end: the machine may be shared.\n", loadBefore, loadAfter)
	}
	return b.String()
}
