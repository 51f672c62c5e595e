// Package console is the operator console served at /ui: its pages (HTML, CSS and ES modules,
// embedded in the binary, with uPlot vendored for the charts), how they are served (ETag, gzip,
// a Content-Security-Policy without inline scripts or other origins), and the ring of recent
// request reports its recent requests page reads. The pages read everything else through the
// HTTP API, with the caller's credential, under the API's rules; package server routes /ui and
// decides who may read what. It holds no request logic.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"
	"sync"
)

//go:embed assets
var assets embed.FS

// CSP is the Content-Security-Policy of every console response: scripts, styles, images and
// requests from the console's own origin only, no inline script or style, no plug-ins, no
// framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Index is the name of the page served at /ui.
const Index = "index.html"

// File is one embedded file, ready to serve.
type File struct {
	Name        string // the path below assets/, "app.js"
	ContentType string
	// ETag is a strong validator: the quoted start of the body's SHA-256.
	ETag string
	Body []byte
	gz   func() []byte
}

// Gzip returns the body gzipped, compressed once on first use.
func (f *File) Gzip() []byte { return f.gz() }

// Files are the console's files by name.
type Files struct {
	byName map[string]*File
}

// NewFiles reads the embedded files and hashes each; none is compressed until it is asked for.
func NewFiles() (*Files, error) {
	root, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	out := &Files{byName: map[string]*File{}}
	err = fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(root, name)
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		sum := sha256.Sum256(body)
		f := &File{Name: name, ContentType: contentType(name), ETag: `"` + hex.EncodeToString(sum[:12]) + `"`, Body: body}
		f.gz = sync.OnceValue(func() []byte { return compress(body) })
		out.byName[name] = f
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console files: %w", err)
	}
	if _, ok := out.byName[Index]; !ok {
		return nil, fmt.Errorf("console files: %s is missing", Index)
	}
	return out, nil
}

// Open returns the file of that name ("app.js", "vendor/uplot/uPlot.esm.js"); false when there is
// none. Names are clean paths below assets/, without a leading slash.
func (fs *Files) Open(name string) (*File, bool) {
	if name != path.Clean(name) || strings.HasPrefix(name, "/") {
		return nil, false
	}
	f, ok := fs.byName[name]
	return f, ok
}

// Names lists the files' names, in no order.
func (fs *Files) Names() []string {
	out := make([]string, 0, len(fs.byName))
	for n := range fs.byName {
		out = append(out, n)
	}
	return out
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".txt", "":
		return "text/plain; charset=utf-8"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func compress(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
	_, _ = w.Write(b)                                       // a bytes.Buffer does not fail
	_ = w.Close()
	return buf.Bytes()
}
