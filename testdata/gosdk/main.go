// Command gosdkclient is an MCP client built on the official Go SDK, for toolrouter's
// conformance tests: it connects to toolrouter over streamable HTTP (-url) or stdio (the command
// after the flags), with the protocol version -protocol when the SDK can pin one, lists the
// tools, calls -tool with -args, answers elicitations with -elicit (accept, decline; none:
// declares no elicitation) and prints what it saw as one JSON object. go.mod pins the oldest SDK
// the tests run, go.v1.8.mod (with -tags sdk18) the newest.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// report is what the client prints.
type report struct {
	Protocol   string   `json:"protocol"`
	Tools      []string `json:"tools"`
	IsError    bool     `json:"is_error"`
	Text       string   `json:"text"`
	Structured any      `json:"structured"`
	Asked      []string `json:"asked"`
}

func main() {
	url := flag.String("url", "", "toolrouter's /mcp URL; without it, the command after the flags is run over stdio")
	protocol := flag.String("protocol", "", "the protocol version to ask for (the SDK's newest when empty)")
	tool := flag.String("tool", "route", "the tool to call")
	args := flag.String("args", `{"query": "what is 2 plus 40?"}`, "its arguments, as JSON")
	elicit := flag.String("elicit", "none", "answer elicitations: accept, decline, or none (declare no elicitation)")
	timeout := flag.Duration("timeout", time.Minute, "the whole run's deadline")
	flag.Parse()
	if err := run(*url, flag.Args(), *protocol, *tool, *args, *elicit, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "gosdkclient:", err)
		os.Exit(1)
	}
}

func run(url string, command []string, protocol, tool, rawArgs, elicit string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var rep report
	opts := &mcp.ClientOptions{}
	if elicit != "none" {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			rep.Asked = append(rep.Asked, req.Params.Message)
			return &mcp.ElicitResult{Action: elicit, Content: map[string]any{}}, nil
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "gosdkclient", Version: "1"}, opts)
	var t mcp.Transport = &mcp.StreamableClientTransport{Endpoint: url}
	if url == "" {
		if len(command) == 0 {
			return fmt.Errorf("give -url or a command to run")
		}
		t = &mcp.CommandTransport{Command: exec.Command(command[0], command[1:]...)}
	}
	so, err := sessionOptions(protocol)
	if err != nil {
		return err
	}
	cs, err := c.Connect(ctx, t, so)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer cs.Close()
	rep.Protocol = cs.InitializeResult().ProtocolVersion
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, t := range list.Tools {
		rep.Tools = append(rep.Tools, t.Name)
	}
	var a map[string]any
	if err := json.Unmarshal([]byte(rawArgs), &a); err != nil {
		return fmt.Errorf("-args: %w", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", tool, err)
	}
	rep.IsError, rep.Structured = res.IsError, res.StructuredContent
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			rep.Text += tc.Text
		}
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}
