package server_test

import (
	"encoding/json"
	"testing"
	"time"
)

// TestUsageBuckets: GET /v1/usage?bucket= answers one row per group and bucket of time, each with
// its bucket's start; a bucket it does not know, or too many of them, is a 400 bad_bucket.
func TestUsageBuckets(t *testing.T) {
	path := usageStore(t) // three requests an hour ago
	app, _ := usageApp(t, path, false)
	hour := time.Now().Add(-time.Hour).UTC().Truncate(time.Hour)
	day := time.Now().Add(-time.Hour).UTC().Truncate(24 * time.Hour)
	type row struct {
		Bucket   time.Time `json:"bucket"`
		Key      string    `json:"key"`
		Requests int       `json:"requests"`
	}
	tests := []struct {
		name, path string
		status     int
		code       string
		bucket     string
		want       []row
	}{
		{name: "by hour", path: "/v1/usage?bucket=1h&since=3h", status: 200, bucket: "1h",
			want: []row{{hour, "acme", 2}, {hour, "globex", 1}}},
		{name: "by day", path: "/v1/usage?bucket=1d&since=7d&group_by=tool", status: 200, bucket: "1d",
			want: []row{{day, "calculator.add", 2}}},
		{name: "another width", path: "/v1/usage?bucket=15m", status: 400, code: "bad_bucket"},
		{name: "too many buckets", path: "/v1/usage?bucket=1h&since=90d", status: 400, code: "bad_bucket"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, raw := getUsage(t, app, tc.path, "")
			if status != tc.status {
				t.Fatalf("got status %d (%s), want %d", status, raw, tc.status)
			}
			if tc.code != "" {
				if code, _ := errorBody(t, raw); code != tc.code {
					t.Errorf("got code %q, want %q", code, tc.code)
				}
				return
			}
			var s struct {
				Bucket string `json:"bucket"`
				Rows   []row  `json:"rows"`
			}
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			if s.Bucket != tc.bucket {
				t.Errorf("got bucket %q, want %q", s.Bucket, tc.bucket)
			}
			if len(s.Rows) != len(tc.want) {
				t.Fatalf("got rows %+v, want %+v", s.Rows, tc.want)
			}
			for i, r := range s.Rows {
				if w := tc.want[i]; !r.Bucket.Equal(w.Bucket) || r.Key != w.Key || r.Requests != w.Requests {
					t.Errorf("row %d: got %+v, want %+v", i, r, w)
				}
			}
		})
	}
}
