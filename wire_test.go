package main

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"toolrouter/access"
	"toolrouter/approval"
	"toolrouter/auth"
	"toolrouter/config"
	"toolrouter/inventory"
	"toolrouter/observe"
	records "toolrouter/usage"
)

func TestChatModels(t *testing.T) {
	cfg := config.Default()
	cfg.Providers["remote"] = config.Provider{Type: config.ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1"}
	cfg.Council.Members = []config.Member{{Name: "a", Provider: "ollama", Model: "llama3.1:8b"}, {Name: "b", Provider: "remote", Model: "gpt-4o-mini"}}
	cfg.Council.Chairman = config.Member{Name: "chair", Provider: "remote", Model: "gpt-4o"}
	var got []string
	for _, m := range chatModels(cfg) {
		got = append(got, m.ID+"@"+m.OwnedBy)
	}
	want := "qwen2.5:7b@ollama,llama3.1:8b@ollama,remote/gpt-4o-mini@remote,remote/gpt-4o@remote"
	if strings.Join(got, ",") != want {
		t.Errorf("got %s, want %s", strings.Join(got, ","), want)
	}
}

// TestUsageDatabaseOpenedOnce: with usage records on, the usage database is opened once, when a
// part keeps something in it: the safety checks keep their pins and held calls in that store, and
// serving's recorder writes its records there too; the recorder's Close writes what is queued and
// leaves the store open for the held calls until its opener closes it. With usage records off,
// nothing is opened and the safety checks keep their state in memory.
func TestUsageDatabaseOpenedOnce(t *testing.T) {
	tests := []struct {
		name               string
		usageOff           bool // usage.path and usage.postgres_url empty
		safetyKeepsNothing bool // safety.pin and safety.scan off, safety.auto_execute all
		serving            bool // serve or mcp
		// wantOpened: the usage database is opened; wantForSafe: the safety checks keep their
		// state in it.
		wantOpened, wantForSafe bool
	}{
		{name: "serving, the safety checks keep pins and held calls", serving: true, wantOpened: true, wantForSafe: true},
		{name: "a command, the safety checks keep pins and held calls", wantOpened: true, wantForSafe: true},
		{name: "serving, the safety checks keep nothing", serving: true, safetyKeepsNothing: true, wantOpened: true},
		{name: "a command, the safety checks keep nothing", safetyKeepsNothing: true},
		{name: "usage records off", serving: true, usageOff: true},
	}
	quiet := slog.New(slog.DiscardHandler)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			cfg := config.Default()
			cfg.Metrics.Enabled = false
			cfg.Usage.Path = filepath.Join(t.TempDir(), "usage.db")
			if tc.usageOff {
				cfg.Usage.Path = ""
			}
			if tc.safetyKeepsNothing {
				cfg.Safety.Checks = inventory.Checks{Pin: config.PinOff, Scan: config.ScanOff}
				cfg.Safety.AutoExecute = access.All
			}
			usage, err := openUsageStore(ctx, cfg, tc.serving)
			if err != nil {
				t.Fatal(err)
			}
			if usage != nil {
				defer usage.Close()
			}
			safe := safetyStore(cfg, usage, quiet)
			if got := usage != nil; got != tc.wantOpened {
				t.Errorf("got the usage database opened %v, want %v", got, tc.wantOpened)
			}
			if got := safe != nil; got != tc.wantForSafe || safe != nil && safe != usage {
				t.Errorf("got the safety checks' store %p, want the usage database (%p) %v", safe, usage, tc.wantForSafe)
			}
			if !tc.serving {
				return
			}
			watch, err := observers(ctx, cfg, usage, nil, nil, nil, quiet)
			if err != nil {
				t.Fatal(err)
			}
			if got := watch.usage != nil; got != tc.wantOpened {
				t.Fatalf("got a recorder %v, want %v", got, tc.wantOpened)
			}
			watch.Observe(ctx, &observe.Report{Start: time.Now(), Endpoint: "/v1/route", Status: 200, Identity: auth.Anonymous()})
			closeAll(watch.closers, time.Time{})
			if usage == nil {
				return
			}
			// The recorder's Close wrote the record and left the store open.
			s, err := usage.Query(ctx, records.Query{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour), GroupBy: records.ByOrg})
			if err != nil || len(s.Rows) != 1 || s.Rows[0].Requests != 1 {
				t.Errorf("got %+v (%v) after the recorder's Close, want one request", s, err)
			}
			if _, _, err := approvals(cfg, usage).Hold(ctx, approval.Call{Identity: "default", Server: "fs", Tool: "delete"}, approval.DefaultShare); err != nil {
				t.Errorf("holding a call after the recorder's Close: got %v, want the store open", err)
			}
		})
	}
}

// TestConfiguredSecrets: the Redactor serving builds masks the servers' credentials (headers named
// like one, and those servers.NAME.secrets names) and leaves their other header values alone.
func TestConfiguredSecrets(t *testing.T) {
	cfg := config.Default()
	cfg.Servers["web"] = config.Server{Transport: config.TransportStreamableHTTP, URL: "https://web.example/mcp",
		Headers: map[string]string{"X-Env": "prod", "Accept": "application/json", "X-Api-Key": "key-0123456", "X-Tenant": "tenant-42"},
		Secrets: []string{"X-Tenant"}}
	red := secrets(cfg)
	in := "production sends application/json with key-0123456 for tenant-42"
	if got, want := red.String(in), "production sends application/json with REDACTED for REDACTED"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// An approval webhook's URL (chat services keep its secret in the path) and signing secret.
	t.Setenv("TEST_WIRE_HOOK_SECRET", "whsec-wire-0123456789")
	cfg.Safety.ApprovalWebhook = access.Webhook{URL: "https://hooks.example/services/T0/B0/xyz987", SecretEnv: "TEST_WIRE_HOOK_SECRET"}
	red = secrets(cfg)
	in = `posting to "https://hooks.example/services/T0/B0/xyz987": signed with whsec-wire-0123456789`
	if got, want := red.String(in), `posting to "REDACTED": signed with REDACTED`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
