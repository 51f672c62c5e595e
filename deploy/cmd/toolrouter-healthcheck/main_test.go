package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestDefaultURL(t *testing.T) {
	for _, tc := range []struct{ listen, want string }{
		{":8090", "http://127.0.0.1:8090/healthz"},
		{"0.0.0.0:9000", "http://127.0.0.1:9000/healthz"},
		{"[::]:8090", "http://[::1]:8090/healthz"},
		{"10.1.2.3:8090", "http://10.1.2.3:8090/healthz"},
		{"", "http://127.0.0.1:8090/healthz"},
		{"not an address", "http://127.0.0.1:8090/healthz"},
	} {
		t.Run(tc.listen, func(t *testing.T) {
			if got := defaultURL(tc.listen); got != tc.want {
				t.Errorf("defaultURL(%q) = %q, want %q", tc.listen, got, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		wantErr bool
	}{
		{"alive", http.StatusOK, false},
		{"shutting down", http.StatusServiceUnavailable, true},
		{"not toolrouter", http.StatusNotFound, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/healthz" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			err := check(srv.URL + "/healthz")
			if (err != nil) != tc.wantErr {
				t.Errorf("check with %d: got error %v, want error %v", tc.status, err, tc.wantErr)
			}
		})
	}
	t.Run("nothing listening", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL + "/healthz"
		srv.Close()
		if err := check(url); err == nil {
			t.Errorf("check(%s) with the server closed: got nil, want an error", url)
		}
	})
}
