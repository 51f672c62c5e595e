package router

import "testing"

// TestTasksTellApartCallsOfOneTool: without tasks in the answer ("none", "brief"), two calls of one
// tool in a round get notes that tell them apart; a single call and a call with a task keep theirs.
func TestTasksTellApartCallsOfOneTool(t *testing.T) {
	calls := []planned{{name: "clock.now"}, {name: "calculator.add"}, {name: "clock.now"}, {name: "calculator.add", task: "the sum"}}
	tasks(calls)
	want := []string{
		"call 1 of 2 to clock.now in this step; the other calls cover the other parts of the query",
		"call 1 of 2 to calculator.add in this step; the other calls cover the other parts of the query",
		"call 2 of 2 to clock.now in this step; the other calls cover the other parts of the query",
		"the sum",
	}
	for i, c := range calls {
		if c.task != want[i] {
			t.Errorf("call %d: got task %q, want %q", i, c.task, want[i])
		}
	}
	single := []planned{{name: "clock.now"}}
	if tasks(single); single[0].task != "" {
		t.Errorf("got task %q for a single call, want none", single[0].task)
	}
}
