//go:build !sdk18

package main

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionOptions: this SDK cannot pin a version; it asks for its newest, 2025-11-25.
func sessionOptions(protocol string) (*mcp.ClientSessionOptions, error) {
	if protocol != "" && protocol != "2025-11-25" {
		return nil, fmt.Errorf("-protocol %s: this SDK asks for 2025-11-25 only", protocol)
	}
	return nil, nil
}
