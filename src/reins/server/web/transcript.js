// One run's events, drawn as they come: the goal, the model's text (streamed, then rendered
// as markdown), each tool call with its arguments and its output, the approvals and questions
// it waits on, the notices and guards' warnings, and how it ended. It also folds what the
// page's meter and controls need: usage, cost, caps, the context's fullness.

import { argumentsView, h } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

const QUIET = new Set(["final_answer", "ask_user"]); // their answer and their card show them

const ENDINGS = {
  end_turn: "Done",
  waiting: "Paused for an answer",
  cancelled: "Stopped",
  max_steps: "Stopped at its step cap",
  time_budget: "Stopped at its time budget",
  token_budget: "Stopped at its token budget",
  cost_budget: "Stopped at its cost budget",
  error: "Stopped by an error",
};

export class RunView {
  /** `actions`: { approve(run, callId, approve, always), answer(run, callId, text) }, each
   *  a promise of whether it was sent; `changed()` is called after each event. */
  constructor(runId, actions, changed) {
    this.runId = runId;
    this.actions = actions;
    this.changed = changed;
    this.el = h("section", { class: "run", "data-run": runId });
    this.lastSeq = 0;
    this.calls = new Map(); // call id -> its block
    this.cards = new Map(); // call id -> its approval or question card
    this.streaming = null; // the element text deltas go into, until the whole reply comes
    this.thinking = null;
    this.finished = null; // the last run_finished, until a run_resumed
    this.view = null; // the last GET /api/runs/{id}
    this.following = false; // its stream is being read (app.js)
    this.offline = false; // the last read broke: read again soon
    this.wake = null; // cuts short the wait before the next read
    this.goal = "";
    this.steps = 0;
    this.usage = { input: 0, output: 0 };
    this.cost = 0;
    this.maxSteps = null;
    this.timeBudget = null;
    this.window = null;
    this.context = null; // the input tokens of the last model call
  }

  /** The stream is read again: the text deltas after the last logged event come again. */
  reconnecting() {
    this.streaming?.remove();
    this.thinking?.remove();
    this.streaming = this.thinking = null;
  }

  apply(event, id) {
    if (id !== null) {
      if (Number(id) <= this.lastSeq) return; // had it already
      this.lastSeq = Number(id);
    }
    if (event.subagent) this.subagent(event.subagent, event.event);
    else this.draw(event);
    this.changed();
  }

  add(el) {
    this.el.append(el);
    return el;
  }

  draw(event) {
    switch (event.kind) {
      case "run_started":
        this.goal = event.goal;
        this.caps(event.config);
        this.window = event.config.context?.window ?? null;
        this.add(
          h(
            "div",
            { class: "user" },
            h("div", { class: "who", text: "goal" }),
            h("div", { class: "said", text: event.goal }),
          ),
        );
        this.add(
          h("div", {
            class: "meta",
            text: [
              `run ${event.run_id}`,
              event.config.model,
              event.config.mode && `mode ${event.config.mode}`,
            ]
              .filter(Boolean)
              .join(" · "),
          }),
        );
        break;
      case "run_resumed": {
        this.caps(event);
        this.finished = null;
        const caps = [`up to ${event.max_steps} steps`, event.time_budget && minutes(event.time_budget)];
        this.add(h("div", { class: "divider", text: ["resumed", ...caps.filter(Boolean)].join(" · ") }));
        break;
      }
      case "budget_extended":
        this.caps(event);
        this.add(h("div", { class: "notice info", text: `${event.source}: ${event.choice}` }));
        break;
      case "model_request":
        this.steps = Math.max(this.steps, event.step);
        break;
      case "text_delta":
        this.streaming ??= this.add(h("div", { class: "assistant streaming" }));
        this.streaming.append(event.text);
        break;
      case "thinking_delta":
        this.thinking ??= this.add(
          h(
            "details",
            { class: "thinking" },
            h("summary", { text: "thinking" }),
            h("div", { class: "text" }),
          ),
        );
        this.thinking.lastChild.append(event.text);
        break;
      case "model_response":
        this.response(event);
        break;
      case "tool_call_started": {
        if (QUIET.has(event.call.name)) break;
        const block = this.call(event.call);
        block.dataset.state = "running";
        if (event.changed_by) {
          block.querySelector(".args").replaceWith(argumentsView(event.call, { fold: true }));
          block.append(h("div", { class: "note", text: `arguments changed by ${event.changed_by}` }));
        }
        break;
      }
      case "tool_call_finished":
        this.output(event);
        break;
      case "approval_requested":
        this.call(event.call).dataset.state = "asking";
        this.cards.set(event.call.id, this.add(this.approvalCard(event)));
        break;
      case "permission_decided":
        this.decided(event);
        break;
      case "question_asked":
        this.cards.set(event.call_id, this.add(this.questionCard(event)));
        break;
      case "question_answered": {
        const said =
          event.by === "user"
            ? `Answered: ${event.answer}`
            : event.by === "timeout"
              ? "No answer in time: the model goes on with its default"
              : "Dismissed: the model goes on with its default";
        this.settle(event.call_id, said);
        break;
      }
      case "response_rejected":
      case "answer_rejected": {
        const what = event.kind === "answer_rejected" ? "answer" : "reply";
        const who = h("div", { class: "who", text: `⚠ ${event.source} sent the ${what} back` });
        this.add(h("div", { class: "guard" }, who, h("pre", { text: event.observation })));
        break;
      }
      case "reflected":
        this.usage.input += event.usage.input_tokens;
        this.usage.output += event.usage.output_tokens;
        this.cost += event.cost ?? 0;
        this.add(
          h(
            "div",
            { class: "notice info" },
            `reflection: ${event.assessment}, ${event.next_action}. `,
            event.reasoning,
          ),
        );
        break;
      case "steered":
        this.add(
          h(
            "div",
            { class: "user steer" },
            h("div", { class: "who", text: "steer" }),
            h("div", { class: "said", text: event.text }),
          ),
        );
        break;
      case "context_compacted": {
        this.cost += event.cost ?? 0;
        const tokens = `${event.tokens_before} → ${event.tokens_after} tokens`;
        this.add(h("div", { class: "notice info", text: `context compacted (${event.method}): ${tokens}` }));
        break;
      }
      case "notice":
        this.add(
          h(
            "div",
            { class: `notice ${event.level}`, "data-source": event.source },
            h("span", { class: "who", text: event.source }),
            " ",
            event.text,
          ),
        );
        break;
      case "tools_changed": {
        const parts = [
          ["+", event.added],
          ["−", event.removed],
          ["~", event.changed],
          ["loaded ", event.loaded],
        ];
        const said = parts
          .filter(([, names]) => names.length)
          .map(([sign, names]) => sign + names.join(", "));
        this.add(h("div", { class: "notice info", text: `tools: ${said.join(" ")}` }));
        break;
      }
      case "memory_updated": {
        this.cost += event.cost ?? 0;
        const done = { add: "remembered", update: "updated", invalidate: "forgot" };
        for (const change of event.changes) {
          this.add(h("div", { class: "notice info", text: `${done[change.op]} (${change.scope}): ${change.text}` }));
        }
        if (event.left_out.length) {
          this.add(h("div", { class: "notice info", text: `not kept: ${event.left_out.join(", ")}` }));
        }
        break;
      }
      case "run_finished":
        this.finish(event);
        break;
      default:
        break; // a kind this page does not know yet: the log has it
    }
  }

  caps(from) {
    this.maxSteps = from.max_steps;
    this.timeBudget = from.time_budget ?? null;
  }

  response(event) {
    const { message, usage } = event;
    this.usage.input += usage.input_tokens;
    this.usage.output += usage.output_tokens;
    this.cost += event.cost ?? 0;
    this.context = usage.input_tokens;
    this.steps = Math.max(this.steps, event.step);
    if (message.thinking && !this.thinking) {
      this.add(
        h(
          "details",
          { class: "thinking" },
          h("summary", { text: "thinking" }),
          h("div", { class: "text", text: message.thinking }),
        ),
      );
    }
    this.thinking = null;
    if (message.text) {
      const el = this.streaming ?? this.add(h("div", { class: "assistant" }));
      el.classList.remove("streaming");
      renderMarkdown(el, message.text);
    } else {
      this.streaming?.remove();
    }
    this.streaming = null;
    for (const call of message.tool_calls) if (!QUIET.has(call.name)) this.call(call);
  }

  /** The block of a tool call: its name, its arguments, later its state and output. */
  call(call) {
    let block = this.calls.get(call.id);
    if (!block) {
      block = this.add(
        h(
          "div",
          { class: "call", "data-call": call.id, "data-state": "proposed" },
          h(
            "div",
            { class: "call-head" },
            h("span", { class: "tool", text: call.name }),
            h("span", { class: "state" }),
          ),
          argumentsView(call, { fold: true }),
        ),
      );
      this.calls.set(call.id, block);
    }
    return block;
  }

  output(event) {
    const { result } = event;
    if (event.usage) {
      this.usage.input += event.usage.input_tokens;
      this.usage.output += event.usage.output_tokens;
    }
    this.cost += event.cost ?? 0;
    if (QUIET.has(result.name) && !result.is_error) return;
    const block = this.call({ id: result.call_id, name: result.name, arguments: {} });
    block.dataset.state = result.is_error ? "error" : "done";
    const lines = result.content.split("\n").length;
    const took = event.duration_ms ? `${Math.round(event.duration_ms)} ms` : "";
    const size = `${lines} line${lines === 1 ? "" : "s"}`;
    const summary = [result.is_error ? "error" : "output", size, took].filter(Boolean).join(" · ");
    block.querySelector(".output")?.remove();
    block.append(
      h("details", { class: "output" }, h("summary", { text: summary }), h("pre", { text: result.content })),
    );
  }

  approvalCard(event) {
    const id = event.call.id;
    const answer = (approve, always) => (button) =>
      this.send(id, button, () => this.actions.approve(this, id, approve, always));
    return h(
      "div",
      { class: "card approval", "data-call": id },
      h(
        "div",
        { class: "card-head" },
        h("strong", { text: `Allow ${event.call.name}?` }),
        h("span", { class: "rule", text: event.rule }),
      ),
      argumentsView(event.call),
      h(
        "div",
        { class: "buttons" },
        button("Approve", "approve", answer(true, false)),
        button("Deny", "deny", answer(false, false)),
        button(`Always: ${event.grant}`, "always", answer(true, true)),
      ),
    );
  }

  questionCard(event) {
    const id = event.call_id;
    const reply = (text) => (button) => this.send(id, button, () => this.actions.answer(this, id, text));
    const input = h("input", {
      type: "text",
      name: "answer",
      placeholder: event.default ? `default: ${event.default}` : "your answer",
      autocomplete: "off",
    });
    const form = h(
      "form",
      { class: "reply" },
      input,
      h("button", { type: "submit", class: "send", text: "Answer" }),
    );
    form.addEventListener("submit", (submitted) => {
      submitted.preventDefault();
      if (input.value.trim()) reply(input.value)(form.querySelector("button"));
    });
    return h(
      "div",
      { class: "card question", "data-call": id },
      h("div", { class: "card-head" }, h("strong", { text: "The model asks" })),
      h("p", { class: "question-text", text: event.question }),
      event.choices.length
        ? h(
            "div",
            { class: "buttons choices" },
            ...event.choices.map((choice) => button(choice, "choice", reply(choice))),
          )
        : null,
      form,
      h("div", { class: "buttons" }, button("Dismiss", "dismiss", reply(null))),
    );
  }

  /** Sends a card's answer; its buttons wait meanwhile, and come back if it fails (the
   *  action has said why). */
  async send(callId, pressed, act) {
    const card = this.cards.get(callId);
    const controls = card.querySelectorAll("button, input");
    controls.forEach((control) => (control.disabled = true));
    pressed.classList.add("pressed");
    if (!(await act())) {
      controls.forEach((control) => (control.disabled = false));
      pressed.classList.remove("pressed");
    }
  }

  decided(event) {
    const block = this.calls.get(event.call_id);
    if (block) {
      block.dataset.state = event.allowed ? "allowed" : "denied";
      if (!event.allowed) block.querySelector(".state").textContent = `denied (${event.by}: ${event.rule})`;
    }
    if (this.cards.has(event.call_id)) {
      const said = `${event.allowed ? "Approved" : "Denied"} by ${event.by}`;
      this.settle(event.call_id, event.always ? `${said} · always: ${event.grant}` : said);
    }
  }

  /** A card answered: its controls go, what was decided stays. */
  settle(callId, said) {
    const card = this.cards.get(callId);
    if (!card) return;
    card.classList.add("settled");
    card.querySelectorAll(".buttons, form.reply").forEach((el) => el.remove());
    card.append(h("div", { class: "settled-text", text: said }));
  }

  finish(event) {
    this.finished = event;
    this.streaming?.remove();
    this.streaming = null;
    const head = ENDINGS[event.stop_reason] ?? `Stopped: ${event.stop_reason}`;
    const ending = h(
      "div",
      { class: "finish", "data-reason": event.stop_reason },
      h("div", { class: "who", text: head }),
    );
    if (event.detail) ending.append(h("div", { class: "detail", text: event.detail }));
    if (event.final_answer) {
      const answer = h("div", { class: "answer" });
      renderMarkdown(answer, event.final_answer);
      ending.append(answer);
    }
    this.add(ending);
  }

  /** A subagent's event, one line in the block of the call that started it. */
  subagent(path, event) {
    const block = this.calls.get(path[0]);
    if (!block) return;
    let said = null;
    if (event.kind === "tool_call_started")
      said = `${event.call.name} ${JSON.stringify(event.call.arguments)}`;
    else if (event.kind === "run_finished") said = `finished: ${event.stop_reason}`;
    else if (event.kind === "notice") said = `${event.source}: ${event.text}`;
    if (said === null) return;
    let list = block.querySelector(".subagent");
    list ??= block.insertBefore(h("ul", { class: "subagent" }), block.querySelector(".output"));
    list.append(h("li", { text: `${"↳ ".repeat(path.length)}${said}` }));
  }
}

function button(label, kind, onclick) {
  const el = h("button", { type: "button", class: kind, text: label });
  el.addEventListener("click", () => onclick(el));
  return el;
}

export function minutes(seconds) {
  return seconds >= 120 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds)} s`;
}
