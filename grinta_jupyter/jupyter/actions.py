"""The Approve / Edit / Veto bar of a step card, with keyboard shortcuts.

A small anywidget: plain ipywidgets cannot listen for keys. The bar takes
focus when it appears; Enter approves and Escape vetoes while it (or a
button in it) has focus. Each press sends ``{"event": "action", "action": ...}``
to the kernel, which is also how tests press it without a browser.
"""

from __future__ import annotations

from collections.abc import Callable

import anywidget
import traitlets

_ESM = """
function render({ model, el }) {
  const bar = document.createElement("div");
  bar.className = "grinta-actions";
  bar.tabIndex = 0;
  bar.setAttribute("role", "toolbar");
  bar.setAttribute("aria-label", "Approve (Enter), Edit, or Veto (Escape) this step");
  bar.style.cssText = "display:flex;gap:6px;align-items:center;padding:4px 0;outline-offset:2px";
  const send = (action) => model.send({ event: "action", action });
  const make = (label, action, title, color) => {
    const b = document.createElement("button");
    b.textContent = label;
    b.title = title;
    b.dataset.action = action;
    b.className = "jupyter-button grinta-" + action;
    b.style.cssText = "padding:2px 12px;border-radius:4px;cursor:pointer;border:1px solid " + color +
      ";color:" + color + ";background:transparent";
    b.addEventListener("click", () => send(action));
    bar.appendChild(b);
    return b;
  };
  make("Approve", "approve", "Commit this step (Enter)", "#1a7f37");
  make("Edit", "edit", "Edit the arguments, then re-validate", "#0969da");
  make("Veto", "veto", "Refuse this step and tell the model why (Escape)", "#cf222e");
  const hint = document.createElement("span");
  hint.style.cssText = "color:var(--jp-ui-font-color2, #57606a);font-size:11px";
  bar.appendChild(hint);
  const sync = () => {
    const enabled = model.get("enabled");
    bar.style.display = enabled ? "flex" : "none";
    hint.textContent = model.get("hint");
    if (enabled) { setTimeout(() => bar.focus({ preventScroll: true }), 0); }
  };
  bar.addEventListener("keydown", (e) => {
    if (!model.get("enabled")) return;
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); e.stopPropagation(); send("approve"); }
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); send("veto"); }
  });
  model.on("change:enabled", sync);
  model.on("change:hint", sync);
  sync();
  el.appendChild(bar);
}
export default { render };
"""


class ActionBar(anywidget.AnyWidget):
    """Approve / Edit / Veto buttons; ``on_action(callback)`` receives the action name."""

    _esm = _ESM
    enabled = traitlets.Bool(True).tag(sync=True)
    hint = traitlets.Unicode("Enter approves, Escape vetoes").tag(sync=True)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._callbacks: list[Callable[[str], None]] = []
        self.on_msg(self._handle)

    def on_action(self, callback: Callable[[str], None]) -> None:
        self._callbacks.append(callback)

    def press(self, action: str) -> None:
        """Act as if ``action`` was pressed (used by magics and tests)."""
        self._handle(self, {"event": "action", "action": action}, [])

    def _handle(self, _widget: object, content: dict, _buffers: list) -> None:
        if not isinstance(content, dict) or content.get("event") != "action" or not self.enabled:
            return
        action = content.get("action")
        if action in ("approve", "edit", "veto"):
            for callback in list(self._callbacks):
                callback(action)
