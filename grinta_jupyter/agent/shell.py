"""Reading a shell command line the way a shell would, without running it.

``segments`` splits a command into its simple commands (shlex, on ``;`` ``&&``
``||`` ``|`` ``&`` ``(`` ``)`` and newlines), after dropping what a shell would
not run as commands: comments, heredoc bodies and ``$(...)`` substitutions.
``bash -c "..."`` and ``eval "..."`` are read as the commands they hold.
``unwrap`` strips what only starts the real program: environment assignments
and wrappers (``env``, ``timeout 60``, ``nice``, ``uv run``, ``poetry run``,
``npx``, ``bundle exec``, ...). An unparsable command has no segments.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field


@dataclass
class Segment:
    """One simple command of a command line."""

    words: list[str]
    joined_by: str = ""  # the operator before it: "", ";", "&&", "||", "|", "&", "(", ")", "\n"
    writes: list[str] = field(default_factory=list)  # files its output redirections write
    piped: bool = False  # its output goes into the next command, not to the screen
    background: bool = False
    reads: bool = False  # its input comes from a file or a heredoc (``< f``, ``<<EOF``)

    @property
    def text(self) -> str:
        return shlex.join(self.words)[:80]


_OPERATORS = (
    "&&", "||", ";;", "|&", "&>>", "&>", ">>", ">&", "<<<", "<<", "<>", ">|",
    ";", "|", "&", "(", ")", "<", ">", "\n",
)  # fmt: skip
_SEPARATORS = {"&&", "||", ";;", "|&", ";", "|", "&", "(", ")", "\n"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w.-]*)\1")
_SUBSTITUTION = re.compile(r"\$\((?:[^()]|\([^()]*\))*\)|`[^`]*`")


_MAX_NESTING = 4  # bash -c "eval 'sh -c ...'" deeper than this is read as one opaque command


def segments(command: str, depth: int = 0) -> list[Segment]:
    """The simple commands of ``command`` (an unparsable command has none)."""
    try:
        tokens = _tokens(prepare(command))
    except ValueError:
        return []
    result: list[Segment] = []
    current = Segment([])
    pending_write = False
    for token in tokens:
        if token in _SEPARATORS:
            if current.words or current.writes:
                if token == "|" or token == "|&":
                    current.piped = True
                if token == "&":
                    current.background = True
                result.append(current)
            current = Segment([], joined_by=token)
            continue
        if token in _OPERATORS:  # a redirection: its target is the next word
            if current.words and current.words[-1].isdigit():
                current.words.pop()  # the "2" of "2>&1"
            pending_write = token in (">", ">>", "&>", "&>>", ">|", ">&")
            current.reads = current.reads or token in ("<", "<<", "<<<", "<>")
            current.words.append("\0redirect")
            continue
        if current.words and current.words[-1] == "\0redirect":
            current.words.pop()
            if pending_write and not token.isdigit() and token not in ("-", "/dev/null"):
                current.writes.append(token)
            continue
        current.words.append(token)
    if current.words or current.writes:
        result.append(current)
    expanded: list[Segment] = []
    for segment in result:
        segment.words = [w for w in segment.words if w != "\0redirect"]
        inner = _inner_script(segment.words) if depth < _MAX_NESTING else None
        if inner is None:
            expanded.append(segment)
            continue
        nested = segments(inner, depth + 1)
        if nested:
            nested[0].joined_by = segment.joined_by
            nested[-1].piped, nested[-1].background = segment.piped, segment.background
        expanded.extend(nested)
    return expanded


def prepare(command: str) -> str:
    """Drop what a shell would not run as commands: heredoc bodies, comments, ``$(...)``."""
    lines = command.replace("\\\n", " ").split("\n")
    kept: list[str] = []
    delimiter: str | None = None
    for line in lines:
        if delimiter is not None:
            if line.strip() == delimiter:
                delimiter = None
            continue
        match = _HEREDOC.search(line)
        if match:
            delimiter = match.group(2)
        kept.append(_strip_comment(line))
    return _SUBSTITUTION.sub("SUBSTITUTION", "\n".join(kept))


def _strip_comment(line: str) -> str:
    """``line`` without a shell comment: a ``#`` that starts a word, outside quotes."""
    quote: str | None = None
    previous = " "
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (previous.isspace() or previous in ";&|()"):
            return line[:i]
        previous = ch
    return line


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"  # a newline separates commands
    lexer.commenters = ""
    lexer.whitespace_split = True
    tokens: list[str] = []
    for token in lexer:
        if token and all(ch in ";&|()<>\n" for ch in token):
            tokens.extend(_split_operators(token))
        else:
            tokens.append(token)
    return tokens


def _split_operators(run: str) -> list[str]:
    out: list[str] = []
    while run:
        op = next(o for o in (*_OPERATORS, run[0]) if run.startswith(o))
        out.append(op)
        run = run[len(op) :]
    return out


def _inner_script(words: list[str]) -> str | None:
    """The script of ``bash -c "..."``, ``sh -lc '...'`` or ``eval "..."``."""
    words = unwrap(words)
    if not words:
        return None
    base = base_name(words[0])
    if base == "eval":
        return " ".join(words[1:])
    if base in ("sh", "bash", "zsh", "dash", "ksh"):
        for i, word in enumerate(words[1:], 1):
            if word.startswith("-") and not word.startswith("--") and "c" in word:
                return words[i + 1] if i + 1 < len(words) else None
    return None


def base_name(word: str) -> str:
    return word.replace("\\", "/").rsplit("/", 1)[-1].lower()


# Wrappers that run the rest of the line: name -> options that take a value.
_WRAPPERS: dict[str, set[str]] = {
    "env": {"-u", "--unset", "-C", "--chdir", "-S"},
    "time": set(),
    "command": set(),
    "exec": {"-a"},
    "nohup": set(),
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n"},
    "stdbuf": {"-i", "-o", "-e"},
    "xvfb-run": {"-s", "--server-args", "-n", "--server-num"},
    "unbuffer": set(),
    "sudo": {"-u", "-g"},
    "npx": {"-p", "--package"},
    "bunx": set(),
    "pnpx": set(),
    "uvx": {"--with", "--from", "--python", "-p"},
}
# "<tool> run ..." / "<tool> exec ...": name -> (sub-commands, options that take a value).
_RUNS: dict[str, tuple[set[str], set[str]]] = {
    "uv": ({"run"}, {"--with", "--python", "-p", "--extra", "--group", "--package", "--directory",
                     "--project", "--env-file", "--index", "--index-url", "--only-group"}),
    "poetry": ({"run"}, {"-C", "--directory", "-P", "--project"}),
    "pipenv": ({"run"}, set()),
    "pdm": ({"run"}, {"-p", "--project"}),
    "hatch": ({"run"}, {"-e", "--env"}),
    "rye": ({"run"}, set()),
    "pixi": ({"run"}, {"-e", "--environment", "--manifest-path"}),
    "conda": ({"run"}, {"-n", "--name", "-p", "--prefix"}),
    "mamba": ({"run"}, {"-n", "--name", "-p", "--prefix"}),
    "micromamba": ({"run"}, {"-n", "--name", "-p", "--prefix"}),
    "bundle": ({"exec"}, set()),
    "pnpm": ({"exec", "dlx"}, set()),
    "yarn": ({"exec", "dlx"}, set()),
}  # fmt: skip


def unwrap(words: list[str]) -> list[str]:
    """``words`` without leading assignments and wrappers: ``FOO=1 timeout 60 uv run pytest`` -> pytest."""
    words = list(words)
    while words:
        base = base_name(words[0])
        if ASSIGNMENT.match(words[0]):
            words = words[1:]
        elif base == "timeout":
            rest = skip_options(words[1:], {"-s", "--signal", "-k", "--kill-after"})
            words = rest[1:]  # the duration
        elif base in _WRAPPERS:
            words = skip_options(words[1:], _WRAPPERS[base])
            if base == "env":
                while words and ASSIGNMENT.match(words[0]):
                    words = words[1:]
        elif base == "uv" and words[1:3] == ["tool", "run"]:
            words = skip_options(words[3:], _WRAPPERS["uvx"])
        elif base in _RUNS and len(words) > 1:
            subcommands, takes_value = _RUNS[base]
            rest = skip_options(words[1:], takes_value)
            if not rest or rest[0] not in subcommands:
                break
            words = skip_options(rest[1:], takes_value)
        else:
            break
    return words


def skip_options(words: list[str], takes_value: set[str]) -> list[str]:
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        if words[i] == "--":
            return words[i + 1 :]
        i += 2 if words[i] in takes_value else 1
    return words[i:]
