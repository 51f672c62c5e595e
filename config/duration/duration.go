// Package duration is the configuration's duration: a time.Duration written as a Go duration
// string ("30s", "1m30s") or a number of seconds. The packages whose settings hold durations use it
// without depending on package config, which assembles them.
package duration

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that is written in configuration as a Go
// duration string ("30s", "1m30s", "-1s"). A bare number ("30" or 30 in
// JSON) is taken as a number of seconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration does ("30s", "10m0s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText encodes d as a duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// MarshalJSON encodes d as a JSON duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalText decodes a duration string or a number of seconds.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// UnmarshalJSON decodes a JSON duration string or a JSON number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return d.UnmarshalText([]byte(s))
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("invalid duration %s: want a string like \"30s\" or a number of seconds", b)
	}
	v, err := Seconds(f)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Parse reads a duration string or a number of seconds.
func Parse(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("invalid duration \"\": want a string like \"30s\" or a number of seconds")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return Seconds(f)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a string like \"30s\" or a number of seconds", s)
	}
	return Duration(v), nil
}

// Seconds is f seconds, refused when out of range.
func Seconds(f float64) (Duration, error) {
	ns := f * float64(time.Second)
	if math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, fmt.Errorf("invalid duration %v seconds: out of range", f)
	}
	return Duration(ns), nil
}
