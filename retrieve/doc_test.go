package retrieve_test

import (
	"slices"
	"strings"
	"testing"

	"toolrouter/inventory"
	"toolrouter/inventory/builtin"
	"toolrouter/retrieve"
)

func TestDocsFrom(t *testing.T) {
	shipped := builtin.Examples("calculator")["multiply"]
	snap := &inventory.Snapshot{Version: 4, Servers: []inventory.Server{
		{Name: "down", Purpose: "Offline things", Status: inventory.StateDown, Tools: []inventory.Tool{
			{Server: "down", Name: "t", Qualified: "down.t", Available: true},
		}},
		{Name: "math", Purpose: "Arithmetic", Builtin: "calculator", Status: inventory.StateUp, Tools: []inventory.Tool{
			{Server: "math", Name: "multiply", Qualified: "math.multiply", Description: "Multiply.", Available: true},
		}},
		{Name: "weather", Purpose: "Weather data", Status: inventory.StateUp, Tools: []inventory.Tool{
			{Server: "weather", Name: "forecast", Qualified: "weather.forecast", Title: "Forecast",
				Description: "Get the forecast.", Available: true, Parameters: []inventory.Param{
					{Name: "city", Type: "string", Description: "City name", Required: true},
					{Name: "days", Type: "integer", Enum: []any{1.0, 3.0, "7"}},
					{Name: "from", Type: "string", Format: "date"},
				}},
			{Server: "weather", Name: "broken", Qualified: "weather.broken", Available: false},
		}},
	}}
	configured := map[string][]string{
		"weather.forecast": {"rain tomorrow?"},
		// The first repeats a shipped example but for case and spacing: it is not added again.
		"math.multiply": {"  " + strings.ToUpper(shipped[0]) + " ", "eleven by eleven"},
	}
	learned := map[string][]string{"weather.forecast": {"will it snow in Oslo"}}
	got := retrieve.DocsFrom(snap, configured, learned)
	want := []retrieve.Doc{
		{
			Qualified: "math.multiply", Server: "math", Name: "multiply", Purpose: "Arithmetic", Description: "Multiply.",
			Examples: append(slices.Clone(shipped), "eleven by eleven"),
		},
		{
			Qualified: "weather.forecast", Server: "weather", Name: "forecast", Purpose: "Weather data",
			Description: "Forecast. Get the forecast.",
			Params: []retrieve.Param{
				{Name: "city", Description: "City name", Type: "string"},
				{Name: "days", Enum: []string{"1", "3", "7"}, Type: "integer"},
				{Name: "from", Type: "string", Format: "date"},
			},
			Examples: []string{"rain tomorrow?"},
			Learned:  []string{"will it snow in Oslo"},
		},
	}
	if !slices.EqualFunc(got, want, func(a, b retrieve.Doc) bool {
		return a.Qualified == b.Qualified && a.Server == b.Server && a.Name == b.Name && a.Purpose == b.Purpose &&
			a.Description == b.Description && slices.Equal(a.Examples, b.Examples) && slices.Equal(a.Learned, b.Learned) &&
			slices.EqualFunc(a.Params, b.Params, func(p, q retrieve.Param) bool {
				return p.Name == q.Name && p.Description == q.Description && slices.Equal(p.Enum, q.Enum) &&
					p.Type == q.Type && p.Format == q.Format
			})
	}) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
