package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Progress is one report on a call in flight: a notifications/progress the server sent for it, or
// a change of its task's status (Status, TaskID).
type Progress struct {
	Progress float64 `json:"progress,omitempty"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
	// Status is the task's status (working, input_required, completed, failed, cancelled) when
	// the call runs as a task.
	Status string `json:"status,omitempty"`
	TaskID string `json:"task_id,omitempty"`
}

type progressKey struct{}

// WithProgress returns ctx carrying fn, which CallTool calls with each report on the call it
// makes under ctx, from another goroutine; fn must not block.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

func progressOf(ctx context.Context) func(Progress) {
	fn, _ := ctx.Value(progressKey{}).(func(Progress))
	return fn
}

// Bounds on polling a task: the server's pollInterval is kept within them, and taskPoll is used
// when it gives none. cancelTimeout bounds the tasks/cancel sent when the caller's deadline passes.
const (
	minTaskPoll   = 50 * time.Millisecond
	maxTaskPoll   = 5 * time.Second
	taskPoll      = 500 * time.Millisecond
	cancelTimeout = 2 * time.Second
)

// watchers routes a session's progress and task-status notifications to the calls waiting for
// them.
type watchers struct {
	mu       sync.Mutex // guards next, progress, tasks
	next     uint64
	progress map[string]func(Progress)  // by progress token
	tasks    map[string]chan<- struct{} // by task id: woken when its status changes
}

// add registers fn under a new progress token and returns the token and its removal.
func (w *watchers) add(fn func(Progress)) (string, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	token := "toolrouter-" + strconv.FormatUint(w.next, 10)
	if w.progress == nil {
		w.progress = map[string]func(Progress){}
	}
	w.progress[token] = fn
	return token, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.progress, token)
	}
}

// watchTask wakes wake when the task's status notification arrives, until the returned removal.
func (w *watchers) watchTask(id string, wake chan<- struct{}) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tasks == nil {
		w.tasks = map[string]chan<- struct{}{}
	}
	w.tasks[id] = wake
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.tasks, id)
	}
}

// deliver hands n to its watcher and reports whether it was one of theirs.
func (w *watchers) deliver(n mcp.JSONRPCNotification) bool {
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		f := n.Params.AdditionalFields
		token := fmt.Sprint(f["progressToken"])
		w.mu.Lock()
		fn := w.progress[token]
		w.mu.Unlock()
		if fn != nil {
			p := Progress{}
			p.Progress, _ = f["progress"].(float64)
			p.Total, _ = f["total"].(float64)
			p.Message, _ = f["message"].(string)
			fn(p)
		}
		return true
	case string(mcp.MethodNotificationTasksStatus):
		id, _ := n.Params.AdditionalFields["taskId"].(string)
		w.mu.Lock()
		wake := w.tasks[id]
		w.mu.Unlock()
		if wake != nil {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		return true
	}
	return false
}

// tasksExtension is the tasks extension of protocol 2026-07-28 (SEP-2663): a client that declares
// it may get a task in answer to any tools/call, whose tasks/get carries the result once done.
const tasksExtension = "io.modelcontextprotocol/tasks"

// takesTasks reports whether the server runs tool calls as tasks: on 2026-07-28 it declares the
// tasks extension; before, it takes task-augmented tools/call requests.
func takesTasks(version string, c mcp.ServerCapabilities) bool {
	if mcp.IsModernProtocol(version) {
		_, ok := c.Extensions[tasksExtension]
		return ok
	}
	return c.Tasks != nil && c.Tasks.Requests != nil && c.Tasks.Requests.Tools != nil && c.Tasks.Requests.Tools.Call != nil
}

// taskState is a task as tasks/get or a task handle tells it; on 2026-07-28 a finished task
// carries its result or error.
type taskState struct {
	mcp.Task
	ResultType     string          `json:"resultType"`
	PollIntervalMs *int64          `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result"`
	Error          *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// callTool runs one tools/call. A tool that runs as a task (asTask) is called task-augmented and
// its task polled until it ends, or cancelled (tasks/cancel) when ctx ends first; other calls
// go through mcp-go's client. With a progress function in ctx (WithProgress), the call carries a
// progress token and every report on it, and every change of its task's status, reaches it.
func (s *session) callTool(ctx context.Context, tool string, args map[string]any, asTask bool) (*mcp.CallToolResult, error) {
	report := progressOf(ctx)
	var token string
	if report != nil {
		var remove func()
		token, remove = s.watch.add(report)
		defer remove()
	}
	if s.inProcess {
		ctx = withoutValues{ctx}
	}
	modern := mcp.IsModernProtocol(s.version)
	if !asTask && !(modern && s.tasks) {
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		req.Params.Arguments = args
		if token != "" {
			req.Params.Meta = &mcp.Meta{ProgressToken: mcp.ProgressToken(token)}
		}
		return s.client.CallTool(ctx, req)
	}
	params := map[string]any{"name": tool, "arguments": args}
	if !modern {
		params["task"] = map[string]any{"ttl": taskTTL(ctx).Milliseconds()}
	}
	if token != "" {
		params["_meta"] = map[string]any{"progressToken": token}
	}
	raw, err := s.send(ctx, mcp.MethodToolsCall, params)
	if err != nil {
		return nil, err
	}
	var handle struct {
		taskState
		Task *mcp.Task `json:"task"` // 2025-11-25 nests the task
	}
	if err := json.Unmarshal(raw, &handle); err != nil {
		return toolResult(raw)
	}
	switch {
	case modern && handle.ResultType == "task" && handle.TaskId != "":
		handle.Result, handle.Error = nil, nil // a handle carries neither (SEP-2663)
		return s.awaitTask(ctx, handle.taskState, report)
	case !modern && handle.Task != nil && handle.Task.TaskId != "":
		return s.awaitTask(ctx, taskState{Task: *handle.Task}, report)
	}
	return toolResult(raw) // the server answered at once
}

// ErrInputRequired: a 2026-07-28 server answered a tools/call with input requests (resultType
// input_required), asking for answers (an elicitation, a sampling) the inventory does not give,
// or to retry later: the call has no result.
var ErrInputRequired = errors.New("the server asked for the client's input instead of answering")

// toolResult is a tools/call result as the raw transport returned it; input requests are
// ErrInputRequired, never an empty result taken as the tool's answer.
func toolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() {
		return nil, fmt.Errorf("%w (input_required, %d input request(s))", ErrInputRequired, len(res.InputRequests))
	}
	return res, nil
}

// getTask polls a task once: tasks/get, raw on 2026-07-28 (whose answer carries the result).
func (s *session) getTask(ctx context.Context, id string) (taskState, error) {
	if !mcp.IsModernProtocol(s.version) {
		got, err := s.client.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
		if err != nil {
			return taskState{}, err
		}
		return taskState{Task: got.Task}, nil
	}
	raw, err := s.send(ctx, mcp.MethodTasksGet, map[string]any{"taskId": id})
	if err != nil {
		return taskState{}, err
	}
	var st taskState
	if err := json.Unmarshal(raw, &st); err != nil {
		return taskState{}, fmt.Errorf("decoding tasks/get: %w", err)
	}
	return st, nil
}

// taskResult is a finished task's result: on 2026-07-28 what its last tasks/get carried, before
// from tasks/result.
func (s *session) taskResult(ctx context.Context, task taskState) (*mcp.CallToolResult, error) {
	if mcp.IsModernProtocol(s.version) {
		switch {
		case task.Error != nil:
			return nil, fmt.Errorf("task %s failed: %s (%d)", task.TaskId, task.Error.Message, task.Error.Code)
		case len(task.Result) == 0:
			return nil, fmt.Errorf("task %s is %s but carries no result", task.TaskId, task.Status)
		}
		return toolResult(task.Result)
	}
	res, err := s.client.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: task.TaskId}})
	if err != nil {
		if task.Status == mcp.TaskStatusFailed {
			return nil, fmt.Errorf("task %s failed: %s: %w", task.TaskId, task.StatusMessage, err)
		}
		return nil, fmt.Errorf("fetching the result of task %s: %w", task.TaskId, err)
	}
	return &mcp.CallToolResult{Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError}, nil
}

// taskTTL is how long the server is asked to keep a task: until ctx's deadline, and a minute more
// to fetch its result.
func taskTTL(ctx context.Context) time.Duration {
	return remaining(ctx) + time.Minute
}

// awaitTask polls task until it ends and returns its result; when ctx ends first it asks the
// server to cancel the task (in the background, within cancelTimeout) and returns ctx's error.
func (s *session) awaitTask(ctx context.Context, task taskState, report func(Progress)) (*mcp.CallToolResult, error) {
	wake := make(chan struct{}, 1)
	defer s.watch.watchTask(task.TaskId, wake)()
	var last mcp.Task
	for {
		if report != nil && (task.Status != last.Status || task.StatusMessage != last.StatusMessage) {
			report(Progress{Status: string(task.Status), Message: task.StatusMessage, TaskID: task.TaskId})
		}
		last = task.Task
		if task.Status.IsTerminal() {
			break
		}
		timer := time.NewTimer(pollWait(task))
		select {
		case <-ctx.Done():
			timer.Stop()
			s.cancelTask(task.TaskId)
			return nil, fmt.Errorf("task %s still %s: %w", task.TaskId, task.Status, ctx.Err())
		case <-wake:
			timer.Stop()
		case <-timer.C:
		}
		got, err := s.getTask(ctx, task.TaskId)
		if err != nil {
			if ctx.Err() != nil {
				s.cancelTask(task.TaskId)
			}
			return nil, fmt.Errorf("polling task %s: %w", task.TaskId, err)
		}
		task = got
	}
	if task.Status == mcp.TaskStatusCancelled {
		return nil, fmt.Errorf("the server cancelled task %s: %s", task.TaskId, task.StatusMessage)
	}
	return s.taskResult(ctx, task)
}

// pollWait is how long to wait before polling task again: the server's interval within
// [minTaskPoll, maxTaskPoll], else taskPoll.
func pollWait(task taskState) time.Duration {
	ms := task.PollIntervalMs
	if ms == nil {
		ms = task.PollInterval
	}
	if ms == nil || *ms <= 0 {
		return taskPoll
	}
	if *ms >= int64(maxTaskPoll/time.Millisecond) {
		return maxTaskPoll
	}
	return max(time.Duration(*ms)*time.Millisecond, minTaskPoll)
}

// cancelTask asks the server to cancel a task whose caller gave up, off the caller's path.
func (s *session) cancelTask(id string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
		defer cancel()
		if _, err := s.client.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: id}}); err != nil &&
			!errors.Is(err, context.Canceled) {
			s.log.Warn("cancelling a task whose caller gave up", "task", id, "err", err)
		}
	}()
}

// withoutValues is a context without the values mcp-go's server package put in it. An in-process
// server reads the HTTP headers and session of "its" request from the context it is called with;
// a call made while toolrouter serves an MCP request of its own (POST /mcp) must not hand it that
// request's headers and session, which name another method and tool. Every other value (a
// caller's trace, a recorder) passes through.
type withoutValues struct{ context.Context }

// mcpServerPkg is the package whose context keys describe the request an MCP server is serving.
var mcpServerPkg = reflect.TypeOf(server.ServerTool{}).PkgPath()

func (c withoutValues) Value(key any) any {
	if t := reflect.TypeOf(key); t != nil && t.PkgPath() == mcpServerPkg {
		return nil
	}
	return c.Context.Value(key)
}
