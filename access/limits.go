package access

import "fmt"

// Limits are one level's rate limits (config key limits of an org, team or agent, and
// limits.anonymous); 0 sets no limit at that level. Package limits enforces them and names this
// type limits.Limits; it is declared here, beside the hierarchy that holds it, because package
// limits depends on this one.
type Limits struct {
	RequestsPerMinute  int `koanf:"requests_per_minute" json:"requests_per_minute,omitempty"`
	ToolCallsPerMinute int `koanf:"tool_calls_per_minute" json:"tool_calls_per_minute,omitempty"`
	TokensPerMinute    int `koanf:"tokens_per_minute" json:"tokens_per_minute,omitempty"`
	TokensPerDay       int `koanf:"tokens_per_day" json:"tokens_per_day,omitempty"`
	Concurrent         int `koanf:"concurrent" json:"concurrent,omitempty"`
}

// Validate checks that no limit is negative; key is the koanf key of l ("orgs.acme.limits"). The
// problems are *FieldError values, joined and sorted; nil when l is valid.
func (l Limits) Validate(key string) error { return sortedJoin(l.problems(key)) }

// problems are the *FieldError values of Validate, unsorted.
func (l Limits) problems(key string) []error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{
		{"requests_per_minute", l.RequestsPerMinute}, {"tool_calls_per_minute", l.ToolCallsPerMinute},
		{"tokens_per_minute", l.TokensPerMinute}, {"tokens_per_day", l.TokensPerDay}, {"concurrent", l.Concurrent},
	} {
		if f.v < 0 {
			errs = append(errs, &FieldError{Key: key + "." + f.name, Reason: fmt.Sprintf("must be >= 0 (0: no limit), got %d", f.v)})
		}
	}
	return errs
}
