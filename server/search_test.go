package server_test

import (
	"net/url"
	"testing"

	"toolrouter/access"
	"toolrouter/internal/fakeollama"
	"toolrouter/retrieve"
	"toolrouter/router"
	"toolrouter/server"
)

func TestInventorySearch(t *testing.T) {
	model := fakeollama.New(t)
	inv := newInventory(t)
	ret, err := retrieve.NewRetriever(retrieve.NewIndex(), nil, retrieve.DenseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Requests without a credential act for org default; its team adder may use one tool.
	h, err := access.New(access.Orgs{access.DefaultOrg: {Teams: map[string]access.Team{"adder": {Allow: []string{"calculator.add"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", Access: h,
		Ranker: retrieve.NewCatalog(ret, nil, quiet)}, quiet)
	app := server.New(server.Deps{Router: rt, Inventory: inv, Model: model.Client(), Search: rt, Access: h}, server.Options{Logger: quiet})
	off := server.New(server.Deps{Router: rt, Inventory: inv, Model: model.Client(), Access: h}, server.Options{Logger: quiet})

	tests := []struct {
		name      string
		off       bool
		query     string
		status    int
		wantCode  string
		wantFirst string
		wantLen   int
	}{
		{name: "ranked", query: "q=" + url.QueryEscape("divide 10 by 4") + "&k=3", status: 200, wantFirst: "calculator.divide", wantLen: 3},
		{name: "caller narrows", query: "q=divide&caller=adder", status: 200, wantFirst: "calculator.add", wantLen: 1},
		{name: "caller outside the hierarchy", query: "q=divide&caller=ghost", status: 403, wantCode: "forbidden"},
		{name: "no query", query: "k=3", status: 400, wantCode: "bad_query"},
		{name: "k zero", query: "q=x&k=0", status: 400, wantCode: "bad_k"},
		{name: "k not a number", query: "q=x&k=ten", status: 400, wantCode: "bad_k"},
		{name: "k too large", query: "q=x&k=5000", status: 400, wantCode: "bad_k"},
		{name: "retrieval off", off: true, query: "q=x", status: 404, wantCode: "retrieval_off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := app
			if tc.off {
				a = off
			}
			status, raw, body := do(t, a, "GET", "/v1/inventory/search?"+tc.query, nil)
			if status != tc.status {
				t.Fatalf("got %d %s, want %d", status, raw, tc.status)
			}
			if tc.wantCode != "" {
				if code, _ := errorBody(t, raw); code != tc.wantCode {
					t.Errorf("got code %q, want %q", code, tc.wantCode)
				}
				return
			}
			ranked, _ := body["ranked"].([]any)
			if len(ranked) != tc.wantLen {
				t.Fatalf("got %d ranked tools, want %d: %s", len(ranked), tc.wantLen, raw)
			}
			if first := ranked[0].(map[string]any)["name"]; first != tc.wantFirst {
				t.Errorf("got first %v, want %s", first, tc.wantFirst)
			}
			if body["whole_inventory"] != true {
				t.Errorf("got whole_inventory %v, want true for a small inventory", body["whole_inventory"])
			}
		})
	}
}
