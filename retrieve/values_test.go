package retrieve_test

import (
	"encoding/json"
	"testing"

	"toolrouter/inventory"
	"toolrouter/retrieve"
	"toolrouter/schema"
)

// docsFromSchemas returns the documents of tools given by name, description and input schema, as
// the sidecar builds them from its inventory (inventory.ClientTool reads the schema as a server's
// tool's is read; retrieve.DocsFrom makes the documents).
func docsFromSchemas(t *testing.T, tools [][3]string) []retrieve.Doc {
	t.Helper()
	byServer := map[string]*inventory.Server{}
	snap := &inventory.Snapshot{}
	for _, tl := range tools {
		server, name, _ := cut(tl[0])
		tool, err := inventory.ClientTool(name, tl[1], json.RawMessage(tl[2]), schema.Bounds{MaxBytes: 1 << 16, MaxDepth: 32})
		if err != nil {
			t.Fatalf("%s: %v", tl[0], err)
		}
		tool.Server, tool.Qualified = server, tl[0]
		s := byServer[server]
		if s == nil {
			snap.Servers = append(snap.Servers, inventory.Server{Name: server, Status: inventory.StateUp})
			s = &snap.Servers[len(snap.Servers)-1]
			byServer[server] = s
		}
		s.Tools = append(s.Tools, *tool)
	}
	return retrieve.DocsFrom(snap, nil, nil)
}

func cut(q string) (server, name string, ok bool) {
	for i := range q {
		if q[i] == '.' {
			return q[:i], q[i+1:], true
		}
	}
	return "", q, false
}

// TestValuesPreferToolsThatTakeThem: among tools that differ only in their parameters, a question
// holding a value (a unit, a date range, a URL, an email address, an amount of money, a length in
// centimetres) ranks first the tool whose parameters take it with retrieval.match.values on, and
// not with it off (the tie then goes to the name first in order, chosen to be the other tool).
func TestValuesPreferToolsThatTakeThem(t *testing.T) {
	docs := docsFromSchemas(t, [][3]string{
		{"wx.weather_now", "Get the weather for a city.",
			`{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"]}`},
		{"wx.weather_report", "Get the weather for a city.",
			`{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`},
		{"wx.weather_span", "Get the weather for a city.",
			`{"type":"object","properties":{"city":{"type":"string","description":"City name"},"from":{"type":"string","format":"date"},"to":{"type":"string","format":"date"}},"required":["city"]}`},
		{"web.find", "Look up pages.",
			`{"type":"object","properties":{"query":{"type":"string","description":"What to look up"}},"required":["query"]}`},
		{"web.get_page", "Read one page.",
			`{"type":"object","properties":{"target":{"type":"string","format":"uri"}},"required":["target"]}`},
		{"chat.send_message", "Send a message.",
			`{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"}},"required":["channel","text"]}`},
		{"mail.send_message", "Send a message.",
			`{"type":"object","properties":{"recipient":{"type":"string","format":"email"},"text":{"type":"string"}},"required":["recipient","text"]}`},
		{"measure.convert", "Convert a value.",
			`{"type":"object","properties":{"value":{"type":"number"},"from":{"type":"string"},"to":{"type":"string"}}}`},
		{"money.convert", "Convert a value.",
			`{"type":"object","properties":{"value":{"type":"number"},"from_currency":{"type":"string"},"to_currency":{"type":"string"}}}`},
		{"health.bmi_a", "Body mass index.",
			`{"type":"object","properties":{"weight":{"type":"number","description":"Weight in kilograms"},"height":{"type":"number","description":"Height in feet"}}}`},
		{"health.bmi_b", "Body mass index.",
			`{"type":"object","properties":{"weight":{"type":"number","description":"Weight in kilograms"},"height":{"type":"number","description":"Height in centimeters"}}}`},
	})
	tests := []struct {
		query   string
		on, off string // first hit with values on and off; "" for none
	}{
		{"weather in Boston at 30°F", "wx.weather_report", "wx.weather_now"},
		{"the weather in Boston in centigrade", "wx.weather_report", "wx.weather_now"}, // the unit, however written
		{"the weather in Boston from 2024-05-01 to 2024-05-05", "wx.weather_span", "wx.weather_now"},
		{"the weather in Boston on Saturday and Sunday", "wx.weather_span", "wx.weather_now"},
		{"what does https://example.org/pricing say", "web.get_page", ""},
		{"what is on www.example.org", "web.get_page", ""},
		{"send a message to alice@example.org", "mail.send_message", "chat.send_message"},
		{"convert $100 to euros", "money.convert", "measure.convert"},
		{"body mass index at 80 kg and 180cm", "health.bmi_b", "health.bmi_a"},
	}
	for _, tc := range tests {
		for _, on := range []bool{true, false} {
			idx := retrieve.NewIndexWith(retrieve.Matching{NoValues: !on})
			idx.Sync(1, docs)
			hits := idx.Search(tc.query, 3, nil)
			got := ""
			if len(hits) > 0 && hits[0].Score > 0 {
				got = hits[0].Qualified
			}
			want := tc.off
			if on {
				want = tc.on
			}
			if got != want {
				t.Errorf("%q, values %v: got %q first (%v), want %q", tc.query, on, got, hits, want)
			}
		}
	}
}
