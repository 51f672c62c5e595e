package mcpserver

import mcpgo "github.com/mark3labs/mcp-go/server"

// MCPServer is the mcp-go server, for in-process clients.
func (s *Server) MCPServer() *mcpgo.MCPServer { return s.mcp }
