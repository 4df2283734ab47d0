// The model's text as markdown (marked), always sanitized (DOMPurify) into a fragment: no
// script, no event handler, no link but http(s), mailto and in-page ones. Only this module
// turns text into markup; under the page's Trusted Types policy nothing else could.

import { marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.js";

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

const SANITIZE = {
  RETURN_DOM_FRAGMENT: true,
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "dialog", "svg", "math"],
  FORBID_ATTR: ["style"],
};

/** Replaces `element`'s content with `text` rendered as markdown, sanitized. */
export function renderMarkdown(element, text) {
  const html = marked.parse(text, { async: false, gfm: true });
  element.replaceChildren(DOMPurify.sanitize(html, SANITIZE));
}
