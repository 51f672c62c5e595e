// Package testhttp holds the HTTP client side of tests that drive a real listener: one request,
// its status, headers and body.
package testhttp

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Send makes one request (a JSON body when body is not "", with headers) and returns the status,
// the headers and the body; it fails the test when the request cannot be made or read.
func Send(t testing.TB, method, url, body string, headers map[string]string) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}
