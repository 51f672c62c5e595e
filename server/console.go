package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"toolrouter/answer"
	"toolrouter/auth"
	"toolrouter/console"
)

// Console is the operator console (/ui, package console), when it is on (ui.enabled): its files,
// the ring of recent request reports, and what its overview shows beside the API's answers.
type Console struct {
	Files *console.Files
	// Recent keeps the last request reports; the caller hands it every report (Deps.Observer).
	Recent *console.Recent
	Build  console.Build
	// Usage says where the usage records are kept.
	Usage UsageStore
}

// UsageStore says where the usage records are kept, for the console's overview.
type UsageStore struct {
	// Backend is "sqlite", "postgres" or "off".
	Backend string `json:"backend"`
	// Where is the SQLite file, or PostgreSQL's host and database (never a credential).
	Where string `json:"where,omitempty"`
}

const (
	pathConsole       = console.PathPrefix
	pathConsoleAssets = pathConsole + "/assets/*"
)

// consoleFiles routes the console's page and files, before authentication: they are the same
// for everyone and hold no data; the page asks for a credential when the API wants one. The
// Host check (guard) applies to them as to the API. Their requests are logged, not observed
// (metrics, usage records, traces, recent requests).
func (h *handlers) consoleFiles(app *fiber.App) {
	if h.d.Console == nil {
		return
	}
	app.Get(pathConsole, func(c *fiber.Ctx) error { return h.consoleFile(c, console.Index) })
	app.Get(pathConsoleAssets, func(c *fiber.Ctx) error { return h.consoleFile(c, c.Params("*")) })
}

// consoleDoors are the doors only the console reads, served after authentication:
// /ui/api/about (the build, the caller's identity and scope; for admins, the usage store and the
// rate limits' backend), the recent requests (admins) and the approvals. They are logged, not
// observed, but for a decision that runs a call. None when the console is off.
func (h *handlers) consoleDoors() []door {
	if h.d.Console == nil {
		return nil
	}
	get := []string{fiber.MethodGet}
	return []door{
		{get, pathConsole + "/api/about", h.consoleAbout, workNone, dialectToolrouter, frameNone},
		{get, pathConsole + "/api/requests", h.consoleRecent, workNone, dialectToolrouter, frameNone},
		{get, pathConsole + "/api/requests/*", h.consoleRequest, workNone, dialectToolrouter, frameNone}, // a wildcard: unrouted knows no :params
		{get, pathApprovals, h.consoleApprovals, workNone, dialectToolrouter, frameNone},
		{[]string{fiber.MethodPost}, pathApprovals + "/*", h.consoleDecide, workNone, dialectToolrouter, frameNone}, // {id}/approve, {id}/decline
	}
}

// consoleFile answers one of the console's files with its ETag (304 when the client has it),
// gzipped when the client takes gzip, under the console's Content-Security-Policy.
func (h *handlers) consoleFile(c *fiber.Ctx, name string) error {
	reportOf(c).unobserved = true
	f, ok := h.d.Console.Files.Open(name)
	if !ok {
		return &answer.Problem{Status: fiber.StatusNotFound, Code: "not_found", Message: "no console file " + c.Path()}
	}
	c.Set(fiber.HeaderContentSecurityPolicy, console.CSP)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderCacheControl, "no-cache") // revalidated with the ETag on every use
	c.Vary(fiber.HeaderAcceptEncoding)
	body, etag := f.Body, f.ETag
	gz := acceptsGzip(c.Get(fiber.HeaderAcceptEncoding))
	if gz {
		// Each encoding is its own representation, with its own strong validator.
		etag = strings.TrimSuffix(etag, `"`) + `-gzip"`
	}
	c.Set(fiber.HeaderETag, etag)
	if etagMatches(c.Get(fiber.HeaderIfNoneMatch), etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	if gz {
		body = f.Gzip()
		c.Set(fiber.HeaderContentEncoding, "gzip")
	}
	c.Set(fiber.HeaderContentType, f.ContentType)
	return c.Send(body)
}

// acceptsGzip reports whether an Accept-Encoding header takes gzip with a quality above 0: named,
// or else through "*".
func acceptsGzip(header string) bool {
	gzip, star := -1.0, -1.0 // the qualities given; -1: not named
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		switch coding = strings.TrimSpace(coding); {
		case strings.EqualFold(coding, "gzip"):
			gzip = q
		case coding == "*":
			star = q
		}
	}
	if gzip >= 0 {
		return gzip > 0
	}
	return star > 0
}

// etagMatches reports whether an If-None-Match header names etag (or is "*").
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// consoleAbout answers GET /ui/api/about: what the overview shows beside the API's answers.
// Everyone authenticated gets the build, their identity, whether they are an admin and whether
// callers authenticate; admins (h.admin, as for /readyz) get the usage store and the rate limits'
// backend too.
func (h *handlers) consoleAbout(c *fiber.Ctx) error {
	reportOf(c).unobserved = true
	out := struct {
		Build          console.Build `json:"build"`
		Identity       string        `json:"identity"`
		Admin          bool          `json:"admin"`
		Authenticates  bool          `json:"authenticates"`
		RecentRequests int           `json:"recent_requests"`
		Usage          *UsageStore   `json:"usage,omitempty"`
		UsageDropped   *uint64       `json:"usage_dropped,omitempty"`
		Limits         *limitsState  `json:"limits,omitempty"`
	}{Build: h.d.Console.Build, Admin: h.admin(c), Authenticates: h.o.AdminReadyz}
	if id, ok := identity(c); ok {
		out.Identity = id.String()
	}
	if r := h.d.Console.Recent; r != nil {
		out.RecentRequests = r.Cap()
	}
	if out.Admin {
		u := h.d.Console.Usage
		out.Usage = &u
		if d, ok := h.d.Usage.(interface{ Dropped() uint64 }); ok {
			n := d.Dropped()
			out.UsageDropped = &n
		}
		if h.d.Limiter != nil {
			out.Limits = &limitsState{Backend: h.d.Limiter.Backend(), DroppedCharges: h.d.Limiter.DroppedCharges()}
		}
	}
	return c.JSON(out)
}

// consoleRecent answers GET /ui/api/requests: the kept request reports' summaries, newest first.
// Admins only when callers authenticate: they name every identity's requests.
func (h *handlers) consoleRecent(c *fiber.Ctx) error {
	reportOf(c).unobserved = true
	if !h.admin(c) {
		return fmt.Errorf("%w: the recent requests are for admins (auth.admins)", auth.ErrForbidden)
	}
	out := struct {
		Capacity int               `json:"capacity"`
		Bytes    int               `json:"bytes"`
		MaxBytes int               `json:"max_bytes"`
		Requests []console.Summary `json:"requests"`
	}{Requests: []console.Summary{}}
	if r := h.d.Console.Recent; r != nil {
		out.Capacity, out.Requests = r.Cap(), r.List()
		out.Bytes, out.MaxBytes = r.Bytes()
	}
	return c.JSON(out)
}

// consoleRequest answers GET /ui/api/requests/ID: one kept report whole, for its timeline; 404
// once the ring has come round to it.
func (h *handlers) consoleRequest(c *fiber.Ctx) error {
	reportOf(c).unobserved = true
	if !h.admin(c) {
		return fmt.Errorf("%w: the recent requests are for admins (auth.admins)", auth.ErrForbidden)
	}
	id, err := strconv.ParseUint(c.Params("*"), 10, 64)
	if err != nil {
		return answer.BadRequest("bad_id", fmt.Sprintf("the request id must be a whole number, got %q", clipHeader(c.Params("*"))))
	}
	if r := h.d.Console.Recent; r != nil {
		if d, ok := r.Get(id); ok {
			return c.JSON(d)
		}
	}
	return &answer.Problem{Status: fiber.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("request %d is not among the recent requests kept (ui.recent_requests)", id)}
}

// consoleOrigin reports whether a browser request's Origin is the console's own: the console is
// on, the Host header is one the server answers (hostSet: a rebound name is not), and the Origin is
// http:// or https:// and that Host. Browsers send Origin with a page's own POSTs; a page of any
// other origin still needs http.allowed_origins.
func (h *handlers) consoleOrigin(c *fiber.Ctx, origin string) bool {
	if h.d.Console == nil || h.hosts == nil {
		return false
	}
	host := string(c.Request().Host())
	rest, ok := strings.CutPrefix(origin, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(origin, "https://")
	}
	return ok && host != "" && strings.EqualFold(rest, host) && h.hosts.allows(host)
}
