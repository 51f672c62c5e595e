#!/usr/bin/env python3
"""A toolrouter client with the standard library alone, as an llm-council backend would call it.

    TOOLROUTER_URL=http://127.0.0.1:8090 TOOLROUTER_API_KEY=... python3 client.py "what time is it in Tokyo?"

It asks POST /v1/route which tools the query needs (and what they answered), then asks
POST /v1/answer/stream for the answer, reading the Server-Sent Events as they come: each event's
data is a JSON object whose "type" names it (the list is in the README's "Stream events"). A
FastAPI backend would forward these events to its front end instead of printing them.

TOOLROUTER_URL defaults to http://127.0.0.1:8090; TOOLROUTER_API_KEY, when set, is sent as a
bearer token. The exit status is 1 when toolrouter refuses the request or the stream ends in an
error event.
"""

import json
import os
import sys
import urllib.error
import urllib.request

BASE_URL = os.environ.get("TOOLROUTER_URL", "http://127.0.0.1:8090").rstrip("/")
API_KEY = os.environ.get("TOOLROUTER_API_KEY", "")
# Seconds without a byte before giving up; a stream sends a keep-alive comment every 2 s.
TIMEOUT = 180


class ToolrouterError(Exception):
    """toolrouter's {"error": {"code", "message"}}, from a 4xx/5xx or a stream's error event."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


def post(path, body):
    """POSTs body as JSON and returns the open response; an error status raises ToolrouterError."""
    headers = {"Content-Type": "application/json"}
    if API_KEY:
        headers["Authorization"] = "Bearer " + API_KEY
    req = urllib.request.Request(BASE_URL + path, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        return urllib.request.urlopen(req, timeout=TIMEOUT)
    except urllib.error.HTTPError as e:
        try:
            err = json.load(e)["error"]
        except (ValueError, KeyError, TypeError):
            err = {"code": f"http_{e.code}", "message": e.reason}
        raise ToolrouterError(err.get("code"), err.get("message")) from None


def route(query):
    """POST /v1/route: the routing outcome (use_tool, calls with their results, ...)."""
    with post("/v1/route", {"query": query}) as resp:
        return json.load(resp)


def events(resp):
    """Yields the data of each Server-Sent Event, decoded; comment lines (keep-alives) are skipped."""
    data = []
    for raw in resp:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line == "" and data:
            yield json.loads("\n".join(data))
            data = []
    if data:
        yield json.loads("\n".join(data))


def answer(query, on_event):
    """POST /v1/answer/stream: calls on_event(type, event) for each progress event and returns the
    complete event (the /v1/answer response, with "type" beside its fields)."""
    with post("/v1/answer/stream", {"query": query}) as resp:
        for event in events(resp):
            kind = event.get("type")
            if kind == "complete":
                return event
            if kind == "error":
                err = event.get("error", {})
                raise ToolrouterError(err.get("code"), err.get("message"))
            on_event(kind, event)
    raise ToolrouterError("stream_ended", "the stream ended without complete or error")


def show(kind, event):
    """Prints one progress event the way a front end would show it."""
    if kind == "select_complete":
        sel = event.get("selection", {})
        print(f"event {kind}: tools {', '.join(sel.get('tools') or []) or 'none'}")
    elif kind == "tool_result":
        call = event.get("call", {})
        result = call.get("result") or {}
        print(f"event {kind}: {call.get('server')}.{call.get('tool')} -> {result.get('text', call.get('error'))}")
    elif kind.endswith("_start") and kind.startswith("stage"):
        print(f"event {kind}: {', '.join(event.get('data', {}).get('members', []))}")
    elif kind == "stage1_delta":
        pass  # a piece of a member's answer; stage1_answer has it whole
    elif kind == "stage1_answer":
        a = event.get("data", {})
        print(f"event {kind}: {a.get('label') or a.get('model') + ' did not answer'}")
    elif kind == "stage3_delta":
        # The final answer as the chairman writes it, piece by piece.
        print(event.get("data", {}).get("text", ""), end="", flush=True)
        show.writing = True
    else:
        if getattr(show, "writing", False):
            print()
            show.writing = False
        print(f"event {kind}")


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} QUERY", file=sys.stderr)
        return 2
    query = argv[1]
    try:
        out = route(query)
        tools = [f"{c['server']}.{c['tool']}" for c in out.get("calls", []) if c.get("server")]
        print(f"route: use_tool={str(out['use_tool']).lower()} tools={','.join(tools) or 'none'}")
        final = answer(query, show)
    except (ToolrouterError, urllib.error.URLError) as e:
        print(f"toolrouter: {e}", file=sys.stderr)
        return 1
    print(f"answered_by: {final['answered_by']}")
    print(f"final: {final['final']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
