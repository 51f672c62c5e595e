package server

import (
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// TestIncompleteDoorIsRefused: a row that leaves out a property is refused when the app is
// built, naming the property: never mounted as a door that skips its rate limits or speaks the
// wrong dialect.
func TestIncompleteDoorIsRefused(t *testing.T) {
	ok := func(*fiber.Ctx) error { return nil }
	post := []string{fiber.MethodPost}
	tests := []struct {
		name string
		row  door
		want string
	}{
		{"work left out", door{methods: post, path: "/api/x", handler: ok, dialect: dialectOllama, framing: frameNone}, "work is not set"},
		{"dialect left out", door{methods: post, path: "/api/x", handler: ok, work: workDoor, framing: frameNDJSON}, "dialect is not set"},
		{"framing left out", door{methods: post, path: "/api/x", handler: ok, work: workDoor, dialect: dialectOllama}, "framing is not set"},
		{"handler left out", door{methods: post, path: "/api/x", work: workDoor, dialect: dialectOllama, framing: frameNone}, "no handler"},
		{"methods left out", door{path: "/api/x", handler: ok, work: workDoor, dialect: dialectOllama, framing: frameNone}, "no methods"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &handlers{}
			defer func() {
				p := recover()
				err, _ := p.(error)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got panic %v, want one saying %q", p, tc.want)
				}
			}()
			h.mount(fiber.New(), []door{tc.row})
		})
	}
	// And every row of the real table is complete.
	h := &handlers{}
	for _, d := range h.doors() {
		if err := d.check(); err != nil {
			t.Error(err)
		}
	}
}
