package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"toolrouter/auth"
	"toolrouter/metrics"
	"toolrouter/observe"
	"toolrouter/server"
	"toolrouter/usage"
)

// evilKey is a good credential for org evil, which orgs does not define: what a JWT naming an
// org of the caller's choosing amounts to.
const evilKey = "tr_evil-org-key-0123456789abcdef"

// TestRefusalsWriteNoUsage: requests refused with 401 (no or a bad credential) or 403 (a
// credential for an org orgs does not define), and a request that succeeds for such an org,
// write no usage record and are counted in the metrics by status; a configured identity's
// request still writes its record.
func TestRefusalsWriteNoUsage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	s, err := usage.Open(t.Context(), path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close() // this store; s is opened again below
	orgs := authOrgs(t)
	rec := usage.NewRecorder(s, usage.Options{Logger: quiet, FlushInterval: time.Hour, Known: orgs.Has})
	met := metrics.New(metrics.Options{})
	authn, err := auth.New(t.Context(), auth.Config{Keys: []auth.Key{
		{Name: "ops-admin", SHA256: sha(adminKey), Org: "acme", Team: "ops"},
		{Name: "intruder", SHA256: sha(evilKey), Org: "evil"},
	}, Admins: []string{"acme/ops"}}, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	refusing := server.New(server.Deps{Usage: rec, Observer: observe.Fanout{met, rec}, Auth: authn, Access: orgs},
		server.Options{Logger: quiet, AdminReadyz: true})
	open := server.New(server.Deps{Usage: rec, Observer: observe.Fanout{met, rec}, Auth: authn, Access: orgs},
		server.Options{Logger: quiet})

	tests := []struct {
		name  string
		open  bool // served without AdminReadyz: any identity may read usage
		token string
		want  int
	}{
		{name: "no credential", want: http.StatusUnauthorized},
		{name: "a bad credential", token: "tr_not-a-key-0123456789abcdefgh", want: http.StatusUnauthorized},
		{name: "an org orgs does not define", token: evilKey, want: http.StatusForbidden},
		{name: "an org orgs does not define, not refused", open: true, token: evilKey, want: http.StatusOK},
		{name: "a configured admin", token: adminKey, want: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := refusing
			if tc.open {
				app = open
			}
			if got, body := getUsage(t, app, "/v1/usage", tc.token); got != tc.want {
				t.Errorf("got %d, want %d (%s)", got, tc.want, body)
			}
		})
	}
	if err := rec.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	s, err = usage.Open(t.Context(), path, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sum, err := s.Query(t.Context(), usage.Query{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour), GroupBy: usage.ByOrg})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range sum.Rows {
		got = append(got, fmt.Sprintf("%s=%d", r.Key, r.Requests))
	}
	if want := "acme=1"; strings.Join(got, ",") != want {
		t.Errorf("got usage rows %v, want only %s", got, want)
	}

	w := httptest.NewRecorder()
	met.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(w.Body)
	for _, want := range []string{
		`toolrouter_http_requests_total{route="other",status="401"} 2`, // refused before routing,
		`toolrouter_http_requests_total{route="/v1/usage",status="403"} 1`,
		`toolrouter_http_requests_total{route="/v1/usage",status="200"} 2`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
