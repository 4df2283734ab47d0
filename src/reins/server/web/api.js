// The API client: the bearer token, JSON calls, and a run's server-sent events, read with
// fetch() (EventSource cannot send an Authorization header).

const KEY = "reins-token";

export class Unauthorized extends Error {
  constructor() {
    super("the token was refused");
  }
}

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail || `HTTP ${status}`);
    this.status = status;
  }
}

let unauthorized = () => {};

/** Called when the server refuses the token (the token is forgotten first). */
export function onUnauthorized(handler) {
  unauthorized = handler;
}

/** The token: from the address's `#token=...` (then taken out of the address bar and kept
 *  in this tab's sessionStorage), else the one kept; null if none. */
export function takeToken() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const given = hash.get("token");
  if (given) {
    sessionStorage.setItem(KEY, given);
    hash.delete("token");
    const rest = hash.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  }
  return sessionStorage.getItem(KEY);
}

export function setToken(token) {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(KEY);
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${sessionStorage.getItem(KEY) ?? ""}`, ...extra };
}

async function failed(response) {
  if (response.status === 401) {
    forgetToken();
    unauthorized();
    return new Unauthorized();
  }
  let detail = "";
  try {
    const body = await response.json();
    detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
  } catch {
    detail = response.statusText;
  }
  return new ApiError(response.status, detail);
}

/** A JSON call to the API; the parsed answer (null for 204). */
export async function api(method, path, body) {
  const init = { method, headers: headers(), cache: "no-store" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failed(response);
  return response.status === 204 ? null : response.json();
}

export const runPath = (runId, tail = "") => `/api/runs/${encodeURIComponent(runId)}${tail}`;

/** Reads the run's events after seq `after`, calling `onEvent(event, id)` for each (`id`:
 *  its seq, null for a text delta), until the server ends the stream, `onEvent` returns
 *  false, or `signal` aborts (an AbortError). */
export async function readEvents(runId, after, onEvent, signal) {
  const extra = { Accept: "text/event-stream" };
  if (after) extra["Last-Event-ID"] = String(after);
  const response = await fetch(runPath(runId, "/events"), {
    headers: headers(extra),
    signal,
    cache: "no-store",
  });
  if (!response.ok) throw await failed(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let data = [];
  let id = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    const lines = buffer.split("\n");
    buffer = lines.pop();
    for (const raw of lines) {
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      if (line === "") {
        // a blank line ends an event (a comment alone, the keep-alive, has no data)
        const event = data.length ? parsed(data.join("\n")) : null;
        if (event && onEvent(event, id) === false) {
          await reader.cancel();
          return;
        }
        data = [];
        id = null;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let text = colon < 0 ? "" : line.slice(colon + 1);
      if (text.startsWith(" ")) text = text.slice(1);
      if (field === "data") data.push(text);
      else if (field === "id") id = text;
    }
  }
}

function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null; // not an event this page reads
  }
}
