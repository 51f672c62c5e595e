package main

import "testing"

func TestTagOf(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"v1.2.3", "v1.2.3"},
		{"v0.0.0-20261126072803-8303c9cacd9e+dirty", "v0.0.0-20261126072803-8303c9cacd9e-dirty"},
		{"(devel)", "devel"},
		{"", "devel"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			if got := tagOf(tc.version); got != tc.want {
				t.Errorf("tagOf(%q) = %q, want %q", tc.version, got, tc.want)
			}
		})
	}
}
