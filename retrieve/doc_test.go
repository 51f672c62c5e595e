package retrieve_test

import (
	"slices"
	"testing"

	"toolrouter/inventory"
	"toolrouter/retrieve"
)

func TestDocsFrom(t *testing.T) {
	snap := &inventory.Snapshot{Version: 4, Servers: []inventory.Server{
		{Name: "down", Purpose: "Offline things", Status: inventory.StateDown, Tools: []inventory.Tool{
			{Server: "down", Name: "t", Qualified: "down.t", Available: true},
		}},
		{Name: "weather", Purpose: "Weather data", Status: inventory.StateUp, Tools: []inventory.Tool{
			{Server: "weather", Name: "forecast", Qualified: "weather.forecast", Title: "Forecast",
				Description: "Get the forecast.", Available: true, Parameters: []inventory.Param{
					{Name: "city", Type: "string", Description: "City name", Required: true},
					{Name: "days", Type: "integer", Enum: []any{1.0, 3.0, "7"}},
				}},
			{Server: "weather", Name: "broken", Qualified: "weather.broken", Available: false},
		}},
	}}
	got := retrieve.DocsFrom(snap, map[string][]string{"weather.forecast": {"rain tomorrow?"}})
	want := []retrieve.Doc{{
		Qualified: "weather.forecast", Server: "weather", Name: "forecast", Purpose: "Weather data",
		Description: "Forecast. Get the forecast.",
		Params: []retrieve.Param{
			{Name: "city", Description: "City name"},
			{Name: "days", Enum: []string{"1", "3", "7"}},
		},
		Examples: []string{"rain tomorrow?"},
	}}
	if !slices.EqualFunc(got, want, func(a, b retrieve.Doc) bool {
		return a.Qualified == b.Qualified && a.Server == b.Server && a.Name == b.Name && a.Purpose == b.Purpose &&
			a.Description == b.Description && slices.Equal(a.Examples, b.Examples) &&
			slices.EqualFunc(a.Params, b.Params, func(p, q retrieve.Param) bool {
				return p.Name == q.Name && p.Description == q.Description && slices.Equal(p.Enum, q.Enum)
			})
	}) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
