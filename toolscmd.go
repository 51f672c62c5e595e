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
	"strings"
	"time"
)

// envAPIKey names the environment variable the admin commands read their API key from.
const envAPIKey = "TOOLROUTER_API_KEY"

// toolsTimeout bounds an admin command's request to the running server.
const toolsTimeout = 30 * time.Second

// maxAdminAnswer bounds the answer an admin command reads.
const maxAdminAnswer = 1 << 20

// toolsCommand runs "toolrouter tools approve SERVER.TOOL [-url URL]": it asks the running server
// at URL to accept the tool's definition as its server lists it now (POST /v1/admin/tools/approve),
// which lifts its quarantine, and prints the approval. The API key, when the server authenticates
// callers, is an admin's, read from TOOLROUTER_API_KEY.
func toolsCommand(ctx context.Context, self command, args []string, stdout io.Writer) error {
	const usage = "usage: toolrouter tools approve SERVER.TOOL [-url URL] (an admin API key in " + envAPIKey + ")"
	fs := flag.NewFlagSet("tools approve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	base := fs.String("url", "http://127.0.0.1:8090", "the running toolrouter's base URL")
	if len(args) > 0 && isHelp(args[0]) {
		commandHelp(stdout, self, fs)
		return nil
	}
	if len(args) == 0 || args[0] != "approve" {
		return errors.New(usage)
	}
	var tool string
	rest := args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		tool, rest = rest[0], rest[1:]
	}
	err := fs.Parse(rest)
	if errors.Is(err, flag.ErrHelp) {
		commandHelp(stdout, self, fs)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w; %s", err, usage)
	}
	if tool == "" && fs.NArg() == 1 {
		tool = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return fmt.Errorf("unexpected %q; %s", fs.Arg(0), usage)
	}
	if !strings.Contains(tool, ".") {
		return fmt.Errorf("a tool's qualified name SERVER.TOOL is needed, got %q; %s", tool, usage)
	}
	body, _ := json.Marshal(map[string]string{"tool": tool})
	ctx, cancel := context.WithTimeout(ctx, toolsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(*base, "/")+"/v1/admin/tools/approve", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("-url: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key := os.Getenv(envAPIKey); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("approving %s: %w", tool, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminAnswer))
	if err != nil {
		return fmt.Errorf("approving %s: reading the answer: %w", tool, err)
	}
	if resp.StatusCode != http.StatusOK {
		var problem struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &problem) == nil && problem.Error.Code != "" {
			return fmt.Errorf("approving %s: %d %s: %s", tool, resp.StatusCode, problem.Error.Code, problem.Error.Message)
		}
		return fmt.Errorf("approving %s: %s", tool, resp.Status)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("approving %s: the answer is not JSON: %w", tool, err)
	}
	return printJSON(stdout, out)
}
