package builtin

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // zones work on machines without a zoneinfo database

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// reading is a moment as seen in one time zone.
type reading struct {
	ISO      string `json:"iso"`
	Timezone string `json:"timezone"`
	Unix     int64  `json:"unix"`
	Weekday  string `json:"weekday"`
}

func newReading(t time.Time, zone string) reading {
	return reading{
		ISO:      t.Format(time.RFC3339Nano),
		Timezone: zone,
		Unix:     t.Unix(),
		Weekday:  t.Weekday().String(),
	}
}

func (r reading) String() string {
	return fmt.Sprintf("%s (%s, %s)", r.ISO, r.Timezone, r.Weekday)
}

// conversion is the structured result of convert_time: the converted time,
// plus the time it was converted from.
type conversion struct {
	reading
	Source reading `json:"source"`
}

// difference is the structured result of date_difference.
type difference struct {
	Days            float64 `json:"days"`
	Weeks           float64 `json:"weeks"`
	Hours           float64 `json:"hours"`
	YearsMonthsDays string  `json:"years_months_days"`
}

var readingProps = map[string]any{
	"iso":      map[string]any{"type": "string", "description": "The time in RFC 3339 format, with the zone's UTC offset."},
	"timezone": map[string]any{"type": "string", "description": "The time zone the time is shown in."},
	"unix":     map[string]any{"type": "integer", "description": "Seconds since 1970-01-01T00:00:00Z."},
	"weekday":  map[string]any{"type": "string", "description": "The day of the week in that zone, e.g. \"Sunday\"."},
}

var readingOrder = []string{"iso", "timezone", "unix", "weekday"}

var readingOutput = objectSchema(readingOrder, readingProps)

var conversionOutput = func() mcp.ToolOutputSchema {
	props := map[string]any{
		"source": map[string]any{
			"type":                 "object",
			"description":          "The time that was converted, in the source zone.",
			"properties":           readingProps,
			"required":             readingOrder,
			"additionalProperties": false,
		},
	}
	for k, v := range readingProps {
		props[k] = v
	}
	return objectSchema(slices.Concat(readingOrder, []string{"source"}), props)
}()

var differenceOutput = objectSchema([]string{"days", "weeks", "hours", "years_months_days"}, map[string]any{
	"days":              map[string]any{"type": "number", "description": "Elapsed days from start to end; negative when end is before start."},
	"weeks":             map[string]any{"type": "number", "description": "Elapsed weeks (days / 7)."},
	"hours":             map[string]any{"type": "number", "description": "Elapsed hours."},
	"years_months_days": map[string]any{"type": "string", "description": "The calendar difference as \"1y 2m 3d\", prefixed with \"-\" when end is before start."},
})

const zoneHint = `an IANA time zone name such as "Europe/Paris", "America/New_York" or "UTC"`

var currentTimeParams = []property{{
	name: "timezone", kind: "string", def: "UTC",
	description: "The time zone to show the time in: " + zoneHint + ". Defaults to UTC.",
}}

var convertTimeParams = []property{
	{
		name: "time", kind: "string", required: true,
		description: `The time to convert: RFC 3339 with an offset ("2026-11-22T05:00:00+01:00"), or a wall-clock time in from_timezone as "2006-01-02 15:04", "2006-01-02 15:04:05" or just "15:04" (today in from_timezone).`,
	},
	{
		name: "from_timezone", kind: "string", def: "UTC",
		description: "The time zone a wall-clock time is given in: " + zoneHint + ". Defaults to UTC. For an RFC 3339 time it only sets the zone the source time is shown in.",
	},
	{
		name: "to_timezone", kind: "string", required: true,
		description: "The time zone to convert to: " + zoneHint + ".",
	},
}

var dateDifferenceParams = []property{
	{
		name: "start", kind: "string", required: true,
		description: `The start: a date "YYYY-MM-DD" (midnight UTC) or an RFC 3339 time such as "2026-11-22T05:00:00+01:00".`,
	},
	{
		name: "end", kind: "string", required: true,
		description: `The end, in the same forms as start. It may be before start; the difference is then negative.`,
	},
	{
		name: "unit", kind: "string", def: "days", enum: []string{"days", "weeks", "hours"},
		description: "The unit of the difference in the text answer: days, weeks or hours. Defaults to days. The structured result always has all three.",
	},
}

// clockTools returns the clock's tools, which read the current time from now.
func clockTools(now func() time.Time) []server.ServerTool {
	c := clock{now: now}
	return []server.ServerTool{
		{
			Tool: newTool("current_time", "Current time",
				"Return the current date and time in a time zone (default UTC), with the weekday and Unix time.",
				currentTimeParams, readingOutput),
			Handler: toolHandler(c.currentTime, names(currentTimeParams)...),
		},
		{
			Tool: newTool("convert_time", "Convert time",
				"Convert a time from one time zone to another, accounting for daylight saving time. Wall-clock times that do not exist in from_timezone (skipped by a daylight-saving change) are an error.",
				convertTimeParams, conversionOutput),
			Handler: toolHandler(c.convertTime, names(convertTimeParams)...),
		},
		{
			Tool: newTool("date_difference", "Date difference",
				"Return the signed difference from start to end in days, weeks and hours, and as calendar years, months and days (\"1y 2m 3d\", leap years included; a month after January 31 is the last day of February).",
				dateDifferenceParams, differenceOutput),
			Handler: toolHandler(dateDifference, names(dateDifferenceParams)...),
		},
	}
}

type clock struct {
	now func() time.Time
}

func (c clock) currentTime(a args) (*mcp.CallToolResult, error) {
	name, loc, err := a.zone("timezone", false)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = "UTC"
	}
	r := newReading(c.now().In(loc).Truncate(time.Second), name)
	return mcp.NewToolResultStructured(r, r.String()), nil
}

func (c clock) convertTime(a args) (*mcp.CallToolResult, error) {
	text, err := a.str("time", true, "")
	if err != nil {
		return nil, err
	}
	fromName, from, err := a.zone("from_timezone", false)
	if err != nil {
		return nil, err
	}
	toName, to, err := a.zone("to_timezone", true)
	if err != nil {
		return nil, err
	}
	t, hasOffset, err := parseTime(text, from, c.now)
	if err != nil {
		return nil, err
	}
	var source reading
	switch {
	case fromName != "":
		source = newReading(t.In(from), fromName)
	case hasOffset && t.Format("Z07:00") != "Z":
		source = newReading(t, t.Format("-07:00"))
	default:
		source = newReading(t, "UTC")
	}
	res := conversion{reading: newReading(t.In(to), toName), Source: source}
	return mcp.NewToolResultStructured(res, source.String()+" is "+res.reading.String()), nil
}

// zone reads the time zone parameter param and loads it. An absent optional
// zone has the name "" and is UTC.
func (a args) zone(param string, required bool) (string, *time.Location, error) {
	name, err := a.str(param, required, "")
	if err != nil {
		return "", nil, err
	}
	name = strings.TrimSpace(name)
	switch name {
	case "":
		return "", time.UTC, nil
	case "Local": // the host's zone, which the caller cannot know
		return "", nil, fmt.Errorf("parameter %q: %q is not a time zone name; use %s", param, name, zoneHint)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return "", nil, fmt.Errorf("parameter %q: unknown time zone %q; use %s", param, name, zoneHint)
	}
	return name, loc, nil
}

// Wall-clock layouts convert_time accepts besides RFC 3339.
var (
	dateTimeLayouts = []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"}
	timeLayouts     = []string{"15:04", "15:04:05"}
)

// parseTime parses text as RFC 3339 (hasOffset true) or as a wall-clock time
// in loc; a bare time of day means today in loc.
func parseTime(text string, loc *time.Location, now func() time.Time) (t time.Time, hasOffset bool, err error) {
	text = strings.TrimSpace(text)
	if t, err := time.Parse(time.RFC3339, text); err == nil {
		return t, true, nil
	}
	for _, layout := range dateTimeLayouts {
		if w, err := time.Parse(layout, text); err == nil {
			t, err := inZone(w, loc, text)
			return t, false, err
		}
	}
	for _, layout := range timeLayouts {
		if w, err := time.Parse(layout, text); err == nil {
			y, m, d := now().In(loc).Date()
			w = time.Date(y, m, d, w.Hour(), w.Minute(), w.Second(), 0, time.UTC)
			t, err := inZone(w, loc, text)
			return t, false, err
		}
	}
	return time.Time{}, false, fmt.Errorf(`parameter "time": cannot parse %q; use RFC 3339 ("2026-11-22T05:00:00+01:00"), "2006-01-02 15:04" or "15:04"`, text)
}

// inZone returns the moment at which the wall clock in loc shows w's date
// and time, failing if a daylight-saving change skips that wall-clock time.
func inZone(w time.Time, loc *time.Location, text string) (time.Time, error) {
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	if t.Year() != w.Year() || t.YearDay() != w.YearDay() || t.Hour() != w.Hour() || t.Minute() != w.Minute() {
		return time.Time{}, fmt.Errorf(`parameter "time": %q does not exist in %s (skipped by a daylight-saving change)`, text, loc)
	}
	return t, nil
}

func dateDifference(a args) (*mcp.CallToolResult, error) {
	startText, err := a.str("start", true, "")
	if err != nil {
		return nil, err
	}
	endText, err := a.str("end", true, "")
	if err != nil {
		return nil, err
	}
	unit, err := a.str("unit", false, "days")
	if err != nil {
		return nil, err
	}
	if unit != "days" && unit != "weeks" && unit != "hours" {
		return nil, fmt.Errorf(`parameter "unit": %q is not one of "days", "weeks", "hours"`, unit)
	}
	start, err := parseDate("start", startText)
	if err != nil {
		return nil, err
	}
	end, err := parseDate("end", endText)
	if err != nil {
		return nil, err
	}
	// Subtract Unix seconds rather than use time.Sub, whose Duration saturates
	// after 292 years.
	hours := float64(end.Unix()-start.Unix())/3600 + float64(end.Nanosecond()-start.Nanosecond())/3.6e12
	hours += 0 // -0 → 0
	res := difference{
		Hours:           hours,
		Days:            hours / 24,
		Weeks:           hours / 24 / 7,
		YearsMonthsDays: calendarDifference(start, end),
	}
	value := map[string]float64{"days": res.Days, "weeks": res.Weeks, "hours": res.Hours}[unit]
	if math.Abs(value) == 1 {
		unit = unit[:len(unit)-1]
	}
	text := fmt.Sprintf("%s %s (%s)", formatNumber(value), unit, res.YearsMonthsDays)
	return mcp.NewToolResultStructured(res, text), nil
}

// parseDate parses a "YYYY-MM-DD" date (midnight UTC) or an RFC 3339 time.
func parseDate(param, text string) (time.Time, error) {
	text = strings.TrimSpace(text)
	if t, err := time.Parse(time.DateOnly, text); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, text); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf(`parameter %q: cannot parse %q; use a date "YYYY-MM-DD" or RFC 3339 such as "2026-11-22T05:00:00+01:00"`, param, text)
}

// calendarDifference returns the difference from start to end in whole
// calendar years, months and days, as "1y 2m 3d", reading both on start's
// wall clock. Months are counted first, a month after the 31st ending on the
// last day of a shorter month, then the remaining days; a final day is only
// counted once its time of day is reached. When end is before start the
// result is that of end to start, prefixed with "-".
func calendarDifference(start, end time.Time) string {
	sign := ""
	if end.Before(start) {
		start, end, sign = end, start, "-"
	}
	end = end.In(start.Location())
	sDate, eDate := civilDate(start), civilDate(end)
	if clockOf(end) < clockOf(start) {
		eDate = eDate.AddDate(0, 0, -1)
	}
	months := (eDate.Year()*12 + int(eDate.Month())) - (sDate.Year()*12 + int(sDate.Month()))
	if months > 0 && eDate.Day() < sDate.Day() {
		months--
	}
	anchor := addMonthsClamped(sDate, months)
	days := int(eDate.Sub(anchor).Hours() / 24)
	if months == 0 && days == 0 {
		sign = ""
	}
	return fmt.Sprintf("%s%dy %dm %dd", sign, months/12, months%12, days)
}

// civilDate is t's calendar date, as midnight UTC.
func civilDate(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// clockOf is t's wall-clock time of day.
func clockOf(t time.Time) time.Duration {
	h, m, s := t.Clock()
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(t.Nanosecond())
}

// addMonthsClamped adds n months to the date d (midnight UTC), moving a day
// that the target month lacks to its last day: January 31 plus one month is
// February 28 or 29.
func addMonthsClamped(d time.Time, n int) time.Time {
	total := d.Year()*12 + int(d.Month()) - 1 + n
	y, m := total/12, time.Month(total%12+1)
	day := min(d.Day(), time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day())
	return time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
}
