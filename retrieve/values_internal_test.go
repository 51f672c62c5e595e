package retrieve

import (
	"slices"
	"strings"
	"testing"
)

// TestQueryValues checks which kinds of values and units a question is found to hold.
func TestQueryValues(t *testing.T) {
	tests := []struct {
		query string
		want  []string // kinds' keys, and units as "u:" + unit
	}{
		{"fetch https://example.com/a?b=c", []string{kindURL}},
		{"what's on www.example.org today", []string{kindURL, kindDate}},
		{"summarise example.com", []string{kindURL}},
		{"mail bob.smith@example.co.uk the notes", []string{kindEmail}},
		{"open notes.txt", []string{kindFile}},
		{"merge the csv files", []string{kindFile}},
		{"weather from May 1 to May 5", []string{kindDate, kindDateRange}},
		{"sales between 2024-01-01 and 2024-03-31", []string{kindDate, kindDateRange}},
		{"meet at 3pm", []string{kindTime}},
		{"meet at 10:30", []string{kindTime}},
		{"who was president in 1940", []string{kindYear}},
		{"the top 5 songs", []string{kindCount}},
		{"20000 Japanese Yen in United States Dollar", []string{kindMoney}},
		{"is $1,200 too much", []string{kindMoney}},
		{"15% of the bill", []string{kindPercent}},
		{"the place at 40.7128, -74.0060", []string{kindCoord}},
		{"it is 30°C outside", []string{kindUnit, "u:c"}},
		{"temperature in Fahrenheit", []string{kindUnit, "u:f"}},
		{"a height of 180cm", []string{kindUnit, "u:cm"}},
		{"run 5 miles", []string{kindUnit, "u:mi"}},
		{"in metric please", []string{kindUnit}},
		// Not values: a single letter not after a number, a version, a plain count of things.
		{"plan c for the team", nil},
		{"upgrade to version 2.0", nil},
		{"roll 3 dice", nil},
		{"a pizza of 12.5 inches", []string{kindUnit, "u:inch"}}, // a decimal is no year
		{"quiero ver mi casa", nil},                              // "mi" alone is no mile
	}
	for _, tc := range tests {
		var got []string
		queryValues(tc.query, lexTokens(tc.query), func(k string) {
			if strings.HasPrefix(k, unitKey) {
				k = "u:" + strings.TrimPrefix(k, unitKey)
			}
			if !slices.Contains(got, k) {
				got = append(got, k)
			}
		})
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("%q: got %q, want %q", tc.query, got, want)
		}
	}
}

// TestParamValues checks which kinds of values and units a tool's parameters are found to take,
// from real-looking schemas: formats, names, allowed values, descriptions.
func TestParamValues(t *testing.T) {
	tests := []struct {
		name   string
		params []Param
		want   []string
	}{
		{"format uri", []Param{{Name: "target", Type: "string", Format: "uri"}}, []string{kindURL}},
		{"named url", []Param{{Name: "pageUrl", Type: "string"}}, []string{kindURL}},
		{"format email", []Param{{Name: "to", Type: "string", Format: "email"}}, []string{kindEmail}},
		{"file path", []Param{{Name: "file_path", Type: "string"}}, []string{kindFile}},
		{"a date by format", []Param{{Name: "day", Type: "string", Format: "date"}}, []string{kindDate}},
		{"a date by its description", []Param{{Name: "when", Type: "string", Description: "In YYYY-MM-DD form."}}, []string{kindDate}},
		{"a range of dates", []Param{{Name: "start_date", Type: "string"}, {Name: "end_date", Type: "string"}}, []string{kindDate, kindDateRange}},
		{"a start and end that are not dates", []Param{{Name: "start", Type: "integer"}, {Name: "end", Type: "integer"}}, nil},
		{"a time as text", []Param{{Name: "time", Type: "string"}}, []string{kindTime}},
		{"a time in seconds is a number", []Param{{Name: "time", Type: "integer", Description: "Duration."}}, nil},
		{"a year", []Param{{Name: "birth_year", Type: "integer"}}, []string{kindYear}},
		{"a unit to choose", []Param{{Name: "unit", Type: "string", Enum: []string{"celsius", "fahrenheit"}}}, []string{kindUnit, "u:c", "u:f"}},
		{"a unit system", []Param{{Name: "system", Type: "string", Description: "'metric' or 'imperial'."}}, []string{kindUnit}},
		{"a length in centimetres", []Param{{Name: "height", Type: "number", Description: "Height in centimeters."}}, []string{"u:cm"}},
		{"a weight named in kg", []Param{{Name: "weight_kg", Type: "number"}}, []string{"u:kg"}},
		{"a currency", []Param{{Name: "target_currency", Type: "string"}}, []string{kindMoney}},
		{"currency codes", []Param{{Name: "to", Type: "string", Enum: []string{"USD", "EUR"}}}, []string{kindMoney}},
		{"a limit", []Param{{Name: "limit", Type: "integer"}}, []string{kindCount}},
		{"max results", []Param{{Name: "max_results", Type: "integer"}}, []string{kindCount}},
		{"coordinates", []Param{{Name: "lat", Type: "number"}, {Name: "lon", Type: "number"}}, []string{kindCoord}},
		{"a percentage", []Param{{Name: "rate", Type: "number", Description: "Annual rate in percent."}}, []string{kindPercent}},
		{"scales by their letters", []Param{{Name: "scale", Type: "string", Enum: []string{"C", "F", "K"}}}, []string{kindUnit, "u:c", "u:f"}},
		{"sizes are no units", []Param{{Name: "size", Type: "string", Enum: []string{"S", "M", "L", "XL"}}}, nil},
		{"grades are no units", []Param{{Name: "grade", Type: "string", Enum: []string{"A", "B", "C", "D", "E", "F"}}}, nil},
		{"a dated start beside a count is no range", []Param{{Name: "start_date", Type: "string"}, {Name: "max_results", Type: "integer"}}, []string{kindDate, kindCount}},
		{"operands take nothing", []Param{{Name: "num1", Type: "integer"}, {Name: "num2", Type: "integer"}}, nil},
		{"a plain query takes nothing", []Param{{Name: "query", Type: "string", Description: "What to look up"}}, nil},
	}
	for _, tc := range tests {
		var got []string
		n := 0
		paramValues(tc.params, func(k string) {
			n++
			if strings.HasPrefix(k, unitKey) {
				k = "u:" + strings.TrimPrefix(k, unitKey)
			}
			got = append(got, k)
		})
		slices.Sort(got)
		if want := slices.Sorted(slices.Values(tc.want)); !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, want)
		}
		if n != len(slices.Compact(got)) {
			t.Errorf("%s: a key came more than once: %q", tc.name, got)
		}
	}
}
