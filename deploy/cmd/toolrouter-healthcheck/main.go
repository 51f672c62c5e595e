// Command toolrouter-healthcheck asks a toolrouter on this machine whether it is alive: it exits
// 0 when GET /healthz answers 200 within 2 seconds, 1 otherwise. It is the container image's
// HEALTHCHECK, since the image has no shell and no curl.
//
//	toolrouter-healthcheck [URL]
//
// Without URL it asks http://127.0.0.1:PORT/healthz, PORT being that of TOOLROUTER_LISTEN (the
// image sets ":8090"), or 8090.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	url := defaultURL(os.Getenv("TOOLROUTER_LISTEN"))
	if len(os.Args) > 1 {
		url = os.Args[1]
	}
	if err := check(url); err != nil {
		fmt.Fprintln(os.Stderr, "toolrouter-healthcheck:", err)
		os.Exit(1)
	}
}

// defaultURL is /healthz on the address toolrouter listens on: loopback when it listens on every
// interface.
func defaultURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "" {
		return "http://127.0.0.1:8090/healthz"
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz"
}

// check GETs url and wants 200.
func check(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
