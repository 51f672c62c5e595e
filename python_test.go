package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPythonClient runs examples/python/client.py against the binary, with an API key, the
// built-in servers and a council of two members on a fake model: the client routes, then reads the
// answer stream event by event and prints the chairman's answer.
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is missing (.ci/run installs it)")
		}
		t.Skip("python3 is missing; skipping the Python client")
	}
	bin := buildBinary(t)
	model := councilModel(t)
	var key strings.Builder
	if err := run(context.Background(), []string{"keys", "new", "--org", "acme"}, &key, nil, nil); err != nil {
		t.Fatal(err)
	}
	var made struct {
		Key   string         `json:"key"`
		Entry map[string]any `json:"entry"`
	}
	if err := json.Unmarshal([]byte(key.String()), &made); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, map[string]any{
		"listen": "127.0.0.1:0",
		"ollama": map[string]any{"host": model.URL, "model": "fake"},
		"auth":   map[string]any{"keys": []any{made.Entry}},
		"orgs":   map[string]any{"acme": map[string]any{}},
		"council": map[string]any{
			"members":  []map[string]any{{"name": "one", "model": "m1"}, {"name": "two", "model": "m2"}},
			"chairman": map[string]any{"name": "chair", "model": "m3"},
		},
	})
	p := startBinary(t, bin, "-config", path)

	tests := []struct {
		name     string
		key      string
		wantExit int
		want     []string // in stdout (a refusal: stderr), in order
	}{
		{"answered by the council", made.Key, 0, []string{
			"route: use_tool=true tools=clock.current_time",
			"event select_start", "event select_complete: tools clock.current_time", "event tool_result: clock.current_time -> ",
			"event stage1_start: one, two", "event stage1_complete", "event stage2_start: one, two", "event stage2_complete",
			"event stage3_start: chair", "It is now, in UTC.\nevent stage3_complete", // the answer as the chairman writes it
			"answered_by: council", "final: It is now, in UTC.",
		}},
		{"refused without a key", "", 1, []string{"toolrouter: missing_credential"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, "examples/python/client.py", "what time is it?")
			cmd.Env = append(os.Environ(), "TOOLROUTER_URL="+p.Base, "TOOLROUTER_API_KEY="+tc.key)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != tc.wantExit {
				t.Fatalf("client exited %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", code, err, tc.wantExit, stdout.String(), stderr.String())
			}
			out := stdout.String() + stderr.String()
			t.Logf("client output:\n%s", out)
			at := 0
			for _, want := range tc.want {
				i := strings.Index(out[at:], want)
				if i < 0 {
					t.Fatalf("client output lacks %q after byte %d:\n%s", want, at, out)
				}
				at += i + len(want)
			}
		})
	}
}
