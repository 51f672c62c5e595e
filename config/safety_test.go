package config

import (
	"strings"
	"testing"
)

// TestSafetyConfig: safety.* and servers.NAME.tools.TOOL.annotations load from the file and the
// environment beside a tool filter, and wrong values are refused with their keys.
func TestSafetyConfig(t *testing.T) {
	const pin = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	clearEnv(t)
	t.Setenv("TOOLROUTER_SERVERS__FS__TOOLS__WRITE_FILE__ANNOTATIONS__IDEMPOTENT_HINT", "true")
	cfg, err := Load(writeFile(t, `{
		"safety": {"pin": "quarantine", "scan": "strip", "pins": {"fs": {"read_file": "`+pin+`"}}},
		"servers": {"fs": {"transport": "stdio", "command": "fs-server",
			"tools": {"deny": ["rm*"], "read_file": {"annotations": {"read_only_hint": true, "destructive_hint": false}},
				"write_file": {"annotations": {"read_only_hint": false}}}}}
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Safety.Pin != PinQuarantine || cfg.Safety.Scan != ScanStrip || cfg.Safety.Pins["fs"]["read_file"] != pin {
		t.Errorf("got safety %+v, want pin quarantine, scan strip and the read_file pin", cfg.Safety)
	}
	f := cfg.Servers["fs"].Tools
	if len(f.Deny) != 1 || f.Permits("rmdir") || !f.Permits("read_file") {
		t.Errorf("got filter %+v, want deny [rm*] kept beside the tools' settings", f)
	}
	read, write := f.Tools["read_file"].Annotations, f.Tools["write_file"].Annotations
	switch {
	case read.ReadOnlyHint == nil || !*read.ReadOnlyHint || read.DestructiveHint == nil || *read.DestructiveHint:
		t.Errorf("got read_file annotations %+v, want read-only, not destructive", read)
	case write.ReadOnlyHint == nil || *write.ReadOnlyHint || write.IdempotentHint == nil || !*write.IdempotentHint:
		t.Errorf("got write_file annotations %+v, want read_only false from the file, idempotent true from the environment", write)
	case read.OpenWorldHint != nil:
		t.Errorf("got open_world_hint %v for read_file, want it unset", *read.OpenWorldHint)
	}
	if d := Default().Safety; d.Pin != PinWarn || d.Scan != ScanWarn {
		t.Errorf("got default safety %+v, want pin and scan warn", d)
	}

	tests := []struct {
		name, file string
		want       []string
	}{
		{"bad modes", `{"safety": {"pin": "block", "scan": "delete"}}`, []string{"safety.pin", "safety.scan"}},
		{"bad pin and unknown server", `{"safety": {"pins": {"clock": {"now": "ABC"}, "nope": {"t": "` + pin + `"}}}}`,
			[]string{`safety.pins.clock.now`, `safety.pins.nope`}},
		{"unknown annotation", `{"servers": {"clock": {"tools": {"now": {"annotations": {"readOnlyHint": true}}}}}}`,
			[]string{"servers.clock.tools.now.annotations.readOnlyHint"}},
		{"unknown tool setting", `{"servers": {"clock": {"tools": {"now": {"hints": {}}}}}}`,
			[]string{"servers.clock.tools.now.hints"}},
		{"held shares not positive", `{"safety": {"max_held_per_identity": 0, "max_held_bytes_per_identity": -1, "max_held_argument_bytes": 0}}`,
			[]string{"safety.max_held_per_identity", "safety.max_held_bytes_per_identity", "safety.max_held_argument_bytes"}},
		{"bad approvers", `{"safety": {"approvers": ["acme/ops", "has space"]}, "orgs": {"acme": {"teams": {"ops": {"approvers": ["acme/["]}}}}}`,
			[]string{"safety.approvers[1]", "orgs.acme.teams.ops.approvers[0]"}},
		{"an org's held share negative", `{"orgs": {"acme": {"max_held_per_identity": -5, "teams": {"ops": {"max_held_bytes_per_identity": -1}}}}}`,
			[]string{"orgs.acme.max_held_per_identity", "orgs.acme.teams.ops.max_held_bytes_per_identity"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tc.file), nil)
			if err == nil {
				t.Fatalf("got no error, want one naming %v", tc.want)
			}
			for _, k := range tc.want {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("got %v, want it to name %s", err, k)
				}
			}
		})
	}
}

// TestHeldShareConfig: safety's share of the held calls and an org's and a team's own load from
// the file, the keys safety leaves keeping their defaults.
func TestHeldShareConfig(t *testing.T) {
	clearEnv(t)
	shares, err := Load(writeFile(t, `{"safety": {"max_held_per_identity": 7},
		"orgs": {"acme": {"max_held_per_identity": 500, "teams": {"ops": {"max_held_bytes_per_identity": 1024}}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := shares.Safety.HeldShare(); got.Calls != 7 || got.Bytes != 4<<20 || shares.Safety.MaxHeldArgumentBytes != 64<<10 {
		t.Errorf("got safety %+v, want 7 calls, the default 4 MiB and 64 KiB of arguments", shares.Safety)
	}
	if org, team := shares.Orgs["acme"], shares.Orgs["acme"].Teams["ops"]; org.HeldShare.Calls != 500 || team.HeldShare.Bytes != 1024 {
		t.Errorf("got acme's share %+v and ops' %+v, want 500 calls and 1024 bytes", org.HeldShare, team.HeldShare)
	}
}

// TestApproversConfig: safety's approvers and an org's load from the file.
func TestApproversConfig(t *testing.T) {
	clearEnv(t)
	c, err := Load(writeFile(t, `{"safety": {"approvers": ["root@example"]},
		"orgs": {"acme": {"approvers": ["acme/ops", "acme/*/lead"], "teams": {"ops": {}}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, org := strings.Join(c.Safety.Approvers, ","), strings.Join(c.Orgs["acme"].Approvers.Approvers, ","); got != "root@example" || org != "acme/ops,acme/*/lead" {
		t.Errorf("got safety's approvers %q and acme's %q", got, org)
	}
}

// TestApprovalWaitWithinDeadline: a wait, at any level, as long as the request's deadline would
// leave an approved call no time to run: the start is refused naming the key.
func TestApprovalWaitWithinDeadline(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		name, file, want string
	}{
		{name: "shorter", file: `{"router": {"deadline": "60s"}, "safety": {"approval_wait": "30s"}}`},
		{name: "top level", file: `{"router": {"deadline": "60s"}, "safety": {"approval_wait": "60s"}}`, want: "safety.approval_wait"},
		{name: "a team", file: `{"router": {"deadline": "60s"}, "orgs": {"acme": {"teams": {"ops": {"approval_wait": "2m"}}}}}`,
			want: "orgs.acme.teams.ops.approval_wait"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tc.file), nil)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want it loaded", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a problem at %s", err, tc.want)
			}
		})
	}
}
