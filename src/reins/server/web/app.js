// The page: the store's sessions, the shown session's runs (the latest followed as it goes
// on), and what can be done with the latest run: start one, steer it, stop it, answer what
// it asks, continue it at a cap or after a stop.

import {
  ApiError,
  api,
  forgetToken,
  onUnauthorized,
  readEvents,
  runPath,
  setToken,
  takeToken,
  Unauthorized,
} from "./api.js";
import { $, h, sleep, tokens } from "./dom.js";
import { RunView } from "./transcript.js";

const PAGE = 50;
const shown = { sessionId: null, runs: [], abort: new AbortController(), catchingUp: null };
let listed = 0; // the sessions in the list
let stick = true; // the transcript keeps to its end while the reader is there
let drawn = null; // the latest run's status as last drawn

// ---- errors and the token

function report(error) {
  if (error instanceof Unauthorized || error?.name === "AbortError") return;
  const box = $("#error");
  box.textContent = error.message;
  box.hidden = false;
  clearTimeout(report.timer);
  report.timer = setTimeout(() => (box.hidden = true), 8000);
}

function askToken() {
  const dialog = $("#token-dialog");
  if (!dialog.open) dialog.showModal();
  $("#token-input").focus();
}

onUnauthorized(askToken);
$("#token-dialog").addEventListener("cancel", (event) => event.preventDefault()); // nothing works without it

$("#token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("#token-input").value.trim();
  if (!token) return;
  setToken(token);
  $("#token-input").value = "";
  $("#token-dialog").close();
  refreshSessions();
  if (shown.sessionId) openSession(shown.sessionId); // its streams ended with the refusal
});

$("#forget").addEventListener("click", () => {
  forgetToken();
  closeSession();
  $("#sessions").replaceChildren();
  askToken();
});

// ---- the sessions

async function refreshSessions(more = false) {
  try {
    const offset = more ? listed : 0;
    const page = await api("GET", `/api/sessions?offset=${offset}&limit=${PAGE}`);
    if (!more) $("#sessions").replaceChildren();
    $("#sessions").append(...page.sessions.map(sessionRow));
    listed = offset + page.sessions.length;
    $("#more").hidden = listed >= page.total;
    markShown();
  } catch (error) {
    report(error);
  }
}

function sessionRow(row) {
  const runs = `${row.runs} run${row.runs === 1 ? "" : "s"}`;
  const when = new Date(row.started_at).toLocaleString([], { dateStyle: "short", timeStyle: "short" });
  return h(
    "li",
    {},
    h(
      "button",
      {
        type: "button",
        class: "session",
        "data-session": row.session_id,
        onclick: () => openSession(row.session_id),
      },
      h("span", { class: "goal", text: row.goal }),
      h(
        "span",
        { class: "meta" },
        h("span", { class: `status ${row.last_status}`, text: row.last_status }),
        ` ${runs} · ${when}`,
      ),
    ),
  );
}

function markShown() {
  for (const row of document.querySelectorAll(".session")) {
    if (row.dataset.session === shown.sessionId) row.setAttribute("aria-current", "true");
    else row.removeAttribute("aria-current");
  }
}

function closeSession() {
  shown.abort.abort();
  shown.abort = new AbortController();
  shown.sessionId = null;
  shown.runs = [];
  $("#transcript").replaceChildren();
  stick = true;
  render();
}

async function openSession(sessionId) {
  closeSession();
  shown.sessionId = sessionId;
  render();
  await catchUp();
}

function addRun(runId) {
  const known = shown.runs.find((run) => run.runId === runId);
  if (known) return known;
  const run = new RunView(runId, actions, render);
  shown.runs.push(run);
  $("#transcript").append(run.el);
  return run;
}

/** Shows the session's runs not shown yet, in order, following the latest as it goes on;
 *  then any turn begun meanwhile (a steer that came after a run's end begins one). */
async function catchUp() {
  const { signal } = shown.abort;
  if (shown.catchingUp === signal) return;
  shown.catchingUp = signal;
  try {
    for (;;) {
      const session = await api("GET", `/api/sessions/${encodeURIComponent(shown.sessionId)}`);
      if (signal.aborted) return;
      const fresh = session.runs.filter((info) => !shown.runs.some((run) => run.runId === info.run_id));
      if (!fresh.length) return;
      for (const info of fresh) {
        await follow(addRun(info.run_id), signal, info !== session.runs.at(-1));
        if (signal.aborted) return;
      }
    }
  } catch (error) {
    report(error);
  } finally {
    if (shown.catchingUp === signal) shown.catchingUp = null;
  }
}

/** Follows the run (if not already), then shows what the session did next. */
async function keepFollowing(run) {
  const { signal } = shown.abort;
  if (run.following) return run.wake?.();
  await follow(run, signal);
  if (signal.aborted) return;
  await catchUp();
  refreshSessions();
}

/** Reads the run's events until it has ended: again, from the last event had, when the
 *  connection breaks or the stream ends before the run's end, and while it waits for an
 *  answer (at once when one is sent from here). An earlier run of the session is read to
 *  its first end only. */
async function follow(run, signal, earlier = false) {
  if (run.following) return run.wake?.();
  run.following = true;
  let delay = 500;
  let idle = 0; // reads in a row that brought nothing, after the run's end
  try {
    while (!signal.aborted) {
      const before = run.lastSeq;
      run.reconnecting();
      try {
        await readEvents(
          run.runId,
          run.lastSeq,
          (event, id) => {
            run.offline = false;
            run.apply(event, id);
            return !(earlier && event.kind === "run_finished");
          },
          signal,
        );
        if (earlier) return;
        run.view = await api("GET", runPath(run.runId));
        run.offline = false;
        delay = 500;
      } catch (error) {
        if (signal.aborted || error instanceof Unauthorized) return;
        if (error instanceof ApiError) return report(error);
        // the connection broke, or the server is away: read on from the last event
        run.offline = true;
        render();
        await sleep(delay, signal);
        delay = Math.min(delay * 2, 8000);
        continue;
      }
      const { status, stop_reason: reason } = run.view;
      if (status === "finished" && run.finished?.stop_reason === reason) return;
      if (status === "finished" || status === "interrupted") {
        // it ended, and the stream ended before its end: read the rest, until nothing comes
        idle = run.lastSeq === before ? idle + 1 : 0;
        if (idle >= (status === "interrupted" ? 1 : 2)) return;
        continue;
      }
      await new Promise((resolve) => {
        run.wake = resolve;
        sleep(run.view.status === "waiting" ? 3000 : 500, signal).then(resolve);
      });
    }
  } catch (error) {
    report(error);
  } finally {
    run.following = false;
    run.wake = null;
    render();
  }
}

// ---- what can be done with a run

async function post(run, tail, body) {
  try {
    const answer = await api("POST", runPath(run.runId, tail), body);
    if (answer?.run_id && answer.run_id !== run.runId) run = addRun(answer.run_id);
    keepFollowing(run);
    return true;
  } catch (error) {
    report(error);
    return false;
  }
}

const actions = {
  approve: (run, callId, approve, always) =>
    post(run, `/approvals/${encodeURIComponent(callId)}`, { approve, always }),
  answer: (run, callId, text) => post(run, `/answers/${encodeURIComponent(callId)}`, { text }),
};

const latest = () => shown.runs.at(-1) ?? null;

function status(run) {
  if (run.offline) return "reconnecting";
  if (run.finished) return run.finished.stop_reason === "waiting" ? "waiting" : "finished";
  if (run.following)
    return [...run.cards.values()].some((card) => !card.classList.contains("settled"))
      ? "waiting"
      : "running";
  return run.view?.status ?? "running";
}

/** Runs `act` with `button` disabled meanwhile. */
async function pressing(button, act) {
  button.disabled = true;
  try {
    await act();
  } finally {
    button.disabled = false;
  }
}

$("#start-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  const body = { goal: String(form.get("goal")).trim() };
  if (!body.goal) return;
  for (const name of ["model", "workspace", "mode"]) {
    const value = String(form.get(name) ?? "").trim();
    if (value) body[name] = value;
  }
  const steps = Number(form.get("max_steps"));
  if (steps) body.max_steps = steps;
  if (shown.sessionId) body.session_id = shown.sessionId;
  pressing($("#start"), async () => {
    try {
      const started = await api("POST", "/api/runs", body);
      $("#goal").value = "";
      if (started.session_id !== shown.sessionId) {
        closeSession();
        shown.sessionId = started.session_id;
      }
      stick = true;
      keepFollowing(addRun(started.run_id));
      refreshSessions();
    } catch (error) {
      report(error);
    }
  });
});

$("#goal").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("#start-form").requestSubmit();
});

$("#new-run").addEventListener("click", () => {
  closeSession();
  $("#goal").focus();
});

$("#working").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("#steer-input").value.trim();
  if (!text) return;
  pressing($("#steer"), async () => {
    try {
      await api("POST", runPath(latest().runId, "/steer"), { text });
      $("#steer-input").value = "";
    } catch (error) {
      report(error);
    }
  });
});

$("#stop").addEventListener("click", (event) =>
  pressing(event.target, () => api("POST", runPath(latest().runId, "/stop")).catch(report)),
);

function resume(button, body) {
  return pressing(button, () => post(latest(), "/resume", body));
}

$("#more-steps").addEventListener("click", (event) => {
  const run = latest();
  resume(event.target, { max_steps: (run.maxSteps ?? run.steps) + 10 });
});
$("#more-time").addEventListener("click", (event) =>
  resume(event.target, { time_budget: (latest().timeBudget ?? 0) + 300 }),
);
$("#more-budget").addEventListener("click", (event) => resume(event.target, {}));
$("#resume").addEventListener("click", (event) => resume(event.target, {}));

$("#delete-session").addEventListener("click", async (event) => {
  const button = event.target;
  if (!button.dataset.armed) {
    button.dataset.armed = "yes";
    button.textContent = "Delete for good?";
    setTimeout(() => {
      delete button.dataset.armed;
      button.textContent = "Delete";
    }, 4000);
    return;
  }
  try {
    await api("DELETE", `/api/sessions/${encodeURIComponent(shown.sessionId)}`);
    closeSession();
    refreshSessions();
  } catch (error) {
    report(error);
  }
});

$("#refresh").addEventListener("click", () => refreshSessions());
$("#more").addEventListener("click", () => refreshSessions(true));
$("#transcript").addEventListener("scroll", (event) => {
  const box = event.target;
  stick = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
});

// ---- drawing the controls and the meter from the latest run

function render() {
  const run = latest();
  const state = run ? status(run) : null;
  const reason = run?.finished?.stop_reason;
  const offers = {
    "#more-steps": reason === "max_steps",
    "#more-time": reason === "time_budget",
    "#more-budget": reason === "token_budget" || reason === "cost_budget",
    "#resume": reason === "cancelled" || reason === "error" || state === "interrupted",
  };
  for (const [selector, offered] of Object.entries(offers)) $(selector).hidden = !offered;
  $("#offer").hidden = !Object.values(offers).some(Boolean);
  $("#working").hidden = state !== "running";
  $("#waiting-note").hidden = state !== "waiting";
  $("#start-form").hidden = Boolean(shown.sessionId) && state !== "finished" && state !== "interrupted";
  $("#start-title").textContent = shown.sessionId ? "Next turn in this session" : "New run";
  $("#session-head").hidden = !shown.sessionId;
  $("#session-id").textContent = shown.sessionId ? `session ${shown.sessionId}` : "";
  meter(run, state);
  if (drawn && state && state !== drawn) refreshSessions(); // the list shows it too
  drawn = state;
  markShown();
  if (stick) $("#transcript").scrollTop = $("#transcript").scrollHeight;
}

function meter(run, state) {
  const el = $("#meter");
  if (!run) return el.replaceChildren();
  const parts = [
    state,
    `step ${run.steps}${run.maxSteps ? ` of ${run.maxSteps}` : ""}`,
    `${tokens(run.usage.input)} in · ${tokens(run.usage.output)} out`,
  ];
  if (run.cost) parts.push(`$${run.cost.toFixed(4)}`);
  if (run.window && run.context !== null)
    parts.push(`context ${Math.round((100 * run.context) / run.window)}% of ${tokens(run.window)}`);
  el.dataset.state = state;
  el.replaceChildren(...parts.map((text) => h("span", { text })));
}

// ---- off we go

render();
if (takeToken()) refreshSessions();
else askToken();
setInterval(() => {
  if (document.visibilityState === "visible" && !$("#token-dialog").open) refreshSessions();
}, 15000);
