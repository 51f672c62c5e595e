package usage

import (
	"context"
	"sync"
	"testing"
	"time"

	"toolrouter/internal/services"
)

// TestPostgresReplicas: two replicas, each with its own Recorder, open one real PostgreSQL
// database at once (both migrate it) and write into it concurrently; the totals and every
// grouping are those of everything they were handed.
func TestPostgresReplicas(t *testing.T) {
	pg := services.Postgres(t)
	url := pg.URL
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	const replicas, perReplica = 2, 300
	recs := sample(replicas * perReplica)
	stores := make([]*Store, replicas)
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() { stores[i], errs[i] = Open(ctx, "", url) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: Open: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	for i := range replicas {
		r := NewRecorder(stores[i], Options{QueueSize: perReplica, BatchSize: 16, FlushInterval: 10 * time.Millisecond, Logger: quiet})
		wg.Go(func() {
			// Each replica serves every other request, interleaved with the other's.
			for j := i; j < len(recs); j += replicas {
				if !r.enqueue(recs[j]) {
					t.Errorf("replica %d: record %d dropped", i, j)
				}
			}
			if err := r.Close(ctx); err != nil {
				t.Errorf("replica %d: Close: %v", i, err)
			}
		})
	}
	wg.Wait()

	s, err := Open(ctx, "", url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM requests`).Scan(&n); err != nil || n != len(recs) {
		t.Fatalf("got %d requests (%v), want %d", n, err, len(recs))
	}
	all := Query{Since: base, Until: base.Add(24 * time.Hour)}
	for _, by := range groupBys {
		t.Run(string(by), func(t *testing.T) {
			q := all
			q.GroupBy = by
			got, err := s.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameRows(got.Rows, expect(recs, q)); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("window and retention", func(t *testing.T) {
		if _, err := s.expire(ctx, base.Add(100*time.Minute), 1000); err != nil {
			t.Fatal(err)
		}
		q := Query{Since: base.Add(-time.Hour), Until: base.Add(24 * time.Hour), GroupBy: ByTool}
		got, err := s.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameRows(got.Rows, expect(recs[100:], q)); err != nil {
			t.Error(err)
		}
	})
}
