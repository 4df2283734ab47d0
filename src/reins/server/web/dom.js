// Building elements without HTML strings: every text goes in as a text node, so nothing a
// model, a tool or a user wrote is ever parsed as markup (markdown.js is the one exception,
// and it sanitizes).

/** An element: `props` sets `class`, `text` (its text), `on<event>` handlers and attributes;
 *  `children` are elements or strings (appended as text). */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  el.append(...children.filter((child) => child !== null && child !== undefined && child !== false));
  return el;
}

export const $ = (selector) => document.querySelector(selector);

/** A tool call's arguments, verbatim: each text argument as it is (a command, a file's
 *  content), anything else as JSON; with `fold`, a long one folded. */
export function argumentsView(call, { fold = false } = {}) {
  const list = h("dl", { class: "args" });
  if (call.raw_arguments) {
    list.append(
      h("dt", { text: "arguments (not valid JSON)" }),
      h("dd", {}, h("pre", { text: call.raw_arguments })),
    );
    return list;
  }
  for (const [name, value] of Object.entries(call.arguments ?? {})) {
    const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    const lines = text.split("\n").length;
    const shown = h("pre", { text });
    const folded =
      fold && lines > 12 ? h("details", {}, h("summary", { text: `${lines} lines` }), shown) : shown;
    list.append(h("dt", { text: name }), h("dd", {}, folded));
  }
  return list;
}

export function tokens(count) {
  return count >= 10_000
    ? `${(count / 1000).toFixed(0)}k`
    : count >= 1000
      ? `${(count / 1000).toFixed(1)}k`
      : String(count);
}

export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
