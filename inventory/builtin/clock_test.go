package builtin

import (
	"maps"
	"testing"
)

// The fixed now of the clock tests, a Sunday: 05:00 in Paris, still Saturday
// in Los Angeles.
const testNow = "2026-11-22T04:00:00.75Z"

func TestCurrentTime(t *testing.T) {
	c := connect(t, "clock", fixedNow(t, testNow))
	tests := []struct {
		name       string
		args       map[string]any
		text       string
		structured map[string]any
		err        bool
	}{
		{
			name: "default UTC", args: nil,
			text:       "2026-11-22T04:00:00Z (UTC, Sunday)",
			structured: map[string]any{"iso": "2026-11-22T04:00:00Z", "timezone": "UTC", "unix": 1795320000.0, "weekday": "Sunday"},
		},
		{
			name: "empty means UTC", args: map[string]any{"timezone": ""},
			text: "2026-11-22T04:00:00Z (UTC, Sunday)",
		},
		{
			name: "surrounding spaces", args: map[string]any{"timezone": " Europe/Paris "},
			text: "2026-11-22T05:00:00+01:00 (Europe/Paris, Sunday)",
		},
		{
			name: "Paris", args: map[string]any{"timezone": "Europe/Paris"},
			text:       "2026-11-22T05:00:00+01:00 (Europe/Paris, Sunday)",
			structured: map[string]any{"iso": "2026-11-22T05:00:00+01:00", "timezone": "Europe/Paris", "unix": 1795320000.0, "weekday": "Sunday"},
		},
		{
			name: "previous day in Los Angeles", args: map[string]any{"timezone": "America/Los_Angeles"},
			text: "2026-11-21T20:00:00-08:00 (America/Los_Angeles, Saturday)",
		},
		{
			name: "half-hour offset", args: map[string]any{"timezone": "Asia/Kolkata"},
			text: "2026-11-22T09:30:00+05:30 (Asia/Kolkata, Sunday)",
		},
		{
			name: "unknown zone", args: map[string]any{"timezone": "Mars/Olympus"}, err: true,
			text: `parameter "timezone": unknown time zone "Mars/Olympus"; use ` + zoneHint,
		},
		{
			name: "Local refused", args: map[string]any{"timezone": "Local"}, err: true,
			text: `parameter "timezone": "Local" is not a time zone name; use ` + zoneHint,
		},
		{
			name: "not a string", args: map[string]any{"timezone": 1}, err: true,
			text: `parameter "timezone" must be a string, got a number`,
		},
		{
			name: "unknown parameter", args: map[string]any{"zone": "UTC"}, err: true,
			text: `unknown parameter "zone" (accepted: timezone)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, c, "current_time", tc.args)
			if got.isError != tc.err || got.text != tc.text {
				t.Errorf("got %q (isError %v), want %q (isError %v)", got.text, got.isError, tc.text, tc.err)
			}
			if tc.structured != nil && !maps.Equal(got.structured, tc.structured) {
				t.Errorf("got structured %v, want %v", got.structured, tc.structured)
			}
		})
	}
}

func TestConvertTime(t *testing.T) {
	c := connect(t, "clock", fixedNow(t, testNow))
	tests := []struct {
		name string
		args map[string]any
		text string
		err  bool
	}{
		{
			name: "RFC 3339",
			args: map[string]any{"time": "2026-11-22T05:00:00+01:00", "to_timezone": "Asia/Tokyo"},
			text: "2026-11-22T05:00:00+01:00 (+01:00, Sunday) is 2026-11-22T13:00:00+09:00 (Asia/Tokyo, Sunday)",
		},
		{
			name: "RFC 3339 shown in from_timezone",
			args: map[string]any{"time": "2026-11-22T04:00:00Z", "from_timezone": "Europe/Paris", "to_timezone": "UTC"},
			text: "2026-11-22T05:00:00+01:00 (Europe/Paris, Sunday) is 2026-11-22T04:00:00Z (UTC, Sunday)",
		},
		{
			name: "fractional seconds kept",
			args: map[string]any{"time": "2026-11-22T04:00:00.5Z", "to_timezone": "Europe/Paris"},
			text: "2026-11-22T04:00:00.5Z (UTC, Sunday) is 2026-11-22T05:00:00.5+01:00 (Europe/Paris, Sunday)",
		},
		{
			name: "wall clock in summer time",
			args: map[string]any{"time": "2026-07-01 12:00", "from_timezone": "America/New_York", "to_timezone": "Europe/London"},
			text: "2026-07-01T12:00:00-04:00 (America/New_York, Wednesday) is 2026-07-01T17:00:00+01:00 (Europe/London, Wednesday)",
		},
		{
			name: "wall clock with seconds and T",
			args: map[string]any{"time": "2026-01-15T08:30:15", "from_timezone": "Asia/Tokyo", "to_timezone": "America/Sao_Paulo"},
			text: "2026-01-15T08:30:15+09:00 (Asia/Tokyo, Thursday) is 2026-01-14T20:30:15-03:00 (America/Sao_Paulo, Wednesday)",
		},
		{
			name: "wall clock defaults to UTC",
			args: map[string]any{"time": "2026-01-01 00:00", "to_timezone": "Pacific/Auckland"},
			text: "2026-01-01T00:00:00Z (UTC, Thursday) is 2026-01-01T13:00:00+13:00 (Pacific/Auckland, Thursday)",
		},
		{
			name: "time of day is today in the source zone",
			args: map[string]any{"time": "09:30", "from_timezone": "Europe/Paris", "to_timezone": "UTC"},
			text: "2026-11-22T09:30:00+01:00 (Europe/Paris, Sunday) is 2026-11-22T08:30:00Z (UTC, Sunday)",
		},
		{
			name: "today differs between zones",
			args: map[string]any{"time": "23:00:30", "from_timezone": "America/Los_Angeles", "to_timezone": "UTC"},
			text: "2026-11-21T23:00:30-08:00 (America/Los_Angeles, Saturday) is 2026-11-22T07:00:30Z (UTC, Sunday)",
		},
		{
			name: "skipped by daylight saving", err: true,
			args: map[string]any{"time": "2026-03-29 02:30", "from_timezone": "Europe/Paris", "to_timezone": "UTC"},
			text: `parameter "time": "2026-03-29 02:30" does not exist in Europe/Paris (skipped by a daylight-saving change)`,
		},
		{
			name: "unparsable time", err: true,
			args: map[string]any{"time": "tomorrow", "to_timezone": "UTC"},
			text: `parameter "time": cannot parse "tomorrow"; use RFC 3339 ("2026-11-22T05:00:00+01:00"), "2006-01-02 15:04" or "15:04"`,
		},
		{
			name: "invalid date", err: true,
			args: map[string]any{"time": "2026-02-30 10:00", "to_timezone": "UTC"},
			text: `parameter "time": cannot parse "2026-02-30 10:00"; use RFC 3339 ("2026-11-22T05:00:00+01:00"), "2006-01-02 15:04" or "15:04"`,
		},
		{
			name: "unknown source zone", err: true,
			args: map[string]any{"time": "10:00", "from_timezone": "Europe/Pariss", "to_timezone": "UTC"},
			text: `parameter "from_timezone": unknown time zone "Europe/Pariss"; use ` + zoneHint,
		},
		{
			name: "unknown target zone", err: true,
			args: map[string]any{"time": "10:00", "to_timezone": "EST5EDT/Nowhere"},
			text: `parameter "to_timezone": unknown time zone "EST5EDT/Nowhere"; use ` + zoneHint,
		},
		{
			name: "missing target zone", err: true,
			args: map[string]any{"time": "10:00"},
			text: `missing required parameter "to_timezone"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, c, "convert_time", tc.args)
			if got.isError != tc.err || got.text != tc.text {
				t.Errorf("got %q (isError %v), want %q (isError %v)", got.text, got.isError, tc.text, tc.err)
			}
		})
	}

	t.Run("structured", func(t *testing.T) {
		got := call(t, c, "convert_time", map[string]any{"time": "2026-11-22 05:00", "from_timezone": "Europe/Paris", "to_timezone": "Asia/Tokyo"})
		want := map[string]any{
			"iso": "2026-11-22T13:00:00+09:00", "timezone": "Asia/Tokyo", "unix": 1795320000.0, "weekday": "Sunday",
		}
		source, _ := got.structured["source"].(map[string]any)
		delete(got.structured, "source")
		if !maps.Equal(got.structured, want) {
			t.Errorf("got %v, want %v", got.structured, want)
		}
		wantSource := map[string]any{
			"iso": "2026-11-22T05:00:00+01:00", "timezone": "Europe/Paris", "unix": 1795320000.0, "weekday": "Sunday",
		}
		if !maps.Equal(source, wantSource) {
			t.Errorf("got source %v, want %v", source, wantSource)
		}
	})
}

func TestDateDifference(t *testing.T) {
	c := connect(t, "clock", nil)
	tests := []struct {
		name  string
		args  map[string]any
		text  string
		days  float64
		hours float64
		err   bool
	}{
		{name: "leap year", args: map[string]any{"start": "2024-01-01", "end": "2025-01-01"}, text: "366 days (1y 0m 0d)", days: 366, hours: 8784},
		{name: "common year", args: map[string]any{"start": "2023-01-01", "end": "2024-01-01"}, text: "365 days (1y 0m 0d)", days: 365, hours: 8760},
		{name: "across February 29", args: map[string]any{"start": "2024-02-28", "end": "2024-03-01"}, text: "2 days (0y 0m 2d)", days: 2, hours: 48},
		{name: "across February 28", args: map[string]any{"start": "2023-02-28", "end": "2023-03-01"}, text: "1 day (0y 0m 1d)", days: 1, hours: 24},
		{name: "from February 29 to February 28", args: map[string]any{"start": "2024-02-29", "end": "2025-02-28"}, text: "365 days (0y 11m 30d)", days: 365, hours: 8760},
		{name: "from February 29 to March 1", args: map[string]any{"start": "2024-02-29", "end": "2025-03-01"}, text: "366 days (1y 0m 1d)", days: 366, hours: 8784},
		{name: "leap day to leap day", args: map[string]any{"start": "2024-02-29", "end": "2028-02-29"}, text: "1461 days (4y 0m 0d)", days: 1461, hours: 35064},
		{name: "month from January 31", args: map[string]any{"start": "2024-01-31", "end": "2024-03-01"}, text: "30 days (0y 1m 1d)", days: 30, hours: 720},
		{name: "years months days", args: map[string]any{"start": "2024-01-05", "end": "2025-03-10"}, text: "430 days (1y 2m 5d)", days: 430, hours: 10320},
		{name: "end before start", args: map[string]any{"start": "2025-03-10", "end": "2024-01-05"}, text: "-430 days (-1y 2m 5d)", days: -430, hours: -10320},
		{name: "minus one day", args: map[string]any{"start": "2026-01-02", "end": "2026-01-01"}, text: "-1 day (-0y 0m 1d)", days: -1, hours: -24},
		{name: "same day", args: map[string]any{"start": "2026-01-01", "end": "2026-01-01"}, text: "0 days (0y 0m 0d)", days: 0, hours: 0},
		{name: "weeks", args: map[string]any{"start": "2026-01-01", "end": "2026-01-15", "unit": "weeks"}, text: "2 weeks (0y 0m 14d)", days: 14, hours: 336},
		{name: "fractional weeks", args: map[string]any{"start": "2026-01-01", "end": "2026-01-11", "unit": "weeks"}, text: "1.4285714285714286 weeks (0y 0m 10d)", days: 10, hours: 240},
		{name: "hours across a daylight-saving change", args: map[string]any{"start": "2026-03-28T12:00:00+01:00", "end": "2026-03-29T12:00:00+02:00", "unit": "hours"}, text: "23 hours (0y 0m 0d)", days: 23.0 / 24, hours: 23},
		{name: "partial day", args: map[string]any{"start": "2026-01-01T06:00:00Z", "end": "2026-01-03T18:00:00Z"}, text: "2.5 days (0y 0m 2d)", days: 2.5, hours: 60},
		{name: "date against RFC 3339", args: map[string]any{"start": "2026-01-01", "end": "2026-01-01T00:30:00Z", "unit": "hours"}, text: "0.5 hours (0y 0m 0d)", days: 0.5 / 24, hours: 0.5},
		{name: "whole calendar", args: map[string]any{"start": "0001-01-01", "end": "9999-12-31"}, text: "3652058 days (9998y 11m 30d)", days: 3652058, hours: 87649392},
		{name: "bad start", args: map[string]any{"start": "yesterday", "end": "2026-01-01"}, err: true, text: `parameter "start": cannot parse "yesterday"; use a date "YYYY-MM-DD" or RFC 3339 such as "2026-11-22T05:00:00+01:00"`},
		{name: "bad end", args: map[string]any{"start": "2026-01-01", "end": "2026-13-01"}, err: true, text: `parameter "end": cannot parse "2026-13-01"; use a date "YYYY-MM-DD" or RFC 3339 such as "2026-11-22T05:00:00+01:00"`},
		{name: "bad unit", args: map[string]any{"start": "2026-01-01", "end": "2026-02-01", "unit": "months"}, err: true, text: `parameter "unit": "months" is not one of "days", "weeks", "hours"`},
		{name: "missing end", args: map[string]any{"start": "2026-01-01"}, err: true, text: `missing required parameter "end"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, c, "date_difference", tc.args)
			if got.isError != tc.err || got.text != tc.text {
				t.Errorf("got %q (isError %v), want %q (isError %v)", got.text, got.isError, tc.text, tc.err)
			}
			if tc.err {
				return
			}
			s := got.structured
			if s["days"] != tc.days || s["hours"] != tc.hours || s["weeks"] != tc.days/7 {
				t.Errorf("got structured %v, want days %v, weeks %v, hours %v", s, tc.days, tc.days/7, tc.hours)
			}
		})
	}
}
