package server

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"toolrouter/answer"
)

// This file serves Ollama's API as a door, so that an Ollama client needs only its host changed:
// POST /api/chat (streamed as NDJSON unless "stream": false), GET /api/tags, POST /api/show,
// GET /api/version and GET /api/ps, in Ollama's field names, with errors as Ollama writes them,
// {"error": "message"}. A chat is the same answer.Chat as a chat completion: routed over the
// inventory, or answered over the request's own tools. Model management (pull, push, create,
// copy, delete) and the endpoints toolrouter does not answer (generate, embed) are refused with
// an error naming the Ollama server behind toolrouter: nothing is forwarded.

// ollamaAPIVersion is the version GET /api/version reports: the Ollama release whose API this
// door speaks (the github.com/ollama/ollama module's, whose types it encodes).
const ollamaAPIVersion = "0.34.4"

// ollamaError is Ollama's error body.
type ollamaError struct {
	Error string `json:"error"`
}

// ollamaDoors are the rows of Ollama's API.
func (h *handlers) ollamaDoors() []door {
	post, get := []string{fiber.MethodPost}, []string{fiber.MethodGet}
	t := []door{
		{post, "/api/chat", h.ollamaChat, workDoor, dialectOllama, frameNDJSON},
		{get, "/api/tags", h.ollamaTags, workNone, dialectOllama, frameNone},
		{post, "/api/show", h.ollamaShow, workNone, dialectOllama, frameNone},
		{get, pathOllamaVersion, h.ollamaVersion, workNone, dialectOllama, frameNone},
		{get, "/api/ps", h.ollamaPS, workNone, dialectOllama, frameNone},
	}
	for _, r := range ollamaRefused {
		t = append(t, door{[]string{r.method}, r.path, refuse(r), workNone, dialectOllama, frameNone})
	}
	return t
}

// ollamaRefusal is an endpoint of Ollama's that toolrouter refuses, and why.
type ollamaRefusal struct {
	method, path, why string
}

// manages is why model management is refused.
const manages = "toolrouter routes chats over the models its Ollama server has and does not manage models: " +
	"run it against the Ollama server itself (the one toolrouter's ollama.host names)"

var ollamaRefused = []ollamaRefusal{
	{fiber.MethodPost, "/api/pull", manages + ", for example `ollama pull MODEL` on that host"},
	{fiber.MethodPost, "/api/push", manages},
	{fiber.MethodPost, "/api/create", manages},
	{fiber.MethodPost, "/api/copy", manages},
	{fiber.MethodDelete, "/api/delete", manages},
	{fiber.MethodPost, "/api/generate", "toolrouter answers chats only: send the prompt as a user message to /api/chat, or call the Ollama server itself"},
	{fiber.MethodPost, "/api/embed", "toolrouter does not compute embeddings: call the Ollama server itself"},
	{fiber.MethodPost, "/api/embeddings", "toolrouter does not compute embeddings: call the Ollama server itself"},
}

// refuse answers r's endpoint with 501 not_supported: nothing is forwarded to Ollama.
func refuse(r ollamaRefusal) fiber.Handler {
	msg := fmt.Sprintf("%s %s is not supported by toolrouter: %s", r.method, r.path, r.why)
	return func(*fiber.Ctx) error {
		return &answer.Problem{Status: fiber.StatusNotImplemented, Code: "not_supported", Message: msg}
	}
}

// ollamaVersion serves GET /api/version.
func (h *handlers) ollamaVersion(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"version": ollamaAPIVersion})
}

// ollamaTags serves GET /api/tags: the models GET /v1/models lists, in Ollama's shape, with the
// details the router's Ollama server gave for its own.
func (h *handlers) ollamaTags(c *fiber.Ctx) error {
	list := api.ListResponse{Models: []api.ListModelResponse{}}
	for _, m := range h.modelList(c.UserContext()) {
		list.Models = append(list.Models, ollamaListed(m))
	}
	return c.JSON(list)
}

// ollamaListed is m in /api/tags' shape.
func ollamaListed(m openAIModel) api.ListModelResponse {
	if m.upstream != nil {
		l := *m.upstream
		l.Name, l.Model = m.ID, m.ID
		return l
	}
	return api.ListModelResponse{Name: m.ID, Model: m.ID}
}

// ModelShower asks the router's Ollama server about one of its models; *api.Client satisfies it.
type ModelShower interface {
	Show(ctx context.Context, req *api.ShowRequest) (*api.ShowResponse, error)
}

// RunningLister lists the models the router's Ollama server has loaded; *api.Client satisfies it.
type RunningLister interface {
	ListRunning(ctx context.Context) (*api.ProcessResponse, error)
}

// ollamaShow serves POST /api/show {"model"} (or {"name"}): a listed model's details and
// capabilities. A model of the router's Ollama server is shown as that server shows it (its
// details, model_info and capabilities; not its template or modelfile, which toolrouter does not
// use as they are); any other listed model is shown with what toolrouter knows of it. A model not
// listed is a 404, as Ollama answers it.
func (h *handlers) ollamaShow(c *fiber.Ctx) error {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"`
	}
	if err := answer.DecodeJSON(c.Body(), &req, ""); err != nil {
		return err
	}
	name := cmp.Or(strings.TrimSpace(req.Model), strings.TrimSpace(req.Name))
	if name == "" {
		return answer.ParamError("missing_model", "model", "model is required")
	}
	for _, m := range h.modelList(c.UserContext()) {
		if m.ID != name {
			continue
		}
		show := api.ShowResponse{ModelInfo: map[string]any{}, Capabilities: []model.Capability{model.CapabilityCompletion}}
		if m.ID != answer.CouncilModel {
			show.Capabilities = append(show.Capabilities, model.CapabilityTools)
		}
		if m.upstream != nil {
			show.Details, show.ModifiedAt = m.upstream.Details, m.upstream.ModifiedAt
			if s, ok := h.d.Model.(ModelShower); ok {
				ctx, cancel := context.WithTimeout(c.UserContext(), h.o.ProbeTimeout)
				defer cancel()
				if up, err := s.Show(ctx, &api.ShowRequest{Model: name}); err == nil {
					show.Details, show.ModelInfo = up.Details, up.ModelInfo
					if len(up.Capabilities) > 0 {
						show.Capabilities = up.Capabilities
					}
					if !up.ModifiedAt.IsZero() {
						show.ModifiedAt = up.ModifiedAt
					}
				} else {
					h.o.Logger.Debug("showing the router provider's model", "model", name, "err", h.o.Redactor.String(err.Error()))
				}
			}
		}
		if show.ModelInfo == nil {
			show.ModelInfo = map[string]any{}
		}
		return c.JSON(show)
	}
	return &answer.Problem{Status: fiber.StatusNotFound, Code: "model_not_found", Param: "model",
		Message: fmt.Sprintf("model '%s' not found: GET /api/tags lists the models served", clipHeader(name))}
}

// ollamaPS serves GET /api/ps: the listed models the router's Ollama server has loaded (none when
// it cannot say).
func (h *handlers) ollamaPS(c *fiber.Ctx) error {
	out := api.ProcessResponse{Models: []api.ProcessModelResponse{}}
	r, ok := h.d.Model.(RunningLister)
	if !ok {
		return c.JSON(out)
	}
	listed := map[string]bool{}
	for _, m := range h.modelList(c.UserContext()) {
		listed[m.ID] = true
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), h.o.ProbeTimeout)
	defer cancel()
	running, err := r.ListRunning(ctx)
	if err != nil {
		h.o.Logger.Debug("listing the router provider's loaded models", "err", h.o.Redactor.String(err.Error()))
		return c.JSON(out)
	}
	for _, m := range running.Models {
		if listed[m.Name] {
			out.Models = append(out.Models, m)
		}
	}
	return c.JSON(out)
}
