package router_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"toolrouter/access"
	"toolrouter/config"
	"toolrouter/internal/bfcltools"
	"toolrouter/internal/fakeollama"
	"toolrouter/inventory"
	"toolrouter/retrieve"
	"toolrouter/router"
)

// pinnedEnv is a router over the built-in calculator and clock and a server "big" of n real
// tools, ranking with BM25F; servers pinned by the inventory are named in pinnedServers.
func pinnedEnv(t *testing.T, n int, set router.Settings, pinnedServers ...string) *router.Router {
	t.Helper()
	big, _ := bfcltools.Server(t, n)
	servers := map[string]config.Server{"calculator": builtinServer("calculator"), "clock": builtinServer("clock"), "big": builtinServer("big")}
	for _, s := range pinnedServers {
		sc := servers[s]
		sc.Pinned = true
		servers[s] = sc
	}
	inv := inventory.New(servers, inventory.Options{Logger: quiet, InProcess: map[string]*server.MCPServer{"big": big}})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	ret, err := retrieve.NewRetriever(retrieve.NewIndex(), nil, retrieve.DenseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	set.Model = "fake"
	set.Ranker = retrieve.NewCatalog(ret, nil, quiet)
	return router.New(fakeollama.New(t).Client(), inv, inv, set, quiet)
}

// policy is an access policy permitting the tools permit allows, to every identity.
type policy func(string) bool

func (p policy) Policy(access.Identity) (string, func(string) bool) { return "test", p }

func (p policy) AutoExecute(_ access.Identity, top access.AutoExecute) access.AutoExecute { return top }
func (p policy) HeldShare(_ access.Identity, top access.HeldShare) access.HeldShare       { return top }
func (p policy) ApprovalWait(_ access.Identity, top time.Duration) time.Duration          { return top }
func (p policy) Approvers(_ access.Identity, top []string) access.Approvers {
	return access.Approvers{Approvers: top}
}
func (p policy) NamesApprover(access.Identity) bool { return false }

// TestPinnedToolsComeFirst: the pinned tools a caller may use head every shortlist, in inventory
// order and marked, whatever the query, count against the budget, and are not shown twice; tools
// the caller may not use are not shown though pinned.
func TestPinnedToolsComeFirst(t *testing.T) {
	calculator := []string{"calculator.add", "calculator.divide", "calculator.evaluate", "calculator.multiply",
		"calculator.nth_root", "calculator.power", "calculator.sqrt", "calculator.subtract"}
	tests := []struct {
		name    string
		pinned  []string
		servers []string // pinned by servers.NAME.pinned
		permit  func(string) bool
		want    []string
	}{
		{name: "a server's tools by pattern", pinned: []string{"calculator.*"}, want: calculator},
		{name: "one tool", pinned: []string{"clock.current_time"}, want: []string{"clock.current_time"}},
		{name: "glob and tool", pinned: []string{"calculator.s*", "clock.current_time"},
			want: []string{"calculator.sqrt", "calculator.subtract", "clock.current_time"}},
		{name: "a server pinned in its entry", servers: []string{"clock"},
			want: []string{"clock.convert_time", "clock.current_time", "clock.date_difference"}},
		{name: "only what the caller may use", pinned: []string{"calculator", "clock"},
			permit: func(tool string) bool { return !strings.HasPrefix(tool, "calculator.") },
			want:   []string{"clock.convert_time", "clock.current_time", "clock.date_difference"}},
		{name: "nothing pinned", want: nil},
	}
	const query = "Find the area of a triangle with a base of 10 units and height of 5 units."
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := router.Settings{Pinned: tc.pinned, Options: map[string]any{"num_ctx": 8192}}
			if tc.permit != nil {
				set.Access = policy(tc.permit)
			}
			rt := pinnedEnv(t, 2000, set, tc.servers...)
			offer, err := rt.Search(context.Background(), query, access.Identity{Org: "o"}, 20)
			if err != nil {
				t.Fatal(err)
			}
			sl := offer.Shortlist
			if sl == nil {
				t.Fatal("got the whole inventory, want a shortlist")
			}
			var names, pinned []string
			for _, tool := range sl.Tools {
				names = append(names, tool.Name)
				if tool.Pinned {
					pinned = append(pinned, tool.Name)
				}
			}
			if got := names[:min(len(tc.want), len(names))]; !slices.Equal(got, tc.want) || !slices.Equal(pinned, tc.want) {
				t.Errorf("shortlist starts %v with %v marked pinned, want %v first and marked", got, pinned, tc.want)
			}
			if !slices.Contains(names, "big.calculate_triangle_area") {
				t.Errorf("shortlist %v lacks the tool the query needs", names)
			}
			for _, n := range tc.want {
				if c := countOf(names, n); c != 1 {
					t.Errorf("%s shown %d times, want once", n, c)
				}
			}
			cost := rt.Pinned()
			if len(tc.want) > 0 && tc.permit == nil && (sl.Used < cost.Tokens || sl.Used > sl.Budget || !slices.Equal(cost.Tools, tc.want)) {
				t.Errorf("shortlist used %d of %d tokens, pinned %v take %d; want the pinned tools %v within the budget",
					sl.Used, sl.Budget, cost.Tools, cost.Tokens, tc.want)
			}
		})
	}
}

func countOf(names []string, n string) int {
	c := 0
	for _, m := range names {
		if m == n {
			c++
		}
	}
	return c
}

// TestCheckPinned: pinned tools over the tool list's budget are an error naming both sizes; within
// it, none.
func TestCheckPinned(t *testing.T) {
	tests := []struct {
		name   string
		pinned []string
		budget int
		over   bool
	}{
		{name: "within", pinned: []string{"calculator.*", "clock.*"}, budget: 3000},
		{name: "nothing pinned", budget: 100},
		{name: "a big server", pinned: []string{"big"}, budget: 3000, over: true},
		{name: "a small budget", pinned: []string{"calculator"}, budget: 100, over: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := pinnedEnv(t, 300, router.Settings{Pinned: tc.pinned, PromptBudget: tc.budget})
			err := rt.CheckPinned()
			var over *router.PinnedOverBudgetError
			if got := errors.As(err, &over); got != tc.over {
				t.Fatalf("got %v, want over budget %v", err, tc.over)
			}
			if !tc.over {
				return
			}
			cost := rt.Pinned()
			for _, size := range []string{fmt.Sprint(cost.Tokens), fmt.Sprint(tc.budget)} {
				if !strings.Contains(err.Error(), size) {
					t.Errorf("error %q does not name the size %s", err, size)
				}
			}
			if cost.Tokens <= tc.budget || cost.Budget != tc.budget {
				t.Errorf("got pinned %d tokens against budget %d, want over %d", cost.Tokens, cost.Budget, tc.budget)
			}
		})
	}
}
