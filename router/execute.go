package router

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"toolrouter/inventory"
)

// execute runs the call and records its result or error in out. A result with isError is a tool
// error reported as a result; a transport failure or timeout is reported in out.Error.
func (r *Router) execute(ctx context.Context, tool *inventory.Tool, args map[string]any, out *Outcome) {
	if r.set.ExecuteTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.set.ExecuteTimeout)
		defer cancel()
	}
	res, err := r.tools.CallTool(ctx, tool.Server, tool.Name, args)
	switch {
	case err == nil:
		out.Result = convertResult(res)
		if out.Result.IsError {
			out.Direct = false
		}
	case errors.Is(err, context.DeadlineExceeded):
		out.Error = &Error{Code: CodeToolTimeout, Message: err.Error()}
	case errors.Is(err, inventory.ErrServerDown), errors.Is(err, inventory.ErrUnknownServer):
		out.Error = &Error{Code: CodeToolUnavailable, Message: err.Error()}
	default:
		out.Error = &Error{Code: CodeToolFailed, Message: err.Error()}
	}
	if out.Error != nil {
		out.Direct = false
	}
}

// convertResult joins text content, keeps structured content and summarises everything else.
func convertResult(res *mcp.CallToolResult) *Result {
	out := &Result{IsError: res.IsError, Structured: res.StructuredContent}
	var texts []string
	for _, c := range res.Content {
		switch v := deref(c).(type) {
		case mcp.TextContent:
			texts = append(texts, v.Text)
		case mcp.ImageContent:
			out.Content = append(out.Content, Content{Type: "image", MIMEType: v.MIMEType, Bytes: decodedLen(v.Data)})
		case mcp.AudioContent:
			out.Content = append(out.Content, Content{Type: "audio", MIMEType: v.MIMEType, Bytes: decodedLen(v.Data)})
		case mcp.EmbeddedResource:
			out.Content = append(out.Content, resourceSummary(v.Resource))
		case mcp.ResourceLink:
			out.Content = append(out.Content, Content{Type: "resource_link", URI: v.URI, Name: v.Name, MIMEType: v.MIMEType})
		default:
			out.Content = append(out.Content, Content{Type: "unknown"})
		}
	}
	out.Text = strings.Join(texts, "\n")
	return out
}

// deref turns the pointer forms of content (an in-process server may return them) into values.
func deref(c mcp.Content) mcp.Content {
	switch v := c.(type) {
	case *mcp.TextContent:
		return *v
	case *mcp.ImageContent:
		return *v
	case *mcp.AudioContent:
		return *v
	case *mcp.EmbeddedResource:
		return *v
	case *mcp.ResourceLink:
		return *v
	}
	return c
}

func resourceSummary(r mcp.ResourceContents) Content {
	switch v := r.(type) {
	case *mcp.TextResourceContents:
		return resourceSummary(*v)
	case *mcp.BlobResourceContents:
		return resourceSummary(*v)
	case mcp.TextResourceContents:
		return Content{Type: "resource", URI: v.URI, MIMEType: v.MIMEType, Bytes: len(v.Text)}
	case mcp.BlobResourceContents:
		return Content{Type: "resource", URI: v.URI, MIMEType: v.MIMEType, Bytes: decodedLen(v.Blob)}
	}
	return Content{Type: "resource"}
}

func decodedLen(b64 string) int {
	return base64.StdEncoding.DecodedLen(len(b64)) - strings.Count(b64[max(0, len(b64)-2):], "=")
}
