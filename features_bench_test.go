package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"toolrouter/access"
	"toolrouter/auth"
	"toolrouter/config"
	"toolrouter/internal/fakeollama"
	"toolrouter/internal/services"
	"toolrouter/inventory"
	"toolrouter/observe"
	"toolrouter/router"
)

// BenchmarkFeatures measures what rate limits, usage records and metrics add on a request's path,
// wired as serve wires them (observers, rateLimiter): the admission before the handler, and the
// report handed to every observer before the response is written. The report is a real one: a
// routed query with a tool call and two model calls. Writing the records happens off the path, in
// batches; its cost shows in the load test's throughput (go run ./bench load -features).
//
//	go test -run '^$' -bench Features -benchtime 3s .
func BenchmarkFeatures(b *testing.B) {
	quiet := slog.New(slog.DiscardHandler)
	model := fakeollama.NewFunc(b, func(req api.ChatRequest) fakeollama.Reply {
		if bytes.Contains(req.Format, []byte(`"use_tool"`)) {
			return fakeollama.Reply{Content: `{"reasoning":"r","use_tool":true,"calls":[{"tool":"calculator.add","task":"add"}],"needs_more":false,"direct":true}`}
		}
		return fakeollama.Reply{Content: `{"a":2,"b":3}`}
	})
	def := config.Default()
	inv := inventory.New(map[string]config.Server{"calculator": def.Servers["calculator"]}, inventory.Options{Logger: quiet})
	inv.Start(context.Background())
	b.Cleanup(inv.Close)
	rt := router.New(model.Client(), inv, inv, router.Settings{Model: "fake", CallTimeout: 10 * time.Second}, quiet)
	id := auth.Anonymous()
	out, err := rt.Route(context.Background(), router.Request{Query: "what is 2 plus 3?", Identity: id})
	if err != nil || len(out.Calls) != 1 {
		b.Fatalf("routing the report's query: %v, %+v", err, out)
	}
	rep := observe.Report{Start: time.Now(), Duration: time.Millisecond, Endpoint: "/v1/route", Method: "POST",
		Status: 200, Identity: id, Authenticated: true, Outcome: out}

	unlimited := access.Limits{RequestsPerMinute: 1 << 40, ToolCallsPerMinute: 1 << 40, TokensPerMinute: 1 << 50,
		TokensPerDay: 1 << 50, Concurrent: 1 << 30}
	var redis, pg *services.Server
	variants := []struct {
		name string
		set  func(c *config.Config) bool // false: skip
	}{
		{"off", func(c *config.Config) bool { c.Usage.Path, c.Metrics.Enabled = "", false; return true }},
		{"metrics", func(c *config.Config) bool { c.Usage.Path = ""; return true }},
		{"embedded", func(c *config.Config) bool {
			c.Limits.Anonymous, c.Usage.Path = unlimited, filepath.Join(b.TempDir(), "usage.db")
			return true
		}},
		{"redis", func(c *config.Config) bool {
			if redis == nil {
				return false
			}
			c.Limits.Anonymous, c.Limits.RedisURL, c.Usage.Path = unlimited, redis.URL, filepath.Join(b.TempDir(), "usage.db")
			return true
		}},
		{"postgres", func(c *config.Config) bool {
			if pg == nil {
				return false
			}
			c.Limits.Anonymous, c.Usage.Path, c.Usage.PostgresURL = unlimited, "", pg.URL
			return true
		}},
	}
	if s, err := services.StartRedis(context.Background()); err == nil {
		redis = s
		b.Cleanup(s.Stop)
	} else if !errors.Is(err, services.ErrMissing) {
		b.Fatal(err)
	}
	if s, err := services.StartPostgres(context.Background()); err == nil {
		pg = s
		b.Cleanup(s.Stop)
	} else if !errors.Is(err, services.ErrMissing) {
		b.Fatal(err)
	}
	for _, v := range variants {
		cfg := config.Default()
		if !v.set(&cfg) {
			b.Logf("%s: not run, its server is not installed", v.name)
			continue
		}
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			usage, err := openUsageStore(ctx, cfg, true)
			if err != nil {
				b.Fatal(err)
			}
			if usage != nil {
				b.Cleanup(func() { _ = usage.Close() }) // after the recorder's Close: cleanups run last first
			}
			watch, err := observers(ctx, cfg, usage, inv, nil, nil, quiet)
			if err != nil {
				b.Fatal(err)
			}
			lim, err := rateLimiter(cfg, watch, quiet)
			if err != nil {
				b.Fatal(err)
			}
			fanout := append(observe.Fanout{lim}, watch.Fanout...)
			b.Cleanup(func() {
				closeAll(append(watch.closers, lim.Close), time.Now().Add(10*time.Second))
			})
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					release, err := lim.Admit(ctx, id)
					if err != nil {
						b.Error(err)
						return
					}
					r := rep
					fanout.Observe(ctx, &r)
					release()
				}
			})
		})
	}
}
