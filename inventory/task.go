package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
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

// takesTasks reports whether the server takes task-augmented tools/call requests.
func takesTasks(c mcp.ServerCapabilities) bool {
	return c.Tasks != nil && c.Tasks.Requests != nil && c.Tasks.Requests.Tools != nil && c.Tasks.Requests.Tools.Call != nil
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
	if !asTask {
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		req.Params.Arguments = args
		if token != "" {
			req.Params.Meta = &mcp.Meta{ProgressToken: mcp.ProgressToken(token)}
		}
		return s.client.CallTool(ctx, req)
	}
	params := map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": taskTTL(ctx).Milliseconds()}}
	if token != "" {
		params["_meta"] = map[string]any{"progressToken": token}
	}
	raw, err := s.send(ctx, mcp.MethodToolsCall, params)
	if err != nil {
		return nil, err
	}
	var created struct {
		Task *mcp.Task `json:"task"`
	}
	if err := json.Unmarshal(raw, &created); err != nil || created.Task == nil || created.Task.TaskId == "" {
		return mcp.ParseCallToolResult(&raw) // the server answered at once
	}
	return s.awaitTask(ctx, *created.Task, report)
}

// taskTTL is how long the server is asked to keep a task: until ctx's deadline, and a minute more
// to fetch its result.
func taskTTL(ctx context.Context) time.Duration {
	return remaining(ctx) + time.Minute
}

// awaitTask polls task until it ends and returns its result; when ctx ends first it asks the
// server to cancel the task (in the background, within cancelTimeout) and returns ctx's error.
func (s *session) awaitTask(ctx context.Context, task mcp.Task, report func(Progress)) (*mcp.CallToolResult, error) {
	wake := make(chan struct{}, 1)
	defer s.watch.watchTask(task.TaskId, wake)()
	var last mcp.Task
	for {
		if report != nil && (task.Status != last.Status || task.StatusMessage != last.StatusMessage) {
			report(Progress{Status: string(task.Status), Message: task.StatusMessage, TaskID: task.TaskId})
		}
		last = task
		if task.Status.IsTerminal() {
			break
		}
		wait := taskPoll
		if task.PollInterval != nil && *task.PollInterval > 0 && *task.PollInterval < int64(maxTaskPoll/time.Millisecond) {
			wait = time.Duration(*task.PollInterval) * time.Millisecond
		} else if task.PollInterval != nil && *task.PollInterval > 0 {
			wait = maxTaskPoll
		}
		wait = max(wait, minTaskPoll)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			s.cancelTask(task.TaskId)
			return nil, fmt.Errorf("task %s still %s: %w", task.TaskId, task.Status, ctx.Err())
		case <-wake:
			timer.Stop()
		case <-timer.C:
		}
		got, err := s.client.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: task.TaskId}})
		if err != nil {
			if ctx.Err() != nil {
				s.cancelTask(task.TaskId)
			}
			return nil, fmt.Errorf("polling task %s: %w", task.TaskId, err)
		}
		task = got.Task
	}
	if task.Status == mcp.TaskStatusCancelled {
		return nil, fmt.Errorf("the server cancelled task %s: %s", task.TaskId, task.StatusMessage)
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
