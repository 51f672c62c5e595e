package builtin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves the named built-in server over stdin and stdout until
// stdin ends (nil error) or ctx is cancelled.
func ServeStdio(ctx context.Context, name string) error {
	return serveStdio(ctx, name, os.Stdin, os.Stdout)
}

func serveStdio(ctx context.Context, name string, in io.Reader, out io.Writer) error {
	srv, err := New(name, nil)
	if err != nil {
		return err
	}
	if err := server.NewStdioServer(srv).Listen(ctx, in, out); err != nil {
		return fmt.Errorf("serve %s over stdio: %w", name, err)
	}
	return nil
}

// Handler returns a streamable-HTTP handler serving the named built-in
// server. It answers MCP on whatever path it is mounted at; "/mcp" is the
// conventional one.
func Handler(name string) (http.Handler, error) {
	srv, err := New(name, nil)
	if err != nil {
		return nil, err
	}
	return server.NewStreamableHTTPServer(srv), nil
}
