//go:build sdk18

package main

import "github.com/modelcontextprotocol/go-sdk/mcp"

// sessionOptions pins protocol, when given.
func sessionOptions(protocol string) (*mcp.ClientSessionOptions, error) {
	return &mcp.ClientSessionOptions{ProtocolVersion: protocol}, nil
}
