package access

import (
	"errors"
	"strings"
	"testing"
	"time"

	"toolrouter/config/duration"
)

func TestApprovalWaitAndWebhookPerLevel(t *testing.T) {
	orgHook := Webhook{URL: "https://hooks.acme.example/approvals", SecretEnv: "ACME_HOOK"}
	top := Webhook{URL: "https://hooks.example/all", SecretEnv: "HOOK"}
	h, err := New(Orgs{
		"acme": {ApprovalWait: ApprovalWait{Wait: duration.Duration(30 * time.Second)}, ApprovalWebhook: orgHook,
			Teams: map[string]Team{
				"ops":   {ApprovalWait: ApprovalWait{Wait: duration.Duration(2 * time.Minute)}},
				"kiosk": {},
			}},
		"beta": {},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id       Identity
		wantWait time.Duration
		wantHook Webhook
	}{
		{Identity{Org: "acme"}, 30 * time.Second, orgHook},
		{Identity{Org: "acme", Team: "ops"}, 2 * time.Minute, orgHook},
		{Identity{Org: "acme", Team: "kiosk"}, 30 * time.Second, orgHook},
		{Identity{Org: "beta"}, 5 * time.Second, top},
		{Identity{Org: "nobody"}, 5 * time.Second, top},
	}
	for _, tc := range tests {
		t.Run(tc.id.String(), func(t *testing.T) {
			if got := h.ApprovalWait(tc.id, 5*time.Second); got != tc.wantWait {
				t.Errorf("wait %s, want %s", got, tc.wantWait)
			}
			if got := h.Webhook(tc.id, top); got != tc.wantHook {
				t.Errorf("webhook %+v, want %+v", got, tc.wantHook)
			}
		})
	}
}

func TestWebhookProblems(t *testing.T) {
	tests := []struct {
		name string
		hook Webhook
		want []string // keys with a problem
	}{
		{name: "none", hook: Webhook{}},
		{name: "good", hook: Webhook{URL: "https://h.example/x", SecretEnv: "S", ConsoleURL: "https://tr.example"}},
		{name: "no secret", hook: Webhook{URL: "https://h.example/x"}, want: []string{"k.secret_env"}},
		{name: "not http", hook: Webhook{URL: "ftp://h.example/x", SecretEnv: "S"}, want: []string{"k.url"}},
		{name: "relative", hook: Webhook{URL: "/x", SecretEnv: "S"}, want: []string{"k.url"}},
		{name: "bad console", hook: Webhook{URL: "https://h.example", SecretEnv: "S", ConsoleURL: "toolrouter"}, want: []string{"k.console_url"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range tc.hook.Problems("k") {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("problem %v is not a *FieldError", err)
				}
				got = append(got, fe.Key)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("problems at %v, want %v", got, tc.want)
			}
		})
	}
	if err := (Orgs{"acme": {ApprovalWait: ApprovalWait{Wait: -1}}}).Validate(); err == nil || !strings.Contains(err.Error(), "orgs.acme.approval_wait") {
		t.Errorf("a negative wait: %v, want a problem at orgs.acme.approval_wait", err)
	}
}
