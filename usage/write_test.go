package usage

import (
	"testing"
	"time"
)

// TestWriteBatches writes batches of many sizes to SQLite (in one INSERT per table or in many: its
// full statements, its bound on bind values) and PostgreSQL (COPY): every record is stored, each
// call under its own request, and the totals are those of the records. A batch that fails on
// its last table leaves nothing.
func TestWriteBatches(t *testing.T) {
	stores := openStores(t)
	for name, s := range stores {
		for _, tc := range []struct {
			name      string
			sizes     []int
			maxParams int // 0: the dialect's
		}{
			{name: "one record", sizes: []int{1}},
			{name: "empty batch", sizes: []int{0, 2}},
			{name: "full statements and a rest", sizes: []int{64, 65, 300}},
			{name: "bind value bound", sizes: []int{7, 50}, maxParams: 40},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				if _, err := s.db.ExecContext(t.Context(), `DELETE FROM requests`); err != nil {
					t.Fatal(err)
				}
				for _, table := range []string{"tool_calls", "model_calls"} {
					if _, err := s.db.ExecContext(t.Context(), `DELETE FROM `+table); err != nil {
						t.Fatal(err)
					}
				}
				d := s.d
				if tc.maxParams != 0 {
					s.d.maxParams = tc.maxParams
				}
				defer func() { s.d = d }()
				var all []Record
				for _, n := range tc.sizes {
					recs := sample(len(all) + n)[len(all):]
					if err := s.write(t.Context(), recs); err != nil {
						t.Fatalf("writing %d records: %v", n, err)
					}
					all = append(all, recs...)
				}
				if n := count(t, s.db, "requests"); n != len(all) {
					t.Errorf("got %d requests, want %d", n, len(all))
				}
				// A request's calls carry its start; its counts are those of the calls under its id.
				for _, c := range []struct{ table, count string }{{"tool_calls", "tool_calls"}, {"model_calls", "model_calls"}} {
					var wrong int
					err := s.db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM requests r WHERE r.`+c.count+
						` <> (SELECT COUNT(*) FROM `+c.table+` c WHERE c.request_id = r.id AND c.start_ms = r.start_ms)`).Scan(&wrong)
					if err != nil || wrong != 0 {
						t.Errorf("%s: got %d requests whose calls are not theirs (%v), want 0", c.table, wrong, err)
					}
				}
				q := Query{Since: base, Until: base.Add(24 * time.Hour)}
				for _, by := range groupBys {
					q.GroupBy = by
					got, err := s.Query(t.Context(), q)
					if err != nil {
						t.Fatal(err)
					}
					if err := sameRows(got.Rows, expect(all, q)); err != nil {
						t.Errorf("by %s: %v", by, err)
					}
				}
			})
		}
		t.Run(name+"/a failing table writes nothing", func(t *testing.T) {
			before := count(t, s.db, "requests")
			if _, err := s.db.ExecContext(t.Context(), `ALTER TABLE model_calls RENAME TO model_calls_away`); err != nil {
				t.Fatal(err)
			}
			err := s.write(t.Context(), sample(100))
			if _, rerr := s.db.ExecContext(t.Context(), `ALTER TABLE model_calls_away RENAME TO model_calls`); rerr != nil {
				t.Fatal(rerr)
			}
			if err == nil {
				t.Fatal("got no error writing without model_calls, want one")
			}
			if n := count(t, s.db, "requests"); n != before {
				t.Errorf("got %d requests, want %d: the failed batch's", n, before)
			}
			if err := s.write(t.Context(), sample(3)); err != nil {
				t.Errorf("writing after the failure: %v", err)
			}
		})
	}
}
