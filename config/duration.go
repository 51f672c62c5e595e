package config

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
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
	v, err := parseDuration(string(b))
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
	v, err := seconds(f)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

func parseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("invalid duration \"\": want a string like \"30s\" or a number of seconds")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return seconds(f)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a string like \"30s\" or a number of seconds", s)
	}
	return Duration(v), nil
}

func seconds(f float64) (Duration, error) {
	ns := f * float64(time.Second)
	if math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, fmt.Errorf("invalid duration %v seconds: out of range", f)
	}
	return Duration(ns), nil
}

var durationType = reflect.TypeOf(Duration(0))

// durationHook is a mapstructure decode hook producing Duration values from
// strings (environment, JSON), numbers of seconds (JSON) and time.Duration
// values (flags).
func durationHook(_, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch v := data.(type) {
	case Duration:
		return v, nil
	case time.Duration:
		return Duration(v), nil
	case string:
		return parseDuration(v)
	case []byte:
		return parseDuration(string(v))
	}
	rv := reflect.ValueOf(data)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return seconds(float64(rv.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return seconds(float64(rv.Uint()))
	case reflect.Float32, reflect.Float64:
		return seconds(rv.Float())
	}
	return data, nil
}
