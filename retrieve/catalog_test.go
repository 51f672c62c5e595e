package retrieve_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/retrieve"
)

// builtinInventory is the built-in calculator and clock, connected.
func builtinInventory(t *testing.T) *inventory.Manager {
	t.Helper()
	srv := func(name string) config.Server {
		return config.Server{Transport: config.TransportBuiltin, Builtin: name, Purpose: name + " tools",
			ConnectTimeout: config.Duration(10 * time.Second), CallTimeout: config.Duration(10 * time.Second)}
	}
	inv := inventory.New(map[string]config.Server{"calculator": srv("calculator"), "clock": srv("clock")}, inventory.Options{})
	inv.Start(context.Background())
	t.Cleanup(inv.Close)
	return inv
}

// TestCatalogFallsBackWhenTheEmbedModelIsDown: a search ranks lexically and says why while the
// embedding model fails, and after a failed query it does not wait on the model again at once.
func TestCatalogFallsBackWhenTheEmbedModelIsDown(t *testing.T) {
	inv := builtinInventory(t)
	emb := newEmbedServer(t, "embedder")
	emb.status.Store(http.StatusInternalServerError)
	ret, err := retrieve.NewRetriever(retrieve.NewIndex(), retrieve.NewOllamaEmbedder(emb.url(t), nil, retrieve.EmbedderOptions{}),
		retrieve.DenseOptions{Model: "embedder", CachePath: t.TempDir() + "/vectors.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	defer ret.Close()
	cat := retrieve.NewCatalog(ret, nil, nil)
	res := cat.Rank(context.Background(), inv.Snapshot(), "what time is it in Tokyo", 3, nil)
	if len(res.Hits) != 3 || res.Hits[0].Qualified != "clock.current_time" {
		t.Fatalf("got hits %+v, want clock.current_time first of 3", res.Hits)
	}
	if res.Fallback == "" {
		t.Errorf("got no fallback reason while the embedding model is down")
	}
	// The tools' embedding runs in the background; once it has failed, a query embedding is
	// tried and fails, and the next search skips the model.
	ret.Sync(context.Background(), inv.Snapshot().Version, retrieve.DocsFrom(inv.Snapshot(), nil, nil))
	emb.status.Store(0)
	if _, err := ret.Sync(context.Background(), inv.Snapshot().Version, retrieve.DocsFrom(inv.Snapshot(), nil, nil)); err != nil {
		t.Fatalf("Sync with the model back: %v", err)
	}
	emb.status.Store(http.StatusInternalServerError)
	first := ret.Search(context.Background(), "add two numbers", 3, nil)
	before := emb.requests.Load()
	second := ret.Search(context.Background(), "add two numbers", 3, nil)
	if first.Fallback == "" || second.Fallback == "" {
		t.Errorf("got fallbacks %q, %q; want both to say why", first.Fallback, second.Fallback)
	}
	if after := emb.requests.Load(); after != before {
		t.Errorf("the search right after a failed query embedding made %d requests to the model, want 0", after-before)
	}
	if len(second.Hits) == 0 || second.Hits[0].Qualified != "calculator.add" {
		t.Errorf("got %+v, want calculator.add first from the lexical ranking", second.Hits)
	}
}
