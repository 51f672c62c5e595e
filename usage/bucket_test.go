package usage

import (
	"errors"
	"testing"
	"time"
)

func TestWithBucket(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC)
	tests := []struct {
		name, since, bucket string
		want                Bucket
		wantErr             string
	}{
		{name: "none", since: "24h", want: ""},
		{name: "hours over a day", since: "24h", bucket: "1h", want: Hour},
		{name: "days over a month", since: "30d", bucket: "1d", want: Day},
		{name: "hours over a month", since: "30d", bucket: "1h", want: Hour},
		{name: "the most hours", since: "999h", bucket: "1h", want: Hour}, // 999 and the partial first hour
		{name: "one hour too many", since: "1000h", bucket: "1h", wantErr: "bucket: the window spans 1001 buckets of 1h; at most 1000: shorten the window or widen the bucket"},
		{name: "another width", since: "24h", bucket: "5m", wantErr: `bucket: must be 1h or 1d, got "5m"`},
		{name: "a week", since: "24h", bucket: "1w", wantErr: `bucket: must be 1h or 1d, got "1w"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := ParseQuery(tc.since, "", "", now)
			if err != nil {
				t.Fatal(err)
			}
			got, err := q.WithBucket(tc.bucket)
			var pe *ParamError
			switch {
			case tc.wantErr != "":
				if !errors.As(err, &pe) || pe.Param != "bucket" || err.Error() != tc.wantErr {
					t.Errorf("got %v, want the ParamError %q", err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("got %v, want nil", err)
			case got.Bucket != tc.want || !got.Since.Equal(q.Since) || got.GroupBy != q.GroupBy:
				t.Errorf("got %+v, want %+v with bucket %q", got, q, tc.want)
			}
		})
	}
}

// TestQueryBuckets checks bucketed summaries against the records, hour by hour, in SQLite and
// (when it can be started) PostgreSQL: each bucket's rows are Query's rows over that bucket alone.
func TestQueryBuckets(t *testing.T) {
	stores := openStores(t)
	// One record a minute for three and a half hours from base (12:00), so that hours 12, 13 and 14
	// are whole and 15 has half.
	recs := sample(210)
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			if err := s.write(t.Context(), recs); err != nil {
				t.Fatal(err)
			}
			for _, by := range groupBys {
				t.Run(string(by), func(t *testing.T) {
					// A window that starts and ends inside an hour: the first and last buckets count only
					// what is in the window.
					q := Query{Since: base.Add(30 * time.Minute), Until: base.Add(200 * time.Minute), GroupBy: by, Bucket: Hour}
					got, err := s.Query(t.Context(), q)
					if err != nil {
						t.Fatal(err)
					}
					if got.Bucket != Hour {
						t.Errorf("got bucket %q, want %q", got.Bucket, Hour)
					}
					perBucket := map[time.Time][]Row{}
					var order []time.Time
					for _, r := range got.Rows {
						if len(order) == 0 || !order[len(order)-1].Equal(r.Bucket) {
							order = append(order, r.Bucket)
						}
						b := r.Bucket
						r.Bucket = time.Time{}
						perBucket[b] = append(perBucket[b], r)
					}
					want := []time.Time{base, base.Add(time.Hour), base.Add(2 * time.Hour), base.Add(3 * time.Hour)}
					if len(order) != len(want) {
						t.Fatalf("got buckets %v, want %v", order, want)
					}
					for i, b := range want {
						if !order[i].Equal(b) {
							t.Fatalf("got buckets %v, want %v, oldest first", order, want)
						}
						one := Query{Since: later(b, q.Since), Until: earlier(b.Add(time.Hour), q.Until), GroupBy: by}
						if err := sameRows(perBucket[b], expect(recs, one)); err != nil {
							t.Errorf("bucket %s: %v", b.Format(time.RFC3339), err)
						}
					}
				})
			}
			t.Run("days", func(t *testing.T) {
				got, err := s.Query(t.Context(), Query{Since: base.Add(-48 * time.Hour), Until: base.Add(48 * time.Hour), GroupBy: ByOrg, Bucket: Day})
				if err != nil {
					t.Fatal(err)
				}
				day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
				var n int64
				for _, r := range got.Rows {
					if !r.Bucket.Equal(day) {
						t.Errorf("row %q: got bucket %s, want %s", r.Key, r.Bucket.Format(time.RFC3339), day.Format(time.RFC3339))
					}
					n += r.Requests
				}
				if n != int64(len(recs)) {
					t.Errorf("got %d requests, want %d", n, len(recs))
				}
			})
			t.Run("no bucket", func(t *testing.T) {
				q := Query{Since: base, Until: base.Add(24 * time.Hour), GroupBy: ByTeam}
				got, err := s.Query(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range got.Rows {
					if !r.Bucket.IsZero() {
						t.Errorf("row %q: got bucket %v, want none", r.Key, r.Bucket)
					}
				}
				if err := sameRows(got.Rows, expect(recs, q)); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
