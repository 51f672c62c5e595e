package router

import (
	"context"
	"encoding/base64"
	"errors"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"toolrouter/internal/errtext"
	"toolrouter/inventory"
	"toolrouter/prompts"
	"toolrouter/trajectory"
)

// execute runs one call and records its result or error in c. A result with isError is a tool
// error reported as a result; a transport failure or timeout is an Error.
func (r *Router) execute(reqCtx context.Context, j *journal, tool *inventory.Tool, c *Call) {
	ctx := reqCtx
	if r.set.ExecuteTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.set.ExecuteTimeout)
		defer cancel()
	}
	var stopProgress func()
	if j.listening() {
		ctx, stopProgress = progressEvents(ctx, j, c, r.progressMessage)
	}
	t0 := time.Now()
	res, err := r.tools.CallTool(ctx, tool.Server, tool.Name, c.Arguments)
	if stopProgress != nil {
		stopProgress()
	}
	d := time.Since(t0)
	c.ExecuteMS = ms(d)
	c.output = tool.Output
	if err == nil {
		err = checkResult(tool, res)
	}
	var invalid *invalidResultError
	switch {
	case errors.As(err, &invalid):
		c.Error = &Error{Code: CodeInvalidResult, Message: errtext.OneLine(err.Error())}
	case err == nil:
		c.Result = convertResult(res)
		c.Result.dropStructured(r.set.MaxResultBytes)
		r.redactResult(c.Result)
		c.Result.cutText(r.set.MaxResultBytes)
		if c.Result.Truncated {
			releaseMemory()
		}
	case reqCtx.Err() != nil:
		c.Error = &Error{Code: CodeDeadline, Message: errtext.OneLine(err.Error())}
	case errors.Is(err, context.DeadlineExceeded):
		c.Error = &Error{Code: CodeToolTimeout, Message: errtext.OneLine(err.Error())}
	case errors.Is(err, inventory.ErrServerDown), errors.Is(err, inventory.ErrUnknownServer):
		c.Error = &Error{Code: CodeToolUnavailable, Message: errtext.OneLine(err.Error())}
	default:
		c.Error = &Error{Code: CodeToolFailed, Message: errtext.OneLine(err.Error())}
	}
	if c.Error != nil && r.set.Redactor != nil {
		c.Error.Message = r.set.Redactor.String(c.Error.Message) // a server's error may quote a credential
	}
	step := Step{Kind: StepExecute, Round: c.Round, Call: c.Step, Tool: tool.Qualified, StartMS: j.since(t0), DurationMS: ms(d)}
	if c.Error != nil {
		step.Error = c.Error.Message
	} else if c.Result.IsError {
		step.Error = "tool answered isError"
	}
	j.timed(timingExecute, nil, d)
	j.step(step)
	if j.recording() {
		out := trajectory.Outcome{ToolSucceeded: boolPtr(c.ok())}
		var obs any = c.Result
		if c.Error != nil {
			out.Error, obs = c.Error.Message, c.Error
		}
		j.record("execute", step, nil, nil, "", c.Arguments, obs, out)
	}
	j.callEvent(EventToolResult, c.Round, c)
}

// maxProgressMessage bounds a progress report's message as the stream carries it.
const maxProgressMessage = 1000

// progressMessage is a server's progress message as a client may see it: masked as a server's
// error is (it may quote a credential), then shortened to maxProgressMessage.
func (r *Router) progressMessage(msg string) string {
	if r.set.Redactor != nil {
		msg = r.set.Redactor.String(msg)
	}
	if len(msg) > maxProgressMessage {
		msg = prompts.Shorten(msg, maxProgressMessage)
	}
	return msg
}

// maxProgressBacklog bounds the progress reports of one call waiting for the stream: more are
// dropped while the client reads slowly.
const maxProgressBacklog = 16

// progressEvents returns ctx carrying a progress function (inventory.WithProgress) that turns the
// reports on c's call into tool_progress events, and stop, which ends them: the function never
// blocks the server's notifications (a report over maxProgressBacklog is dropped), and no event
// follows stop, which returns once the last is sent. Each message goes through clean first.
func progressEvents(ctx context.Context, j *journal, c *Call, clean func(string) string) (context.Context, func()) {
	who := &Call{Step: c.Step, Round: c.Round, Task: c.Task, Server: c.Server, Tool: c.Tool}
	var (
		mu      sync.Mutex // guards stopped and sends on reports
		stopped bool
		reports = make(chan inventory.Progress, maxProgressBacklog)
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		for p := range reports {
			p.Message = clean(p.Message)
			j.event(Event{Type: EventToolProgress, Round: c.Round, Call: who, Progress: &p})
		}
	}()
	ctx = inventory.WithProgress(ctx, func(p inventory.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		select {
		case reports <- p:
		default:
		}
	})
	return ctx, func() {
		mu.Lock()
		stopped = true
		close(reports)
		mu.Unlock()
		<-done
	}
}

// invalidResultError is a result that breaks the tool's output schema: the call's error, its
// result withheld.
type invalidResultError struct{ msg string }

func (e *invalidResultError) Error() string { return e.msg }

// checkResult checks a result against the tool's output schema, when it declares one: a result
// that is not an error must carry structuredContent, and that content must validate. A result
// with isError is the tool's own error and is not checked.
func checkResult(tool *inventory.Tool, res *mcp.CallToolResult) error {
	if tool.Output == nil || res == nil || res.IsError {
		return nil
	}
	if res.StructuredContent == nil {
		return &invalidResultError{tool.Qualified + " declares an output schema but returned no structuredContent"}
	}
	if err := tool.Output.ValidateValue(res.StructuredContent); err != nil {
		return &invalidResultError{tool.Qualified + "'s structuredContent does not match its output schema: " + err.Error()}
	}
	return nil
}

// convertResult joins text content, keeps structured content and summarises everything else,
// within limit (see bound).
func convertResult(res *mcp.CallToolResult) *Result {
	out := &Result{IsError: res.IsError, Structured: res.StructuredContent}
	var room [2]string
	texts := room[:0] // most results have a text or two
	for _, c := range res.Content {
		switch v := deref(c).(type) {
		case mcp.TextContent:
			texts = append(texts, v.Text)
		case mcp.ImageContent:
			out.Content = append(out.Content, Content{Type: "image", MIMEType: v.MIMEType, Bytes: decodedLen(v.Data)})
		case mcp.AudioContent:
			out.Content = append(out.Content, Content{Type: "audio", MIMEType: v.MIMEType, Bytes: decodedLen(v.Data)})
		case mcp.EmbeddedResource:
			out.Content = append(out.Content, resourceSummary(v.Resource))
		case mcp.ResourceLink:
			out.Content = append(out.Content, Content{Type: "resource_link", URI: v.URI, Name: v.Name, MIMEType: v.MIMEType})
		default:
			out.Content = append(out.Content, Content{Type: "unknown"})
		}
	}
	out.Text = strings.Join(texts, "\n")
	return out
}

// dropStructured is the first half of a result's bound, before anything keeps, logs, shows or
// returns it, and before it is masked: structured content whose JSON is over limit is dropped
// (StructuredBytes is its JSON's length), so that what a client gets still parses and never
// claims to be the whole, and nothing is spent masking what is dropped; when the tool sent no
// text, Text carries that JSON instead, to be masked and then cut (cutText). It sets Truncated.
func (res *Result) dropStructured(limit int) {
	if res.Structured == nil || jsonSize(res.Structured, limit) <= limit {
		return
	}
	res.StructuredBytes = jsonSize(res.Structured, math.MaxInt)
	if res.Text == "" {
		res.Text = string(marshal(res.Structured))
	}
	res.Structured, res.Truncated = nil, true
}

// cutText is the second half, after masking, so that a credential across the cut is masked
// whole: a text over limit keeps its head and tail with the cut marked (TextBytes is its whole
// length), and Truncated is set.
func (res *Result) cutText(limit int) {
	if len(res.Text) > limit {
		res.TextBytes, res.Text, res.Truncated = len(res.Text), prompts.Shorten(res.Text, limit), true
	}
}

// lastRelease is when releaseMemory last ran, in Unix nanoseconds.
var lastRelease atomic.Int64

// releaseMemory hands the memory of a tool answer that was over the bound back to the operating
// system once the answer is cut: the decoded message (up to servers.NAME.max_message_bytes, and
// several times that as Go values) is garbage by then, and the runtime would otherwise keep its
// pages, and grow its heap goal on them, long after. It runs in the background, at most once a
// second whatever the number of such answers, so a caller sending many pays no more than that.
func releaseMemory() {
	now, last := time.Now().UnixNano(), lastRelease.Load()
	if now-last < int64(time.Second) || !lastRelease.CompareAndSwap(last, now) {
		return
	}
	go debug.FreeOSMemory()
}

// deref turns the pointer forms of content (an in-process server may return them) into values.
func deref(c mcp.Content) mcp.Content {
	switch v := c.(type) {
	case *mcp.TextContent:
		return *v
	case *mcp.ImageContent:
		return *v
	case *mcp.AudioContent:
		return *v
	case *mcp.EmbeddedResource:
		return *v
	case *mcp.ResourceLink:
		return *v
	}
	return c
}

func resourceSummary(r mcp.ResourceContents) Content {
	switch v := r.(type) {
	case *mcp.TextResourceContents:
		return resourceSummary(*v)
	case *mcp.BlobResourceContents:
		return resourceSummary(*v)
	case mcp.TextResourceContents:
		return Content{Type: "resource", URI: v.URI, MIMEType: v.MIMEType, Bytes: len(v.Text)}
	case mcp.BlobResourceContents:
		return Content{Type: "resource", URI: v.URI, MIMEType: v.MIMEType, Bytes: decodedLen(v.Blob)}
	}
	return Content{Type: "resource"}
}

func decodedLen(b64 string) int {
	return base64.StdEncoding.DecodedLen(len(b64)) - strings.Count(b64[max(0, len(b64)-2):], "=")
}
