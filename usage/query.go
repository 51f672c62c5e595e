package usage

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"toolrouter/access"
)

// GroupBy is what a summary's rows are grouped by.
type GroupBy string

// Values of GroupBy.
const (
	ByOrg   GroupBy = "org"
	ByTeam  GroupBy = "team"
	ByAgent GroupBy = "agent"
	ByTool  GroupBy = "tool"
	ByModel GroupBy = "model"
)

var groupBys = []GroupBy{ByOrg, ByTeam, ByAgent, ByTool, ByModel}

// Query asks for the totals of the requests that started in [Since, Until), grouped, and with a
// Bucket, per bucket of time too.
type Query struct {
	Since, Until time.Time
	GroupBy      GroupBy
	Bucket       Bucket
}

// Bucket is the width of a summary's buckets of time: with one, each row is one group's totals in
// one bucket. Buckets are aligned on the Unix epoch: whole hours, or whole days in UTC.
type Bucket string

// Values of Bucket; "" is no buckets, one row per group over the whole window.
const (
	Hour Bucket = "1h"
	Day  Bucket = "1d"
)

// millis is the bucket's width in milliseconds, a literal of the query (never a bind value, so
// that the SELECT and GROUP BY expressions are the same text).
func (b Bucket) millis() int64 {
	switch b {
	case Hour:
		return time.Hour.Milliseconds()
	case Day:
		return 24 * time.Hour.Milliseconds()
	}
	return 0
}

// MaxBuckets bounds the buckets a window may span; MaxBucketRows bounds a bucketed summary's rows.
const (
	MaxBuckets    = 1000
	MaxBucketRows = 20 * MaxRows
)

// Summary is a query's answer.
type Summary struct {
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	GroupBy GroupBy   `json:"group_by"`
	// Bucket is the query's, when it had one.
	Bucket Bucket `json:"bucket,omitempty"`
	// Rows are the groups, most requests (by tool or model: most calls) first, at most MaxRows.
	// With a bucket, they are in bucket order, oldest first, each bucket's groups ordered so, at
	// most MaxBucketRows: the newest are kept.
	Rows []Row `json:"rows"`
	// Truncated says there were more groups than MaxRows (with a bucket, rows than MaxBucketRows).
	Truncated bool `json:"truncated,omitempty"`
}

// Row is one group's totals. Grouped by org, team or agent, every count is the group's requests'
// and DurationMS sums their durations. Grouped by tool, Requests counts the requests that called
// the tool, ToolCalls and ToolErrors its calls, DurationMS their execution; the model fields are
// zero. Grouped by model, Requests counts the requests that called the model, ModelCalls and the
// tokens its calls, DurationMS their durations; the tool fields are zero.
type Row struct {
	// Bucket is the start of the row's bucket of time, when the query has one (the first and last
	// buckets may start before since or end after until: only records in the window count).
	Bucket time.Time `json:"bucket,omitzero"`
	// Key is the group: "org", "org/team" or "org/team/agent" (a request with no team or agent
	// is under its org's or team's path; "" is a request whose credential was missing or
	// refused); "server.tool"; or the model.
	Key              string  `json:"key"`
	Requests         int64   `json:"requests"`
	ToolCalls        int64   `json:"tool_calls"`
	ToolErrors       int64   `json:"tool_errors"`
	ModelCalls       int64   `json:"model_calls"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	DurationMS       float64 `json:"duration_ms"`
}

// MaxRows bounds a summary's rows.
const MaxRows = 1000

// DefaultWindow is how far back a query looks when it names no since.
const DefaultWindow = 24 * time.Hour

// ParamError is a query parameter that cannot be read: Param names it.
type ParamError struct {
	Param   string
	Message string
}

func (e *ParamError) Error() string { return e.Param + ": " + e.Message }

// ParseQuery reads a query's parameters as GET /v1/usage and "toolrouter usage" take them: since
// and until are RFC 3339 times or durations back from now ("24h", "30m", "7d"); since defaults to
// DefaultWindow ago, until to now; groupBy defaults to org.
func ParseQuery(since, until, groupBy string, now time.Time) (Query, error) {
	q := Query{Since: now.Add(-DefaultWindow), Until: now, GroupBy: ByOrg}
	var err error
	if since != "" {
		if q.Since, err = parseTime("since", since, now); err != nil {
			return Query{}, err
		}
	}
	if until != "" {
		if q.Until, err = parseTime("until", until, now); err != nil {
			return Query{}, err
		}
	}
	if !q.Since.Before(q.Until) {
		return Query{}, &ParamError{Param: "since", Message: fmt.Sprintf("must be before until (%s), got %s",
			q.Until.Format(time.RFC3339), q.Since.Format(time.RFC3339))}
	}
	if groupBy != "" {
		q.GroupBy = GroupBy(groupBy)
		if !slices.Contains(groupBys, q.GroupBy) {
			return Query{}, &ParamError{Param: "group_by", Message: fmt.Sprintf("must be one of org, team, agent, tool or model, got %q", groupBy)}
		}
	}
	return q, nil
}

// WithBucket is q with the bucket named by s (a query parameter): "" for none, "1h" or "1d". The
// window may span at most MaxBuckets buckets.
func (q Query) WithBucket(s string) (Query, error) {
	b := Bucket(s)
	switch {
	case b == "":
		return q, nil
	case b.millis() == 0:
		return Query{}, &ParamError{Param: "bucket", Message: fmt.Sprintf("must be 1h or 1d, got %q", s)}
	}
	width := time.Duration(b.millis()) * time.Millisecond
	// The buckets the window touches: the first may start before since.
	n := q.Until.Sub(q.Since.Truncate(width)) / width
	if q.Until.Sub(q.Since.Truncate(width))%width != 0 {
		n++
	}
	if n > MaxBuckets {
		return Query{}, &ParamError{Param: "bucket", Message: fmt.Sprintf("the window spans %d buckets of %s; at most %d: shorten the window or widen the bucket", n, b, MaxBuckets)}
	}
	q.Bucket = b
	return q, nil
}

// parseTime reads an RFC 3339 time, or a duration back from now: a Go duration or whole days ("7d").
func parseTime(param, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok && err != nil {
		n, derr := strconv.Atoi(days)
		if derr == nil && n >= 0 && n <= 100*365 {
			d, err = time.Duration(n)*24*time.Hour, nil
		}
	}
	if err != nil || d < 0 {
		return time.Time{}, &ParamError{Param: param, Message: fmt.Sprintf(
			"want an RFC 3339 time (2026-01-02T15:04:05Z) or a duration back from now (24h, 7d), got %q", s)}
	}
	return now.Add(-d), nil
}

// Query answers q.
func (s *Store) Query(ctx context.Context, q Query) (*Summary, error) {
	var cols, table, order string
	switch q.GroupBy {
	case ByOrg, ByTeam, ByAgent:
		table, order = "requests", "COUNT(*)"
		cols = map[GroupBy]string{ByOrg: "org, '', ''", ByTeam: "org, team, ''", ByAgent: "org, team, agent"}[q.GroupBy]
		cols += `, COUNT(*), CAST(SUM(tool_calls) AS BIGINT), CAST(SUM(tool_errors) AS BIGINT), CAST(SUM(model_calls) AS BIGINT),
			CAST(SUM(prompt_tokens) AS BIGINT), CAST(SUM(completion_tokens) AS BIGINT), SUM(duration_ms)`
	case ByTool:
		table, order = "tool_calls", "COUNT(*)"
		cols = `server, tool, '', COUNT(DISTINCT request_id), COUNT(*),
			CAST(SUM(CASE WHEN outcome <> 'ok' THEN 1 ELSE 0 END) AS BIGINT), CAST(0 AS BIGINT),
			CAST(0 AS BIGINT), CAST(0 AS BIGINT), SUM(duration_ms)`
	case ByModel:
		table, order = "model_calls", "COUNT(*)"
		cols = `model, '', '', COUNT(DISTINCT request_id), CAST(0 AS BIGINT), CAST(0 AS BIGINT), COUNT(*),
			CAST(SUM(prompt_tokens) AS BIGINT), CAST(SUM(completion_tokens) AS BIGINT), SUM(duration_ms)`
	default:
		return nil, &ParamError{Param: "group_by", Message: fmt.Sprintf("must be one of org, team, agent, tool or model, got %q", q.GroupBy)}
	}
	group := map[GroupBy]string{ByOrg: "org", ByTeam: "org, team", ByAgent: "org, team, agent", ByTool: "server, tool", ByModel: "model"}[q.GroupBy]
	// Without a bucket, every row is in the one bucket 0. With one, the newest buckets come first
	// so that a cut keeps them; the rows are put in bucket order below.
	bucket, limit := "0", MaxRows
	if w := q.Bucket.millis(); w > 0 {
		bucket, limit = fmt.Sprintf("start_ms - start_ms %% %d", w), MaxBucketRows
		group, order = bucket+", "+group, "b DESC, "+order
	}
	query := `SELECT ` + bucket + ` AS b, ` + cols + ` FROM ` + table + ` WHERE start_ms >= ? AND start_ms < ? GROUP BY ` + group +
		` ORDER BY ` + order + ` DESC, ` + group + ` LIMIT ?`
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	rows, err := s.db.QueryContext(ctx, s.d.q(query), q.Since.UnixMilli(), q.Until.UnixMilli(), limit+1)
	if err != nil {
		return nil, fmt.Errorf("querying usage records: %w", err)
	}
	defer rows.Close()
	out := &Summary{Since: q.Since.UTC(), Until: q.Until.UTC(), GroupBy: q.GroupBy, Bucket: q.Bucket, Rows: []Row{}}
	for rows.Next() {
		var (
			a, b, c string
			start   int64
			r       Row
		)
		if err := rows.Scan(&start, &a, &b, &c, &r.Requests, &r.ToolCalls, &r.ToolErrors, &r.ModelCalls,
			&r.PromptTokens, &r.CompletionTokens, &r.DurationMS); err != nil {
			return nil, fmt.Errorf("querying usage records: %w", err)
		}
		if q.Bucket != "" {
			r.Bucket = time.UnixMilli(start).UTC()
		}
		switch q.GroupBy {
		case ByTool:
			r.Key = a + "." + b
		case ByModel:
			r.Key = a
		default:
			r.Key = access.Identity{Org: a, Team: b, Agent: c}.String()
		}
		if len(out.Rows) == limit {
			out.Truncated = true
			break
		}
		out.Rows = append(out.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("querying usage records: %w", err)
	}
	// Oldest bucket first; within a bucket, the order the query gave.
	slices.SortStableFunc(out.Rows, func(x, y Row) int { return x.Bucket.Compare(y.Bucket) })
	return out, nil
}
