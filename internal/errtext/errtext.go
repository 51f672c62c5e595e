// Package errtext makes error texts fit where one line is expected: a JSON error message, a
// council member's skip reason. It exists so that server and council agree on the form.
package errtext

import "strings"

// lineBreaks are what OneLine replaces.
var lineBreaks = strings.NewReplacer("\r\n", "; ", "\n", "; ", "\r", "; ")

// OneLine returns s with its lines joined by "; " (errors.Join, for one, separates its errors'
// texts with newlines).
func OneLine(s string) string { return lineBreaks.Replace(strings.TrimSpace(s)) }
