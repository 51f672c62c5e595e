package retrieve

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"toolrouter/inventory"
)

// syncTimeout bounds one background embedding of the tools.
const syncTimeout = 10 * time.Minute

// Catalog keeps a Retriever in step with the inventory and the examples, and ranks a snapshot's
// tools for a query. On the first search after either changed it rebuilds the tool documents and
// reindexes, lexically at once (only the servers whose documents changed) and, with dense
// retrieval, embeds new tool texts in the background: a search never waits for the embedding
// model, and ranks lexically (saying so) until the vectors are there. It is safe for concurrent use.
type Catalog struct {
	ret *Retriever
	ex  *Examples // nil: configured examples only, as the snapshot's tools carry none
	log *slog.Logger

	mu        sync.Mutex // guards the fields below
	invVer    uint64
	exVer     uint64
	synced    bool
	embedding bool // a background Sync is running
	again     bool // another is wanted when it ends
	docs      []Doc
	version   uint64
	failedAt  time.Time // when the last background embedding failed
}

// embedRetry is how long after a failed embedding of the tools a search starts another.
const embedRetry = time.Minute

// NewCatalog returns a catalog over ret with examples from ex (nil for none).
func NewCatalog(ret *Retriever, ex *Examples, log *slog.Logger) *Catalog {
	if log == nil {
		log = slog.Default()
	}
	return &Catalog{ret: ret, ex: ex, log: log}
}

// Rank brings the index to snap and ranks its tools for query (see Retriever.Search).
func (c *Catalog) Rank(ctx context.Context, snap *inventory.Snapshot, query string, k int, permit func(string) bool) Result {
	c.Sync(snap)
	return c.ret.Search(ctx, query, k, permit)
}

// Sync brings the index to snap and the current examples, when either changed since the last call.
func (c *Catalog) Sync(snap *inventory.Snapshot) {
	var exVer uint64
	var configured, learned map[string][]string
	if c.ex != nil {
		exVer = c.ex.Version()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.synced && c.invVer == snap.Version && c.exVer == exVer {
		// Unchanged; but dense retrieval that failed is tried again now and then.
		if !c.failedAt.IsZero() && !c.embedding && time.Since(c.failedAt) > embedRetry {
			c.failedAt = time.Time{}
			c.embedding = true
			go c.embed()
		}
		return
	}
	if c.ex != nil {
		configured, learned = c.ex.Written(), c.ex.Learned()
	}
	c.docs = DocsFrom(snap, configured, learned)
	c.version = snap.Version
	c.ret.Index().Sync(snap.Version, c.docs)
	c.invVer, c.exVer, c.synced = snap.Version, exVer, true
	if c.ret.emb == nil {
		return
	}
	if c.embedding {
		c.again = true
		return
	}
	c.embedding = true
	go c.embed()
}

// embed runs background Syncs until no newer documents are waiting.
func (c *Catalog) embed() {
	for {
		c.mu.Lock()
		docs, version := c.docs, c.version
		c.again = false
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
		_, err := c.ret.Sync(ctx, version, docs)
		cancel()
		if err != nil {
			c.log.Warn("dense retrieval off: tools not embedded", "err", err)
		}
		c.mu.Lock()
		if err != nil {
			c.failedAt = time.Now()
		}
		if !c.again {
			c.embedding = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}
