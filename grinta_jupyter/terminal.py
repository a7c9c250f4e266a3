"""A session in the terminal: each step shown once, each proposal decided at a prompt.

``grinta run`` and ``grinta demo`` (``cli.py``) build a session and hand it to
``steer``: a loop over the session's typed updates (``session.updates()``) that
shows each with a ``Console`` and answers each ``NeedsDecision`` at a prompt. This module sits in
the same layer as the CLI: it may import ``agent/``, ``events/`` and
``runtime/``, and it imports nothing heavy at module import.

Deciding: a proposal is approved only on an explicit yes (Enter, ``y``,
``yes``); ``v``/``veto``/``n``/``no`` veto it, ``e``/``edit`` edit it,
``m TEXT``/``message TEXT``/``say TEXT`` tells the model something
(``Session.say``: it reads it at its next turn) and asks again, the proposal
still waiting; any other answer asks again. A byte-order mark or another
invisible character around a word is not part of it, and a full-width letter
is the letter (``_word``). A write of several hunks also offers
``h``/``hunk``/``hunks``: each hunk is shown and answered in turn, and only the
accepted ones are re-validated and committed (``ApproveHunks``). End of input
(Ctrl-D, a closed pipe) vetoes the pending proposal and stops the session:
stdin will not answer again, and stopping costs nothing while another model
turn costs tokens. Ctrl-C stops the session wherever it lands (the prompt, a
model call). At a terminal, an Enter typed before the question appeared (pressed
while the model thought, the end of a pasted block) does not approve: it and the rest
typed ahead are dropped and the question asked again (``_read_answer``).

Everything shown that came from the model, the files or a command passes
through ``runtime.display.visible``, so no escape sequence in it reaches the
terminal raw.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import unicodedata
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from grinta_jupyter.runtime.display import (
    ESCAPE_MARKS_NOTE,
    RowSpaces,
    escape_marks,
    has_unsafe,
    parts_marks,
    row_parts,
    row_spaces,
    visible,
)

if TYPE_CHECKING:
    from grinta_jupyter.agent.session import Session
    from grinta_jupyter.agent.step import Step
    from grinta_jupyter.runtime.hunks import Hunk
    from grinta_jupyter.runtime.secrets import Secrets

SHOWN_OUTPUT_CHARS = 2000

PROMPT = "approve? [Y]es / [v]eto / [e]dit / [m]essage: "
HUNKS_PROMPT = "approve? [Y]es / [v]eto / [e]dit / [m]essage / [h]unk by hunk: "
HINT = (
    "answer y or Enter to approve, v or n to veto (you give a reason), e to edit, "
    "m TEXT to tell the model something first"
)
HUNKS_HINT = HINT + ", h to choose hunk by hunk"
SAY_PROMPT = "message for the model (it reads it at its next turn): "
SAID = "said: the model reads it at its next turn; this proposal still waits"
APPROVE_WORDS = frozenset({"", "y", "yes"})
VETO_WORDS = frozenset({"v", "veto", "n", "no"})
EDIT_WORDS = frozenset({"e", "edit"})
HUNK_WORDS = frozenset({"h", "hunk", "hunks"})
SAY_WORDS = frozenset({"m", "say", "message"})
YES_WORDS = frozenset({"y", "yes"})
NO_WORDS = frozenset({"n", "no"})
DEFAULT_VETO_REASON = "vetoed by the user"
STDIN_CLOSED = "stopped: standard input closed"
INTERRUPTED = "interrupted by the user"


# -- the session, step by step ---------------------------------------------------------------


def steer(session: Session, console: Console) -> bool:
    """Step ``session`` to its end, asking about each proposal; False when Ctrl-C stopped it.
    ``console`` redacts the session's secrets from what it shows."""
    console.secrets = session.secrets
    return _run_until_done(session, _drive(session, console))


def _run_until_done(session: Session, driver: Coroutine[Any, Any, None]) -> bool:
    """Run ``driver`` on a loop of its own; False when Ctrl-C stopped the session.

    Not ``asyncio.run``: its Ctrl-C handler cancels the task instead of raising,
    which a blocking prompt never sees. Here Ctrl-C raises where it lands (the
    prompt, the model call), the session is stopped, and what is still running
    is cancelled and waited for. Where it lands in code that swallows exceptions (a
    finalizer, a library's "exception ignored"), ``_CtrlC`` raises it again from the loop.
    """
    loop = asyncio.new_event_loop()
    task = loop.create_task(driver)
    ctrl_c = _CtrlC(loop)
    try:
        loop.run_until_complete(task)
        return True
    except KeyboardInterrupt:
        if not session.done:
            session.stop(INTERRUPTED)
        return False
    except Exception:
        if not session.done:  # a bug: still end the log, then let main report it
            session.stop("internal error")
        raise
    finally:
        ctrl_c.close()
        try:
            if task.done() and not task.cancelled():
                task.exception()  # seen here, so asyncio does not log it again
            pending = asyncio.all_tasks(loop)
            for left in pending:
                left.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


class _CtrlC:
    """Ctrl-C that cannot be lost: the first SIGINT is remembered as well as raised, and
    a loop callback raises KeyboardInterrupt again while one is remembered (asyncio lets
    KeyboardInterrupt out of callbacks). Only in the main thread, and only over Python's
    own handler; ``close`` puts that back. SIGTERM (``kill``, a CI job's timeout, a closed
    terminal's supervisor), where nothing else handles it, ends the session the same way:
    it is stopped and its log ends with the reason, instead of the process dying mid-step."""

    TICK_S = 0.2

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.pressed = False
        self._tick: asyncio.TimerHandle | None = None
        main = threading.current_thread() is threading.main_thread()
        self._installed = main and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        self._term = main and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        if self._installed:
            signal.signal(signal.SIGINT, self._on_signal)
            self._tick = loop.call_later(self.TICK_S, self._check, loop)
        if self._term:
            signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.pressed = True
        raise KeyboardInterrupt

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        self._tick = loop.call_later(self.TICK_S, self._check, loop)
        if self.pressed:
            self.pressed = False  # raised once more; a swallowed one is raised again
            raise KeyboardInterrupt

    def close(self) -> None:
        if self._tick is not None:
            self._tick.cancel()
        if self._installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if self._term:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


async def _drive(session: Session, console: Console) -> None:
    """Show each update of ``session`` once and ask about each proposal that needs it.

    The prompt blocks the loop on purpose: nothing else runs while a person decides.
    """
    from grinta_jupyter.agent.updates import (
        ContextCondensed,
        ModelText,
        NeedsDecision,
        StepObserved,
        StepProposed,
    )
    from grinta_jupyter.runtime.secrets import StreamRedactor

    closing: Step | None = None  # vetoed because stdin closed: stop once it is observed
    text = StreamRedactor(session.secrets)  # a printed piece cannot be taken back
    async for update in session.updates():
        if isinstance(update, ModelText):
            console.model_text(text.feed(update.text))
            continue
        console.model_text(text.end())  # the text before what follows it
        if isinstance(update, StepProposed):
            console.show_proposal(update.step)
        elif isinstance(update, ContextCondensed):
            console.say(
                f"\n    (older turns condensed ({update.method}) to keep the request under "
                f"{update.budget:,} tokens: {update.tokens_before:,} -> {update.tokens_after:,})"
            )
        elif isinstance(update, StepObserved):
            console.show_observation(update.step)
            if update.step is closing and not session.done:
                console.say("standard input closed: the proposal was vetoed and the session stops")
                session.stop(STDIN_CLOSED)
        elif (
            isinstance(update, NeedsDecision) and session.waiting and not _decide(session, console)
        ):
            closing = update.step


def _decide(session: Session, console: Console) -> bool:
    """Ask until the pending proposal is decided; False when stdin closed (it is vetoed then)."""
    from grinta_jupyter.agent.updates import Approve, Veto
    from grinta_jupyter.runtime.hunks import hunks

    step = session.pending
    assert step is not None
    while True:
        several = step.proposal.ok and len(hunks(step.proposal)) > 1
        answer = _read_answer(HUNKS_PROMPT if several else PROMPT, console)
        if answer is None:
            session.decide(Veto("no answer: standard input closed"))
            return False
        word = _word(answer)
        if word in APPROVE_WORDS:
            session.decide(Approve())
            return True
        if word in VETO_WORDS:
            reason = _read_line("reason: ")
            session.decide(Veto((reason or "").strip() or DEFAULT_VETO_REASON))
            return reason is not None
        if word in EDIT_WORDS:
            _edit(session, step, console)
            continue
        said = _said(answer)
        if said is not None:
            if not said:
                typed = _read_line(SAY_PROMPT)
                if typed is None:
                    session.decide(Veto("no answer: standard input closed"))
                    return False
                said = typed.strip()
            if said:
                session.say(said)
                console.say(SAID)
            else:
                console.say("nothing was said")
            continue
        if several and word in HUNK_WORDS:
            decided = _choose_hunks(session, step, console)
            if decided is not None:
                return decided
            continue
        console.say(HUNKS_HINT if several else HINT)


def _word(answer: str) -> str | None:
    """The word an answer means, or None when it is only invisible characters.

    A person types what they see: a byte-order mark (a file of answers saved with
    one) or another invisible format character is not part of their word, and a
    full-width letter is the letter (NFKC). A look-alike from another script (a
    Cyrillic "у") stays what it is, an answer we do not know. Only a line with
    nothing at all on it is the Enter that approves.
    """
    text = unicodedata.normalize("NFKC", answer)
    word = "".join(c for c in text if unicodedata.category(c) != "Cf").strip().lower()
    return None if not word and answer.strip() else word


def _said(answer: str) -> str | None:
    """The text of an ``m TEXT`` / ``say TEXT`` answer ("" when only the word), else None."""
    parts = answer.strip().split(maxsplit=1)
    if not parts or _word(parts[0]) not in SAY_WORDS:
        return None
    return parts[1].strip() if len(parts) > 1 else ""


def _choose_hunks(session: Session, step: Step, console: Console) -> bool | None:
    """Ask hunk by hunk; None when nothing was decided (the person asks again).

    Accepting every hunk approves; accepting none vetoes; anything between is an
    ``ApproveHunks``, which stays undecided when the chosen hunks do not validate.
    """
    from grinta_jupyter.agent.updates import Approve, ApproveHunks, Veto
    from grinta_jupyter.runtime.hunks import hunks

    every = hunks(step.proposal)
    accepted: list[int] = []
    for hunk in every:
        console.hunk(hunk, len(every))
        while True:
            answer = _read_line(f"apply hunk {hunk.index + 1} of {len(every)}? [y/n]: ")
            if answer is None:
                session.decide(Veto("no answer: standard input closed"))
                return False
            word = _word(answer)
            if word in YES_WORDS | NO_WORDS:
                break
            console.say("answer y to apply this hunk, n to leave it out")
        if word in YES_WORDS:
            accepted.append(hunk.index)
    if len(accepted) == len(every):
        session.decide(Approve())
        return True
    reason = _read_line("why leave those out? (the model reads this; Enter for no reason): ")
    if reason is None:
        session.decide(Veto("no answer: standard input closed"))
        return False
    if not accepted:
        session.decide(Veto(reason.strip() or DEFAULT_VETO_REASON))
        return True
    chosen = session.decide(ApproveHunks(accepted, reason.strip()))
    if chosen is not None and chosen.error is not None:
        console.say(
            f"those hunks do not validate on their own ({chosen.error.code}: "
            f"{chosen.error.message}); nothing was decided"
        )
        return None
    return True


# -- editing a proposal ----------------------------------------------------------------------


def _edit(session: Session, step: Step, console: Console) -> None:
    """Let the person rewrite the pending call's arguments; a valid change is proposed anew."""
    current = _pretty_arguments(step.call.arguments)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if editor and editor.strip() and _isatty(sys.stdin):
        text = _edit_in_editor(editor, current, console)
    else:
        text = _edit_at_prompt(current, console)
    if text is None or not text.strip() or text.strip() == current.strip():
        console.say("the proposal is unchanged")
        return
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        console.say(f"not valid JSON ({exc}); the proposal is unchanged")
        return
    if not isinstance(value, dict):
        console.say(
            f"the arguments must be a JSON object {{...}}, not {type(value).__name__}; "
            "the proposal is unchanged"
        )
        return
    from grinta_jupyter.agent.models.base import parsed_arguments  # the CLI starts light

    if value == parsed_arguments(step.call.arguments):
        console.say("the proposal is unchanged")
        return
    proposal = session.edit(value)
    console.show_proposal(step)
    if not proposal.ok:
        console.say(
            "the edited call does not validate: edit again, veto, or approve to send the error "
            "to the model"
        )


def _edit_in_editor(editor: str, current: str, console: Console) -> str | None:
    """The text the person saved in their editor, or None when they gave up or it failed."""
    try:
        command = shlex.split(editor)
    except ValueError as exc:
        console.say(f"cannot read the editor command {editor!r}: {exc}")
        return None
    fd, name = tempfile.mkstemp(prefix="grinta-edit-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(current + "\n")
        try:
            done = subprocess.run([*command, name], check=False)
        except OSError as exc:
            console.say(f"cannot run the editor {command[0]!r}: {exc.strerror or exc}")
            return None
        if done.returncode != 0:
            console.say(f"the editor exited with status {done.returncode}")
            return None
        try:
            return Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            console.say(f"cannot read the edited arguments: {exc}")
            return None
    finally:
        Path(name).unlink(missing_ok=True)


def _edit_at_prompt(current: str, console: Console) -> str:
    """Lines typed at the prompt up to an empty line (or the end of input)."""
    console.say("current arguments:")
    console.block(current)
    console.say("new arguments as JSON, ending with an empty line (only Enter keeps them):")
    lines: list[str] = []
    while True:
        line = _read_line("")
        if line is None or not line.strip():
            return "\n".join(lines)
        lines.append(line)


def _pretty_arguments(arguments: str) -> str:
    """The call's arguments as indented JSON, every unsafe character written as a \\u escape."""
    from grinta_jupyter.agent.models.base import parsed_arguments  # the CLI starts light

    value = parsed_arguments(arguments)
    if value is None:
        return arguments
    text = json.dumps(value, indent=2, ensure_ascii=False)
    if not has_unsafe(text):
        return text
    # Inside JSON strings an escape is the same value, and an editor shows it as it is; JSON's
    # own (a character past U+FFFF is two \\u escapes: "\\ue0041" would read as U+E004, "1").
    return "".join(json.dumps(c)[1:-1] if has_unsafe(c) else c for c in text)


# -- what is shown ---------------------------------------------------------------------------


class Console:
    """What the CLI shows a person: each step once, untrusted text only as ``visible``, and
    the session's secrets redacted (``steer`` gives it them) from every text, whole before
    any cut, and from diffs row by row, as the notebook's cards are."""

    def __init__(self, out: TextIO, color: bool | None = None, secrets: Secrets | None = None):
        self.out = out
        if color is None:
            color = _isatty(out) and not os.environ.get("NO_COLOR")
        self.color = color
        self.secrets = secrets
        self._proposals: set[int] = set()  # ids of the proposals shown
        self._outputs: set[int] = set()

    def _clean(self, text: str) -> str:
        return self.secrets.redact(text) if self.secrets is not None else text

    def _clean_diff(self, diff: str) -> str:
        return self.secrets.redact_diff(diff) if self.secrets is not None else diff

    def say(self, line: str) -> None:
        print(visible(self._clean(line)), file=self.out, flush=True)

    def block(self, text: str) -> None:
        print(_indent(visible(self._clean(text))), file=self.out, flush=True)

    def model_text(self, piece: str) -> None:
        """Streamed model text: escapes are per character, so a split sequence stays harmless."""
        print(visible(piece), end="", file=self.out, flush=True)

    def show_proposal(self, step: Step) -> None:
        """A step's proposal, once (an edited call is a new proposal, shown again)."""
        if step.proposal.id not in self._proposals:
            self._proposals.add(step.proposal.id)
            self.proposal(step)

    def show_observation(self, step: Step) -> None:
        """A step's outcome, once."""
        if step.observation is not None and step.number not in self._outputs:
            self._outputs.add(step.number)
            self.observation(step)

    def hunk(self, hunk: Hunk, total: int) -> None:
        """One hunk of a pending write, for choosing hunk by hunk."""
        from grinta_jupyter.runtime.diffs import quote_path

        where = visible(quote_path(self._clean(hunk.path), ascii_only=True), keep_newlines=False)
        made = " (a new file: this hunk creates it)" if hunk.new_file else ""
        lines = [f"--- hunk {hunk.index + 1} of {total} in {where}{made}"]
        lines.extend("    " + line for line in hunk_lines(hunk, self.color, self._clean))
        print("\n".join(lines), file=self.out, flush=True)

    def proposal(self, step: Step) -> None:
        p = step.proposal
        name = visible(self._clean(step.call.name), keep_newlines=False)
        if p.command is not None:  # what will run is shown whole, every line of it
            lines = [f"\n=== step {step.number}: {name}"]
            for i, line in enumerate(self._clean(p.command).split("\n")):
                lines.append(
                    ("    $ " if i == 0 else "    > ") + visible(line, keep_newlines=False)
                )
                if marks := escape_marks(line):  # Python reads a lone "\r" as a line break
                    lines.append(f"      {marks} {ESCAPE_MARKS_NOTE}")
        else:
            arguments = self._clean(step.call.arguments)
            cut = len(arguments) - ARGUMENTS_SHOWN
            shown = visible(arguments[:ARGUMENTS_SHOWN], keep_newlines=False)
            if cut > 0:
                shown += (
                    f" [... {cut} more characters{'; the diff shows the change' if p.diff else ''}]"
                )
            lines = [f"\n=== step {step.number}: {name} {shown}"]
        if p.changes and p.ok:  # as on the card: what the diff cannot show (outputs cleared)
            lines.append("    · " + visible(self._clean(p.summary), keep_newlines=False))
        if step.stale:
            lines.append(
                "    ! staged again on resume, and the files changed since: "
                + visible(self._clean(step.stale), keep_newlines=False)
            )
        elif step.restaged:
            lines.append("    (staged again on resume; its files are as they were)")
        for r in p.resolutions:
            lines.append(
                "    "
                + visible(
                    self._clean(f"resolved {r.target!r} -> {r.chosen or 'nothing'} ({r.reason})"),
                    keep_newlines=False,
                )
            )
        if p.diff:
            lines.extend("    " + line for line in diff_lines(self._clean_diff(p.diff), self.color))
        if p.error is not None:
            lines.append(_indent(visible(self._clean(p.error.render()))))
        print("\n".join(lines), file=self.out, flush=True)

    def observation(self, step: Step) -> None:
        obs = step.observation
        assert obs is not None
        if obs.error is not None and obs.error == step.proposal.error:
            return  # shown with the proposal
        output = self._clean(obs.output)  # whole: a cut must not leave half a secret
        shown = (
            output.split("\n")[0] if step.proposal.diff and output else output[:SHOWN_OUTPUT_CHARS]
        )
        if shown.strip():  # "| " sets output apart from diff rows and from our own lines
            print(_indent(visible(shown), "    | "), file=self.out, flush=True)


ARGUMENTS_SHOWN = 300  # of a call's arguments on its header line (commands are shown whole)
_STYLES = {"add": "\x1b[32m", "del": "\x1b[31m", "hunk": "\x1b[36m", "file": "\x1b[1m"}
_RESET = "\x1b[0m"
# Rows are marked "+ ", "- " and "  " (as text/plain does), so no row can look like a
# "--- a/..." / "+++ b/..." header or an "@@" line, whatever its text.
_MARKS = {"add": "+ ", "del": "- ", "context": "  "}


def diff_lines(diff: str, color: bool = False) -> list[str]:
    """A unified diff as lines to print: each row marked by its role, its text made visible.

    Rows are read by their hunk's counts (``parse_unified``), never by their first
    character, and only our own colour codes are added (when ``color``). Whitespace a
    change may be all about is escaped as the cards draw it (``display.row_spaces``).
    A file name is C-quoted as git shows it, every character past ASCII escaped, so a
    look-alike letter from another script never reads as the file it imitates.
    """
    from grinta_jupyter.runtime.diffs import parse_unified, quote_path

    def paint(style: str, line: str) -> str:
        return f"{_STYLES[style]}{line}{_RESET}" if color else line

    def path(name: str | None, prefix: str) -> str:
        return (
            "/dev/null"
            if name is None
            else visible(quote_path(prefix + name, ascii_only=True), keep_newlines=False)
        )

    out: list[str] = []
    for f in parse_unified(diff):
        if f.old_path is not None or f.new_path is not None:
            out.append(paint("file", f"--- {path(f.old_path, 'a/')}"))
            out.append(paint("file", f"+++ {path(f.new_path, 'b/')}"))
        out.extend(visible(note, keep_newlines=False) for note in f.notes)
        for hunk in f.hunks:
            out.append(paint("hunk", visible(hunk.header, keep_newlines=False)))
            rows = [(row.role, row.text) for row in hunk.rows]
            for spaces, (role, text) in zip(row_spaces(rows), rows, strict=True):
                out.extend(_row_lines(role, text, color, spaces))
    return out


def hunk_lines(hunk: Hunk, color: bool = False, clean: Callable[[str], str] = str) -> list[str]:
    """A hunk's header and rows, marked as in ``diff_lines``, each text through ``clean``
    (the console's redaction) first.

    The rows come from the runtime's own hunk (``runtime.hunks``), not parsed
    from text: the first character of each is its role by construction.
    """
    roles = {"+": "add", "-": "del", " ": "context"}
    header = visible(clean(hunk.header), keep_newlines=False)  # a notebook's names its cell
    out = [f"{_STYLES['hunk']}{header}{_RESET}" if color else header]
    rows = []
    for row in hunk.lines:
        role = roles.get(row[:1], "note")
        rows.append((role, clean(row[1:]).strip() if role == "note" else clean(row[1:])))
    for spaces, (role, text) in zip(row_spaces(rows), rows, strict=True):
        out.extend(_row_lines(role, text, color, spaces))
    return out


_ESCAPE_STYLE = "\x1b[33m"


def _row_lines(role: str, text: str, color: bool, spaces: RowSpaces = "odd") -> list[str]:
    """A row marked by its role, its text made visible (and the whitespace ``spaces`` asks
    for escaped). A real carriage return must not read as the ``\\r`` typed in code: with
    colour its escapes are yellow; without, a note of carets under them follows the row."""
    if role == "note":
        return [f"\\ {visible(text, keep_newlines=False)}"]
    parts = row_parts(text, spaces)
    if not color:
        row = _MARKS[role] + "".join(part for part, _ in parts)
        marks = parts_marks(parts)
        return [row, f"\\ {marks} {ESCAPE_MARKS_NOTE}"] if marks else [row]
    back = _STYLES.get(role, _RESET)  # after an escape, the row's own colour again
    shown = "".join(f"{_ESCAPE_STYLE}{part}{back}" if escaped else part for part, escaped in parts)
    if role == "context":
        return [_MARKS[role] + shown]
    return [f"{_STYLES[role]}{_MARKS[role]}{shown}{_RESET}"]


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.rstrip().split("\n"))


# -- the streams -----------------------------------------------------------------------------


def _read_line(prompt: str) -> str | None:
    """One line from stdin, or None at its end (Ctrl-D, a closed pipe, no stdin at all).

    Not ``input()``: it fails outright when stdin, stdout or stderr is closed.
    """
    if prompt:
        print(prompt, end="", flush=True)
    line = sys.stdin.readline() if sys.stdin is not None else ""
    if prompt and (not line or not _isatty(sys.stdin)):
        print()  # nothing was echoed: end the prompt's line
    return line.removesuffix("\n") if line else None


TYPED_AHEAD = (
    "(an Enter typed before this question appeared does not approve it; what else was typed "
    "ahead was dropped: answer now)"
)


def _read_answer(prompt: str, console: Console) -> str | None:
    """``_read_line`` for the question Enter answers with an approval.

    At a terminal, an empty line that was typed before the question appeared (an Enter
    pressed while the model was thinking, the last line of a pasted block) is no answer:
    nobody had read the proposal yet. It and whatever else was typed ahead are dropped,
    the person is told, and the question is asked again. A word typed ahead (``n``,
    ``y``) still answers: it was meant as one. Piped answers are a script written for
    these questions and are read as they come.
    """
    while True:
        ahead = _typed_ahead()
        answer = _read_line(prompt)
        if not ahead or answer is None or _word(answer) != "":
            return answer
        _drop_typed_ahead()
        console.say(TYPED_AHEAD)


def _typed_ahead() -> bool:
    """Whether a terminal on stdin holds input nobody has read yet (never for a pipe)."""
    if not _isatty(sys.stdin):
        return False
    try:
        waiting, _, _ = select.select([sys.stdin.fileno()], [], [], 0)
    except (OSError, ValueError):
        return False
    return bool(waiting)


def _drop_typed_ahead() -> None:
    """Discard the input a terminal on stdin holds unread (POSIX; elsewhere nothing)."""
    try:
        import termios

        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError):
        pass


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False


def tolerant_streams() -> None:
    """Never fail on a character the terminal's encoding lacks, in or out."""
    for stream, errors in ((sys.stdout, "backslashreplace"), (sys.stderr, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors=errors)
    # An answer that is not text in the locale's encoding is an answer we do not know, not a crash.
    reconfigure = getattr(sys.stdin, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="replace")
