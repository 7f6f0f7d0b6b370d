// The dashboard's only way to the head: the JSON API of docs/api.md with the token of the
// person signed in, sent as "Authorization: Bearer" (never in a URL, where it would land in
// access logs and browser history). The token lives in sessionStorage: it goes away with
// the tab.

const TOKEN_KEY = "corral.token";
const USER_KEY = "corral.user";

export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY) || "",
  user: () => sessionStorage.getItem(USER_KEY) || "",
  signIn(token, user) {
    sessionStorage.setItem(TOKEN_KEY, token.trim());
    sessionStorage.setItem(USER_KEY, user.trim());
  },
  signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(USER_KEY);
  },
};

// An answer other than 2xx, with the API's stable error code and message.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function errorOf(r) {
  let code = "http_" + r.status;
  let message = r.statusText || "request failed";
  try {
    const body = await r.json();
    if (body && body.error) ({ code, message } = body.error);
  } catch (_) {
    // not JSON: keep the HTTP status
  }
  return new ApiError(r.status, code, message);
}

// Called with the ApiError of any 401: the token is bad, revoked or expired.
let onUnauthenticated = () => {};
export function setUnauthenticatedHandler(f) {
  onUnauthenticated = f;
}

function headers(extra) {
  return Object.assign({ Authorization: "Bearer " + session.token() }, extra || {});
}

// GET a JSON resource. Resolves to {body, revision}; revision is the head's state the answer
// reflects (X-Corral-Revision), where the event stream should pick up.
export async function getJson(path) {
  const r = await fetch(path, { headers: headers(), cache: "no-store" });
  if (!r.ok) {
    const e = await errorOf(r);
    if (r.status === 401) onUnauthenticated(e);
    throw e;
  }
  return { body: await r.json(), revision: Number(r.headers.get("X-Corral-Revision") || 0) };
}

export async function postJson(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!r.ok) {
    const e = await errorOf(r);
    if (r.status === 401) onUnauthenticated(e);
    throw e;
  }
  return r.json();
}

// One read of a job's log from `offset`: {text, next, state}.
export async function getLog(id, offset, stream, replica) {
  const q = new URLSearchParams({ offset: String(offset), stream, replica: String(replica) });
  const r = await fetch(`/v1/jobs/${id}/logs?${q}`, { headers: headers(), cache: "no-store" });
  if (!r.ok) {
    const e = await errorOf(r);
    if (r.status === 401) onUnauthenticated(e);
    throw e;
  }
  return {
    text: await r.text(),
    next: Number(r.headers.get("X-Corral-Next-Offset") || offset),
    state: r.headers.get("X-Corral-Job-State") || "",
  };
}

// Splits server-sent-event text into complete events; returns [events, rest]. Each event is
// {id, event, data}; comments and retry lines are dropped.
export function parseSse(buffer) {
  const events = [];
  let start = 0;
  for (;;) {
    const end = buffer.indexOf("\n\n", start);
    if (end < 0) break;
    const block = buffer.slice(start, end);
    start = end + 2;
    const ev = { id: null, event: "message", data: "" };
    let hasData = false;
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "id") ev.id = value;
      else if (field === "event") ev.event = value;
      else if (field === "data") {
        ev.data += (hasData ? "\n" : "") + value;
        hasData = true;
      }
    }
    if (hasData) events.push(ev);
  }
  return [events, buffer.slice(start)];
}

// Follows GET /v1/events from revision `since` until stop() is called. EventSource cannot
// send an Authorization header, so this is fetch() with the header, reading the stream as it
// comes; each answer of the head ends after a batch or its wait, and the next request resumes
// after the last id seen, so nothing is lost or repeated (the same contract EventSource's
// Last-Event-ID gives). handlers: change(CHANGE), reset(revision), status(text),
// denied(ApiError).
export function followEvents(since, handlers) {
  const abort = new AbortController();
  let rev = since;
  let delay = 250;
  // The head answers an event request whole, after a batch or its wait: the first request after
  // (re)connecting asks for no wait, so the page knows at once that the stream works.
  let connected = false;
  const run = async () => {
    while (!abort.signal.aborted) {
      try {
        const r = await fetch(`/v1/events?since=${rev}${connected ? "" : "&wait=0"}`, {
          headers: headers({ Accept: "text/event-stream" }),
          cache: "no-store",
          signal: abort.signal,
        });
        if (!r.ok) {
          const e = await errorOf(r);
          if (r.status === 401) return onUnauthenticated(e);
          if (r.status === 403) return handlers.denied(e);
          throw e;
        }
        handlers.status("live");
        connected = true;
        delay = 250;
        const reader = r.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let events;
          [events, buffer] = parseSse(buffer);
          for (const ev of events) {
            if (ev.id !== null) rev = Number(ev.id);
            if (ev.event === "reset") handlers.reset(rev);
            else handlers.change(JSON.parse(ev.data));
          }
        }
      } catch (e) {
        if (abort.signal.aborted) return;
        connected = false;
        handlers.status("reconnecting");
        await new Promise((ok) => setTimeout(ok, delay));
        delay = Math.min(delay * 2, 5000);
      }
    }
  };
  run();
  return { stop: () => abort.abort(), revision: () => rev };
}
