"""Content guards: refuse payloads that would corrupt a file in tell-tale ways.

They look only at the lines an edit adds, so they apply identically to every
tool and never trip on what a file already contained. A wrong refusal blocks a
real edit, so each rule needs a tell that real code does not have.

- CONTENT_SERIALIZED: code that arrived JSON-escaped, e.g. ``def f():\\n    pass``
  on one line. The tell is an escape sequence (``\\n``, ``\\t``, ``\\"``, or a
  doubly escaped ``\\\\n``) in code: outside string literals, regex literals
  and comments, and not a LaTeX command (``\\theta``) or a Windows path
  (``C:\\new``). One escaped newline that splits text into two lines is
  enough, or two escapes of any kind, when there are more of them than real
  newlines; or one line holding two escapes, one of them splitting it,
  whatever else the edit adds. A payload that is one JSON string literal, quotes included, whose
  value holds two or more lines, is refused too. ``print("a\\nb")`` passes,
  and so does ``echo \\"$x\\"`` in shell code (shell scripts, Makefiles, YAML).
- PLACEHOLDER: a line that stands in for elided code: an ellipsis alone in a
  comment (``# ...``, ``// ...``, ``/* ... */``, ``<!-- ... -->``), or a
  comment or bracketed line that says code is elsewhere (``# rest of file``,
  ``// other handlers as above``, ``(rest unchanged)``, ``[snip]``,
  ``# TODO: same as before``, ``...existing code...``). Code is never a
  placeholder: Python's ``...`` (``def f(): ...``, a line holding only
  ``...``, ``Callable[..., T]``), ``...args``, and comments that mention
  "unchanged" in prose (``# returns the value unchanged``), or that follow
  code on their line (``pass  # unchanged``). Besides English, a small vocabulary of
  whole comments in Chinese, Japanese, Spanish, French, German, Portuguese and Russian
  (``# 其余代码不变``, ``# resto del código sin cambios``, ``// reste du code inchangé``),
  and SQL's ``-- ... existing columns ...``.
- PLACEHOLDER, gutted body: a Python function whose body of two lines of code or more
  the edit replaces by a stub marked as unwritten (``pass  # TODO``,
  ``raise NotImplementedError("TODO")``); see ``check_gutted``.

In prose files (Markdown, reST, text) examples legitimately elide code, so
only the markers that would stand in for the document itself are refused
(``<!-- rest unchanged -->``, ``[rest of file omitted]``), and an escaped
newline needs a second escape to count.
"""

from __future__ import annotations

import ast
import bisect
import functools
import io
import json
import re
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from grinta_jupyter.runtime import pyast
from grinta_jupyter.runtime.errors import CONTENT_SERIALIZED, PLACEHOLDER, ToolError

PROSE_SUFFIXES = frozenset(
    {".md", ".markdown", ".rst", ".txt", ".adoc", ".asciidoc", ".org", ".tex"}
)
_PROSE_NAMES = ("readme", "changelog", "license", "notice", "authors", "contributing")


def is_prose(path: str) -> bool:
    """True for documentation files, where examples may elide code on purpose."""
    name = PurePosixPath(path.replace("\\", "/")).name.lower()
    return PurePosixPath(name).suffix in PROSE_SUFFIXES or name.startswith(_PROSE_NAMES)


# -- placeholders -------------------------------------------------------------------------

_OPENERS = r"#+|//+|/\*+|\{/\*+|<!--+|\{#|\(\*|\{-|--+|;+|%+|\*+(?!\*/)"
_CLOSERS = r"\*+/\}?|--+>|#\}|\*\)|-\}"
_COMMENT_LINE = re.compile(rf"^(?P<open>{_OPENERS})?\s*(?P<body>.*?)\s*(?P<close>{_CLOSERS})?$")
_BRACKETED = re.compile(r"^(?:\[.*\]|\(.*\)|<[^<>]*>|\{.*\})$")
_ELLIPSIS = re.compile(r"\.{3,}|…+|⋯+")
_BARE_ELLIPSIS = re.compile(
    r"^[\[(<{]?(?:\.{3,4}|…{1,2}|⋯{1,2})[\])>}]?$"
)  # not "# ........" rules
_TAG = re.compile(r"^(?:todo|fixme|xxx|note|hack)\b\s*[:\-]?\s*", re.IGNORECASE)
# Without a comment marker, only a line led and closed by an ellipsis ("...existing code...",
# "... rest of file ..."); not JS spread (...rest,) and no quotes (print('...'), test data).
_ELLIPSIS_LINE = re.compile(r"^(?:\.{3,}|…)(?:\s[^\"'`]*|[^\"'`]*(?:\.{3,}|…))$")
# The first character of every placeholder line: that of an opener in _OPENERS, of a
# bracketed line (_BRACKETED) or of an ellipsis line (_ELLIPSIS_LINE).
_MAY_OPEN = frozenset("#/{<(-;%*[.…")
# Every placeholder has one of these (the phrases as whole words); most lines are rejected
# by looking for them.
_HINT_WORDS = (
    "...", "…", "⋯", "rest", "remainder", "unchanged", "same", "omitted", "elided", "snip",
    "existing", "remaining", "previous", "original", "other", "else", "unmodified", "change",
    "intact", "brevity", "untouched", "identical", "truncated", "skipped", "not shown",
    "before", "above", "below", "more", "similar", "etc", "ditto", "code", "cut", "continued",
    # The stems of the other languages' placeholders (_FOREIGN_STRONG, _FOREIGN_WEAK) that the
    # English words do not hold ("resto" holds "rest", "reste du code" holds "code").
    "codigo", "código", "demás", "cambios", "inchang", "unverändert", "unveraendert", "bisher",
    "vorher", "alteraç", "alterac", "mudanças", "inalterad", "existente",
    "остальн", "оставш", "прежн", "существующ", "изменени", "как было", "как раньше",
    "其余", "其他", "其它", "剩余", "剩下", "其餘", "剩餘", "原有", "现有", "現有", "已有",
    "省略", "略去", "不变", "不變", "原样", "原樣", "同上", "残り", "既存", "変更", "そのまま",
    "以下略", "中略",
)  # fmt: skip
_HINT_PHRASES = ("as is", "as it was")
_HINT = re.compile(
    "|".join([*map(re.escape, _HINT_WORDS), *(rf"\b{re.escape(p)}\b" for p in _HINT_PHRASES)]),
    re.IGNORECASE,
)
# _HINT for ASCII text: there IGNORECASE matches a letter's other case only, so matching the
# lowercased text finds the same, four times faster (no case folding on every try), and the
# words of other scripts cannot match, so they are left out.
_HINT_LOWER = re.compile(
    "|".join(
        [
            *(re.escape(w) for w in _HINT_WORDS if w.isascii()),
            *(rf"\b{re.escape(p)}\b" for p in _HINT_PHRASES),
        ]
    ).lower()
)
# What to look for in lowered ASCII text to find every line _HINT can match (and a few more).
_HINT_ASCII = tuple(w for w in (*_HINT_WORDS, *_HINT_PHRASES) if w.isascii())


def _has_hint(text: str) -> bool:
    """``_HINT.search(text)``, faster on ASCII text."""
    if text.isascii():
        return _HINT_LOWER.search(text.lower()) is not None
    return _HINT.search(text) is not None


_NOUNS = (
    r"(?:code|codes|file|files|function|functions|funcs?|class|classes|methods?|"
    r"implementations?|impl|modules?|body|bodies|content|contents|logic|lines?|imports?|tests?|"
    r"fields|definitions?|cases|handlers?|routes|properties|props|members|attributes|helpers?|"
    r"components?|styles|rules|config|configuration|endpoints|views|parts?|sections?|"
    r"statements|exports|declarations|hooks|listeners|middleware|branches|stuff|markup|html|css|"
    r"templates?|scripts?|fixtures|examples|docs|documentation|blocks?|constructor|setup|"
    r"teardown|source|snippet|readme|changes|document|page|query|queries|tables?)"
)
# What SQL and data files elide ("-- ... existing columns ..."): counted only next to a
# qualifier and an ellipsis or a claim, as "-- existing columns" heads a real column list.
_DATA_NOUNS = r"(?:columns?|constraints|indexes|indices|joins|conditions|clauses|ctes|migrations)"
_ANY_NOUNS = rf"(?:{_NOUNS}|{_DATA_NOUNS})"
_CLAIM = (
    r"(?:(?:is|are|was|were|remains?|stays?|kept|left|continues?) )?(?:unchanged|the same|same|"
    r"as is|as before|as above|as below|intact|omitted|elided|not shown|skipped|truncated|"
    r"snipped|untouched|identical|unmodified|not changed|(?:omitted |removed |elided )?for "
    r"brevity|like before|as previously|as it was|same as (?:before|above|below|the original|"
    r"original|previously|earlier))"
)
_DETERMINER = r"(?:the|all|any|this|these|that|those|its|their|your|my|our)"
_QUALIFIER = (
    r"(?:existing|remaining|previous|prior|original|unchanged|other|same|old|more|additional|"
    r"similar|earlier|omitted|untouched)"
)
# Whole comment bodies that claim code is elsewhere, on their own.
_STRONG = re.compile(
    "|".join(
        [
            rf"(?:the )?(?:rest|remainder) of (?:{_DETERMINER} )?(?:\w+ ){{0,2}}{_ANY_NOUNS}"
            rf"(?: {_CLAIM})?",
            rf"(?:the )?(?:rest|remainder)(?: of (?:it|this|that))? {_CLAIM}",
            # "rest of f unchanged", "rest of c f as before", "rest of method body here"
            rf"(?:the )?(?:rest|remainder) of (?:[\w']+ ){{1,3}}(?:{_CLAIM}|(?:goes )?here)",
            rf"(?:keep|leave) (?:{_DETERMINER} )?(?:{_QUALIFIER} )?(?:\w+ ){{0,2}}(?:as is|unchanged"
            r"|intact|the same|as before|alone)",
            # "existing code", "keep existing code", "your existing code here"
            rf"(?:(?:keep|leave) )?(?:{_DETERMINER} )?(?:existing|remaining|unchanged|original) "
            rf"{_NOUNS}(?: (?:goes )?here)?",
            rf"(?:everything|all) else {_CLAIM}",
            rf"(?:{_DETERMINER} )?{_QUALIFIER} (?:\w+ ){{0,2}}{_ANY_NOUNS} {_CLAIM}",
            rf"(?:{_DETERMINER} )?(?:\w+ )?{_NOUNS} {_CLAIM}",
            r"unchanged|(?:the )?same as (?:before|above|below|the original|original|previously|earlier)"
            r"|snip|snipped|snip snip|omitted|omitted for brevity|elided|unmodified"
            r"|(?:stays?|remains?) (?:the same|unchanged)|(?:keep|leave) (?:the )?rest(?: unchanged| as is)?",
        ]
    )
)
# Bodies that claim it only next to an ellipsis ("... existing code ...", "// ... etc").
_WEAK = re.compile(
    "|".join(
        [
            rf"(?:{_DETERMINER} )?{_QUALIFIER} (?:\w+ ){{0,2}}{_ANY_NOUNS}",
            r"(?:the )?(?:rest|remainder)(?: of (?:it|this|that))?",
            r"(?:everything|all) else|no changes?|nothing (?:else )?changed",
            r"as before|as above|as below|etc|and so on|same|as is|ditto|and more|more|similar"
            r"|continued|cut|existing|unchanged code|code",
        ]
    )
)

# Placeholders in the other languages models write comments in when the user does: Chinese
# (simplified and traditional), Japanese, Spanish, French, German, Portuguese and Russian.
# Each is a whole comment body that says code is elsewhere ("其余代码不变", "resto del código
# sin cambios", "reste du code inchangé", "Rest des Codes unverändert", "остальной код без
# изменений"); a comment that says more than that is prose and passes. Bodies are lowered,
# their ellipses and punctuation dropped, spaces kept single (Chinese and Japanese have none).
_ZH_OTHER = r"(?:其余|其他|其它|剩余|剩下|其餘|剩餘|原有|现有|現有|已有|原来|原來|之前|以前)的?"
_ZH_NOUN = r"(?:代码|代碼|程式碼|程序|部分|内容|內容|实现|實現|逻辑|邏輯|方法|函数|函數|字段|列)"
_ZH_CLAIM = (
    r"(?:保持|维持|維持|均|都|也)?(?:不变|不變|原样|原樣|相同|一样|一樣|省略|略|未变|未變|照旧|照舊"
    r"|无变化|無變化|没有变化|不动|不動|同上|如上|如前)"
)
_JA_OTHER = r"(?:残り|その他|他|既存|元|以前)の?"
_JA_NOUN = r"(?:コード|部分|処理|実装|内容)"
_JA_CLAIM = r"(?:変更なし|変更無し|そのまま|同じ|省略|略)"
_ES_NOUN = (
    r"(?:c[oó]digo|archivo|fichero|funci[oó]n|clase|m[eé]todo|implementaci[oó]n|contenido|l[oó]gica"
    r"|consulta|columnas)"
)
_ES_CLAIM = (
    r"(?:sin cambios?|igual(?: que antes)?|se mantiene(?: igual)?|permanece(?: igual)?|queda igual"
    r"|sigue igual|no cambia|omitid[oa]|intact[oa])"
)
_FR_NOUN = (
    r"(?:code|fichier|fonction|classe|m[eé]thode|impl[eé]mentation|contenu|requ[eê]te|colonnes)"
)
_FR_CLAIM = (
    r"(?:(?:est |reste )?(?:inchang[eé]e?s?|identique)|sans (?:changement|modification)s?|omise?s?"
    r"|ne change pas)"
)
_DE_NOUN = r"(?:codes?|datei|funktion|klasse|methode|implementierung|inhalts?|abfrage)"
_DE_CLAIM = r"(?:(?:bleibt|ist) )?(?:unver[aä]ndert|unver[aä]endert|gleich|wie bisher|wie vorher)"
_PT_NOUN = (
    r"(?:c[oó]digo|arquivo|ficheiro|fun[cç][aã]o|classe|m[eé]todo|implementa[cç][aã]o|conte[uú]do"
    r"|consulta|colunas)"
)
_PT_CLAIM = (
    r"(?:inalterad[oa]|sem (?:altera[cç](?:[oõ]es|[aã]o)|mudan[cç]as?)|igual|permanece igual"
    r"|continua igual|omitid[oa])"
)
_RU_CLAIM = (
    r"(?:без изменений|не изменился|не изменилась|не меняется|не изменён|не изменен|опущен[ао]?"
    r"|оста[её]тся (?:прежним|прежней|без изменений)|как было|как раньше)"
)
_FOREIGN_STRONG = re.compile(
    "|".join(
        [
            rf"{_ZH_OTHER} ?{_ZH_NOUN} ?{_ZH_CLAIM}",
            rf"(?:此处|此處|这里|這裡|以下)?(?:省略|略去)了?(?:{_ZH_OTHER})?{_ZH_NOUN}?",
            rf"(?:保持|维持|維持)(?:{_ZH_OTHER})?{_ZH_NOUN}?(?:不变|不變|原样|原樣)",
            rf"{_JA_OTHER}{_JA_NOUN}?(?:は|も)?{_JA_CLAIM}|中略|以下略|以下省略",
            rf"(?:el )?resto (?:del|de la|de los|de las) {_ES_NOUN}(?: {_ES_CLAIM})?",
            rf"(?:el |lo )?(?:resto|dem[aá]s) {_ES_CLAIM}|sin cambios",
            # "existing code" alone, "previous code" with a claim, as in English
            r"(?:el )?c[oó]digo (?:existente|original|restante)(?: aqu[ií])?",
            rf"(?:el )?c[oó]digo (?:existente|anterior|original|restante) {_ES_CLAIM}",
            rf"(?:le )?reste (?:du|de la|des) {_FR_NOUN}(?: {_FR_CLAIM})?",
            rf"(?:le )?reste {_FR_CLAIM}|inchang[eé]|sans changement",
            r"(?:le )?code (?:existant|original|inchang[eé])(?: ici)?",
            rf"(?:le )?code (?:existant|pr[eé]c[eé]dent|original) {_FR_CLAIM}",
            rf"(?:der )?rest (?:des|der) {_DE_NOUN}(?: {_DE_CLAIM})?",
            rf"(?:der )?rest {_DE_CLAIM}|alles andere {_DE_CLAIM}|unver[aä]ndert|unveraendert",
            r"(?:restlicher|übriger|bestehender|vorhandener) code(?: hier)?",
            rf"(?:restlicher|übriger|bestehender|bisheriger|vorhandener) code {_DE_CLAIM}",
            rf"(?:o )?(?:resto|restante) (?:do|da|dos|das) {_PT_NOUN}(?: {_PT_CLAIM})?",
            rf"(?:o )?resto {_PT_CLAIM}|sem altera[cç](?:[oõ]es|[aã]o)|sem mudan[cç]as",
            r"(?:остальной|оставшийся|существующий) код(?: здесь)?",
            rf"(?:остальной|оставшийся|прежний|существующий|старый) код {_RU_CLAIM}",
            rf"(?:остальное|всё остальное|все остальное) {_RU_CLAIM}",
            rf"(?:остальная|оставшаяся) (?:часть|реализация)(?: кода)?(?: {_RU_CLAIM})?",
            r"без изменений",
        ]
    )
)
# Next to an ellipsis only, as _WEAK: "... 现有代码 ...", "// ... código existente ...".
_FOREIGN_WEAK = re.compile(
    "|".join(
        [
            rf"{_ZH_OTHER}{_ZH_NOUN}|同上",
            rf"{_JA_OTHER}{_JA_NOUN}",
            r"(?:el )?resto|(?:lo )?dem[aá]s|(?:le )?reste|(?:der )?rest|(?:o )?restante",
            r"(?:c[oó]digo|code) (?:existente|existant|anterior|original|restante)",
            r"(?:restlicher|übriger|bestehender|bisheriger|vorhandener) code|wie bisher|wie vorher",
            r"(?:остальное|остальной код|существующий код|прежний код|как раньше|как было)",
        ]
    )
)


def _foreign_words(body: str) -> str:
    """``body`` lowered, its ellipses and punctuation gone, for the _FOREIGN patterns."""
    return " ".join(re.sub(r"[^\w' ]+", " ", _ELLIPSIS.sub(" ", body.lower())).split())


def is_placeholder_line(line: str, prose: bool = False) -> bool:
    """True for a line that stands in for elided code, e.g. ``# ... existing code ...``.

    ``prose``: the line is in a documentation file, where only an HTML comment or
    a bracketed line can be a placeholder.
    """
    return _placeholder(line, prose) is not None


def _placeholder(line: str, prose: bool) -> str | None:
    """ "marked" for a placeholder with an ellipsis or brackets, "claim" for a comment that
    only says code is elsewhere ("# rest of file"), None for anything else."""
    stripped = line.strip()
    # A placeholder opens with a comment marker, a bracket or an ellipsis (_classify returns
    # None otherwise): testing that first spares most lines of code the _HINT search.
    if not stripped or stripped[0] not in _MAY_OPEN:
        return None
    return _classify(stripped, prose)


def _classify(stripped: str, prose: bool) -> str | None:
    """``_placeholder`` of a stripped, non-empty line, without the first-character test."""
    if len(stripped) > 120 or not _has_hint(stripped):
        return None
    bracketed = bool(_BRACKETED.match(stripped))
    match = _COMMENT_LINE.match(stripped)
    assert match is not None  # every part of the pattern is optional
    opener = match.group("open") or ""
    if prose and not opener.startswith("<!--") and not bracketed:
        return None
    if not opener and not bracketed and not _ELLIPSIS_LINE.match(stripped):
        return None
    body = _TAG.sub("", match.group("body") or "")
    has_ellipsis = bool(_ELLIPSIS.search(body))
    words = " ".join(re.sub(r"[^a-z0-9' ]+", " ", _ELLIPSIS.sub(" ", body.lower())).split())
    foreign = words if body.isascii() else _foreign_words(body)
    if not foreign:  # an ellipsis alone: "# ...", "/* ... */", "<!-- ... -->"
        bare = opener and not opener.startswith("*") and not prose
        if not (bare and _BARE_ELLIPSIS.match(body.replace(" ", ""))):
            return None
        # "#     ..." indented inside the comment is commented-out code when comments surround it.
        return "claim" if stripped[len(opener) :].startswith(("  ", "\t")) else "marked"
    if _STRONG.fullmatch(words) or _FOREIGN_STRONG.fullmatch(foreign):
        return "marked" if has_ellipsis or bracketed else "claim"
    # Brackets alone are not enough here: [code] and [more] are TOML and INI section headers;
    # brackets inside a comment are ("# (existing code)").
    in_brackets = bool(opener) and bool(_BRACKETED.match(match.group("body") or ""))
    weak = _WEAK.fullmatch(words) or _FOREIGN_WEAK.fullmatch(foreign)
    return "marked" if not prose and (has_ellipsis or in_brackets) and weak else None


def check_placeholder(
    added_lines: Sequence[tuple[int, str]], old_text: str, path: str = "", new_text: str = ""
) -> ToolError | None:
    """PLACEHOLDER when an added line is an elision marker the file did not already hold.

    A comment that only claims code is elsewhere ("# rest of file"), or an ellipsis indented
    inside its comment ("#     ..."), counts when it stands alone; inside a block of comments
    it is prose or commented-out code ("# ... so the contents are the same").
    Given the whole ``new_text`` of a Python file, lines inside its docstrings and other
    multi-line strings are examples, not code, and are left alone, and a function body
    replaced by a TODO stub is refused too (``check_gutted``).
    """
    prose = is_prose(path) if path else False
    added = dict(added_lines)
    in_strings: set[int] | None = None
    held: set[str] | None = None
    for line_no, line in _hinted(_may_open(added_lines)):
        kind = _placeholder(line, prose)
        if kind is None:
            continue
        # Held means a whole line of the file: "# ..." is part of "# ...and then we retry"
        # or of a "# ........" rule, and neither makes a bare "# ..." something it held.
        held = _stripped_lines(old_text) if held is None else held
        if line.strip() in held:
            continue
        if kind == "claim" and _in_comment_block(added, line_no, line):
            continue
        if new_text and path.lower().endswith((".py", ".pyi")):
            in_strings = _string_lines(new_text) if in_strings is None else in_strings
            if line_no in in_strings:
                continue
        return ToolError(
            PLACEHOLDER,
            f"the edit adds a placeholder at line {line_no} ({line.strip()[:60]!r}); "
            "write out the full code instead of eliding it",
            line=line_no,
        )
    return check_gutted(added_lines, old_text, path, new_text)


def _stripped_lines(text: str) -> set[str]:
    """The lines of ``text`` that may be placeholders, stripped. Lines end at "\n" only, as
    a diff's added lines do (``splitlines`` also ends one at U+2028, U+0085 or U+001C-U+001E,
    so a line the file held whole would not be found)."""
    return {line.strip() for line in text.split("\n") if line.lstrip()[:1] in _MAY_OPEN}


def _may_open(added_lines: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    """The added lines ``_placeholder`` can call placeholders: those whose first character
    after their leading whitespace is in ``_MAY_OPEN`` (a new file of thousands of lines has
    a few hundred such; one pass with ``str.lstrip`` is about four times faster than a
    multi-line regex over them joined)."""
    return [item for item in added_lines if item[1].lstrip()[:1] in _MAY_OPEN]


def _hinted(lines: Sequence[tuple[int, str]]) -> Sequence[tuple[int, str]]:
    """Those of ``lines`` that may hold a _HINT word, found by one search over them all (a
    superset: ``_classify`` checks each line it keeps). ASCII text only; else all lines."""
    if len(lines) < 64:
        return lines
    text = "\n".join(line for _, line in lines).lower()
    if not text.isascii() or text.count("\n") != len(lines) - 1:
        return lines  # lowering non-ASCII text may move offsets; a line holds a newline
    starts = [0]
    for _, line in lines:
        starts.append(starts[-1] + len(line) + 1)
    keep: set[int] = set()
    for word in _HINT_ASCII:  # str.find runs at memory speed; a regex of 37 branches does not
        at = text.find(word)
        while at >= 0:
            k = bisect.bisect_right(starts, at) - 1
            keep.add(k)
            at = text.find(word, starts[k + 1])  # from the next line's start
    return [lines[k] for k in sorted(keep)]


def _string_lines(source: str) -> set[int]:
    """Lines of Python ``source`` that lie inside a multi-line string (after its first line)."""
    lines: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                lines.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass  # broken code: the lines read so far are all we know
    return lines


def _in_comment_block(added: dict[int, str], line_no: int, line: str) -> bool:
    """True when an added line next to ``line_no`` is a comment of the same kind."""
    opener = _comment_opener(line)
    return bool(opener) and any(
        _comment_opener(added.get(n, "")) == opener for n in (line_no - 1, line_no + 1)
    )


def _comment_opener(line: str) -> str:
    match = re.match(rf"\s*({_OPENERS})", line)
    return match.group(1)[:2] if match else ""


# -- gutted bodies --------------------------------------------------------------------------

# A comment (or NotImplementedError message) that marks code as still to write.
_TODO_MARK = re.compile(
    r"\b(?:todo|fixme|tbd)\b|^(?:to (?:be )?)?implement(?:ed|ation)?\b|^implement (?:me|this)\b"
    r"|\bnot (?:yet )?implemented yet\b|\bnot yet implemented\b"
    r"|\b(?:your|the|real|actual) (?:code|implementation|logic) (?:goes )?here\b"
    r"|^(?:add|insert|write|put) (?:the |your )?(?:code|implementation|logic)\b|^fill (?:this )?in\b"
    r"|^(?:placeholder|stub)\b",
    re.IGNORECASE,
)
# What an added line must hold for the edit to be worth parsing: a comment, or the error.
_TODO_LINE = re.compile(r"#.*(?:todo|fixme|tbd|implement|here|fill|placeholder|stub)|NotImpl", re.I)
_GUTTED_SCANNED = 400_000  # characters of each text; parsing more costs too much per edit
_REAL_BODY_LINES = 2  # a one-line body written out again is cheap, so it is not guarded


def check_gutted(
    added_lines: Sequence[tuple[int, str]], old_text: str, path: str, new_text: str
) -> ToolError | None:
    """PLACEHOLDER when a Python edit replaces the code of an existing function with a
    TODO stub: a body of only ``pass``, ``...``, ``return`` or ``raise NotImplementedError``,
    marked as unwritten (``# TODO``, ``# implement``, ``NotImplementedError("TODO")``),
    where the file had a function of that name whose body held two lines of code or more.

    A new stub passes (no function of its name had code), and so does a stub the file
    already held, a stub without a mark (``raise NotImplementedError`` in an abstract
    method) and any body that keeps a statement of code. The old text is parsed only
    when the new one has a marked stub on an added line.
    """
    if not old_text or not new_text or not path.lower().endswith(".py"):
        return None
    if len(old_text) > _GUTTED_SCANNED or len(new_text) > _GUTTED_SCANNED:
        return None
    if not any(_TODO_LINE.search(line) for _, line in added_lines):
        return None
    added = {line_no for line_no, _ in added_lines}
    new_tree = _parse(new_text)
    if new_tree is None:
        return None  # the syntax check reports broken code
    new_lines = new_text.split("\n")
    new_stubs, new_real = _function_bodies(new_tree)
    fresh = {
        name: stub.lineno
        for name, stubs in new_stubs.items()
        for stub, lines in stubs
        if lines & added and _marked(stub, new_lines, lines)
    }
    old_tree = _parse(old_text) if fresh else None
    if old_tree is None:
        return None
    old_stubs, old_real = _function_bodies(old_tree)
    for name, line_no in fresh.items():
        if len(new_stubs[name]) <= len(old_stubs.get(name, ())):
            continue  # no stub of this name is new
        if len(new_real.get(name, ())) >= len(old_real.get(name, ())):
            continue  # no body of code of this name is gone
        shown = new_lines[line_no - 1].strip()[:60]
        return ToolError(
            PLACEHOLDER,
            f"the edit replaces the body of {name} ({max(old_real[name])} lines of code) with "
            f"a TODO stub at line {line_no} ({shown!r}); write out the whole body, keeping the "
            "code that still applies (to remove the function, delete it)",
            line=line_no,
        )
    return None


def _parse(source: str) -> ast.Module | None:
    try:
        with pyast.quietly():  # a file's invalid escapes are its own, not a warning of ours
            return pyast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _function_bodies(
    tree: ast.Module,
) -> tuple[dict[str, list[tuple[ast.stmt, set[int]]]], dict[str, list[int]]]:
    """The stubs and the bodies of code of ``tree``'s functions, by qualified name.

    A stub: (its statement, every line of the function). A body of code: its number of
    lines (its statements' lines, the docstring left out), when it is two or more."""
    stubs: dict[str, list[tuple[ast.stmt, set[int]]]] = {}
    real: dict[str, list[int]] = {}
    for name, function in _functions(tree.body):
        body = function.body
        if body and _is_docstring(body[0]):
            body = body[1:]
        if len(body) == 1 and _is_stub(body[0]):
            lines = set(range(function.lineno, (function.end_lineno or function.lineno) + 1))
            stubs.setdefault(name, []).append((body[0], lines))
            continue
        length = sum((s.end_lineno or s.lineno) - s.lineno + 1 for s in body)
        if length >= _REAL_BODY_LINES and not all(_is_stub(s) for s in body):
            real.setdefault(name, []).append(length)
    return stubs, real


def _functions(statements: Sequence[ast.stmt], prefix: str = "") -> Iterator[tuple[str, _Function]]:
    """Every function among ``statements`` and in their blocks, with its qualified name
    (``C.m``, ``f.<locals>.g``). Expressions are not entered: a ``def`` is a statement."""
    for statement in statements:
        if isinstance(statement, _Function):
            name = prefix + statement.name
            yield name, statement
            yield from _functions(statement.body, name + ".<locals>.")
        elif isinstance(statement, ast.ClassDef):
            yield from _functions(statement.body, prefix + statement.name + ".")
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(statement, field, ()):
                    # an ``except`` or ``case`` clause holds a block; if/for/with/try hold statements
                    inner = child if isinstance(child, ast.stmt) else None
                    yield from _functions([inner] if inner else child.body, prefix)


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _is_stub(statement: ast.stmt) -> bool:
    """``pass``, ``...``, a bare ``return`` or ``return None``, ``raise NotImplementedError``."""
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return statement.value.value is Ellipsis
    if isinstance(statement, ast.Return):
        value = statement.value
        return value is None or (isinstance(value, ast.Constant) and value.value is None)
    if isinstance(statement, ast.Raise) and statement.exc is not None:
        exc = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def _marked(stub: ast.stmt, source_lines: list[str], lines: set[int]) -> bool:
    """True when the message of the ``raise NotImplementedError(...)`` ``stub``, or a
    comment on the function's ``lines`` of ``source_lines``, marks the body as still to
    write. Only those few lines are tokenized, each stripped of its indent."""
    exc = stub.exc if isinstance(stub, ast.Raise) else None
    if isinstance(exc, ast.Call) and exc.args and isinstance(exc.args[0], ast.Constant):
        message = exc.args[0].value
        if isinstance(message, str) and _TODO_MARK.search(message.strip()):
            return True
    chunk = "\n".join(line.strip() for line in source_lines[min(lines) - 1 : max(lines)])
    try:
        for token in tokenize.generate_tokens(io.StringIO(chunk + "\n").readline):
            if token.type == tokenize.COMMENT and _TODO_MARK.search(token.string[1:].strip()):
                return True
    except (tokenize.TokenError, SyntaxError):
        pass  # what was read before the error is all there is
    return False


# -- serialized payloads --------------------------------------------------------------------

_ESCAPED = frozenset('nrt"')
_NEWLINE_ESCAPES = frozenset("nr")
# LaTeX commands that begin like an escape (\theta, \nabla, \textbf): not escapes.
_LATEX = re.compile(
    r"(?:newline|newcommand|newpage|noindent|nonumber|nolimits|nabla|neq|nu|nearrow|nexists|nleq"
    r"|ngeq|nmid|natural|not|notin|neg|nocite|noalign|normalsize|numberwithin|newtheorem"
    r"|newenvironment|theta|tau|times|text[a-z]*|tfrac|to|top|title|tilde|today|tiny|tag|tan"
    r"|triangle|tanh|therefore|tableofcontents|rho|rangle|right|rightarrow|rceil|rfloor|renewcommand"
    r"|rvert|rbrace|rbrack|raggedright|ref|rm|rule|raisebox)(?![A-Za-z0-9_])"
)
# After an escaped newline, text that starts a line of code: it ends a comment, and makes an
# escaped CRLF a line break (a mention of "\\r\\n" in prose is not).
_CODE_START = re.compile(
    r"(?! \S)[ \t]*(?:def |class |import |from |return\b|if |for |while |function |const |let |var "
    r"|public |private |static |fn |func |package |#|//|[A-Za-z_][\w.]*\s*(?:=[^=]|\())"
)
_REGEX_BEFORE = frozenset("(,=:[!&|?{};+-*%~^")  # not < or >: "</p>" is markup


@dataclass
class _Escapes:
    count: int = 0  # escapes standing in code
    line_breaks: int = 0  # escaped newlines with text on both sides
    packed_lines: int = 0  # lines holding two escapes, one of them a line break


def escapes_outside_strings(text: str) -> int:
    """Count escapes (\\n, \\r, \\t, \\") standing in code: outside strings, regexes, comments."""
    return _scan(text).count


def _scan(
    text: str, quotes: bool = True, stop_when_packed: bool = False, stop_after: int | None = None
) -> _Escapes:
    """The escapes standing in code in ``text`` (``quotes``: count \\" among them).

    Strings end at the end of their line, except Python's triple-quoted ones; a
    line comment ends there too, or at an escaped newline followed by code.
    """
    found = _Escapes()
    if "\\" not in text:
        return found
    state = "code"  # code | string | comment | block | regex
    quote = ""
    line_count = line_breaks = 0
    i, n = 0, len(text)
    while i < n:
        # Jump to the next character that can change anything in this state: the others
        # would only move ``i`` on, one at a time (60 ms on a 1,500-line Python file).
        found_next = _next_event(state, quote).search(text, i)
        if found_next is None:
            break
        i = found_next.start()
        ch = text[i]
        if ch == "\n":
            found.packed_lines += line_count >= 2 and line_breaks >= 1
            line_count = line_breaks = 0
            if state in ("string", "comment", "regex") and len(quote) != 3:
                state = "code"
            i += 1
            continue
        if state in ("string", "regex"):
            if ch == "\\":
                i += 2
            elif text.startswith(quote, i):
                state = "code"
                i += len(quote)
            else:
                i += 1
            continue
        if state == "block":
            if text.startswith("*/", i):
                state = "code"
                i += 1
            i += 1
            continue
        width = _escape_width(text, i)
        if width and not quotes and text[i + width - 1] == '"':
            i += width  # an escaped quote in shell code is an ordinary character
            continue
        if width:
            pair = _escape_width(text, i + width) if text[i + width - 1] == "r" else 0
            if pair and text[i + width + pair - 1] != "n":
                pair = 0
            end = i + width + pair
            newline = text[end - 1] in _NEWLINE_ESCAPES
            if pair or state == "comment":  # a mention of \\r\\n, or an escape in a comment
                breaks = newline and bool(_CODE_START.match(text, end))
            else:
                breaks = newline and _splits_lines(text, i, width)
            if state != "comment" or breaks:
                found.count += 1
                line_count += 1
                found.line_breaks += breaks
                line_breaks += breaks
                state = "code" if breaks else state
                if stop_when_packed and line_count >= 2 and line_breaks >= 1:
                    found.packed_lines += 1
                    return found  # the verdict cannot change: no need to read a megabyte
                if stop_after is not None and found.count > stop_after:
                    return found
            i = end
            continue
        if state == "comment":
            i += 1
            continue
        if ch == "\\":
            i += _skip_backslash_word(text, i)
            continue
        if text.startswith(('"""', "'''"), i):
            state, quote = "string", text[i : i + 3]
        elif text.startswith("``", i):
            state, quote = "string", "``"  # reST inline literal
        elif ch in "\"'`":
            state, quote = "string", ch
        elif _comment_starts(text, i):
            state, quote = "comment", ""
        elif text.startswith("/*", i):
            state, quote = "block", "/*"
        elif ch == "/" and _regex_may_start(text, i):
            state, quote = "regex", "/"
        i += len(quote) if state in ("string", "block") else 1
    found.packed_lines += line_count >= 2 and line_breaks >= 1
    return found


_EVENTS = {
    "code": re.compile(r"[\n\\\"'`#/]"),  # escapes, strings, comments, regexes
    "comment": re.compile(r"[\n\\]"),
    "block": re.compile(r"[\n*]"),
}


@functools.cache
def _next_event(state: str, quote: str) -> re.Pattern[str]:
    """What ``_scan`` must look at next in ``state`` (inside a string: its quote)."""
    if state in ("string", "regex"):
        return re.compile(r"[\n\\" + re.escape(quote[0]) + "]")
    return _EVENTS[state]


def _comment_starts(text: str, i: int) -> bool:
    """A ``#`` or ``//`` line comment starts at ``i`` (after a space, not inside a word or URL)."""
    before = text[i - 1] if i else "\n"
    if text[i] == "#":
        return before in " \t\n"
    return text.startswith("//", i) and before in " \t\n;{})"


def _escape_width(text: str, i: int) -> int:
    """Length of the escape at ``i`` (\\n, or the doubly escaped \\\\n), 0 when there is none."""
    if i >= len(text) or text[i] != "\\":
        return 0
    j = i + 1
    if j < len(text) and text[j] == "\\":
        j += 1  # \\n: escaped twice
    if j >= len(text) or text[j] not in _ESCAPED:
        return 0
    if _LATEX.match(text, j):
        return 0
    line_start = _line_start(text, i)
    token_start = max(text.rfind(" ", line_start, i), text.rfind("\t", line_start, i)) + 1
    token_start = max(token_start, line_start)
    # A Windows path (C:\new\table, \\server\tmp), unless the escape right after its drive
    # goes on with no name: ``if x:\n    pass`` is escaped code, not the drive x:.
    if (
        token_start < i
        and re.match(r"[A-Za-z]:\\|\\\\[A-Za-z]", text[token_start : i + 2])
        and (i != token_start + 2 or _PATH_NAME.match(text, j + 1))
    ):
        return 0
    return j + 1 - i


_PATH_NAME = re.compile(r"[^\s\\]")


def _line_start(text: str, i: int, window: int = 256) -> int:
    """Where the line holding ``i`` starts, looking back at most ``window`` characters (so a
    megabyte on one line costs no more than a short one)."""
    low = max(0, i - window)
    return text.rfind("\n", low, i) + 1 or low


def _skip_backslash_word(text: str, i: int) -> int:
    word = re.match(r"\\[A-Za-z]*", text[i : i + 64])
    return max(len(word.group()) if word else 1, 1)


def _splits_lines(text: str, i: int, width: int) -> bool:
    """True when the escaped newline at ``i`` splits code: text right before it, a word after.

    Prose that mentions the escape ("split on \\n to get lines") has spaces around it.
    """
    before = text[_line_start(text, i) : i]
    after = re.match(r"[^\\\n]*", text[i + width : i + width + 200])
    if not before.strip() or before[-1] in " \t" or after is None:
        return False
    return bool(re.search(r"\w", after.group())) and not re.match(r" [A-Za-z]", after.group())


def _regex_may_start(text: str, i: int) -> bool:
    """A ``/`` starts a regex literal after an operator or an opening bracket, not after a value."""
    if text.startswith(("//", "/*"), i):
        return False
    before = text[_line_start(text, i) : i].rstrip(" \t")
    if not before or before[-1] in _REGEX_BEFORE:
        return True
    return bool(re.search(r"\b(?:return|typeof|case|in|of)$", before))


_SCANNED = 200_000


def check_serialized(added: str, path: str = "", compiled: bool = False) -> ToolError | None:
    """CONTENT_SERIALIZED when ``added`` looks like JSON-escaped code.

    ``compiled``: ``added`` is part of a Python file that compiles, where an escape outside
    strings can only be in a comment: the scan runs only when the escapes after the lines'
    ``#`` could be enough to refuse (a whole file sent as one JSON string, or as one comment
    line holding escaped code, is still refused).
    """
    literal = _json_string_literal(added)
    if literal is not None:
        return ToolError(
            CONTENT_SERIALIZED,
            f"the new text is one JSON string literal (quotes included) holding {literal} "
            "lines; send the text itself, with real newlines and no surrounding quotes",
        )
    prose = bool(path) and is_prose(path)
    # In shell code \" outside quotes is an ordinary escaped quote (echo \"$x\").
    quotes = not (path and _is_shell(path))
    # The first _SCANNED characters tell as well as the whole (and bound the cost).
    text = added[:_SCANNED]
    if "\\u00" in text:  # JSON's \u000a is its \n
        text = _UNICODE_ESCAPE.sub(lambda m: _SHORT_ESCAPES[m.group()[-2:].lower()], text)
    newlines = text.count("\n")
    if compiled and not _comments_may_refuse(text, newlines):
        return None
    found = _scan(text, quotes, stop_when_packed=not prose, stop_after=max(1, newlines))
    enough = found.count >= 2 or (found.line_breaks >= 1 and not prose)
    # One line holding escaped lines is serialized even among real lines.
    packed = not prose and found.packed_lines > 0
    if (enough and found.count > newlines) or packed:
        return ToolError(
            CONTENT_SERIALIZED,
            "the new text contains literal escape sequences (like \\n) outside string literals"
            f"{'' if packed else f' ({found.count} or more)'}, which looks like JSON-escaped "
            "code; send real newlines and quotes",
        )
    return None


# JSON's unicode escapes of a newline, carriage return, tab and quote.
_UNICODE_ESCAPE = re.compile(r"\\u00(?:0[aAdD9]|22)")
_SHORT_ESCAPES = {"0a": "\\n", "0d": "\\r", "09": "\\t", "22": '\\"'}
_ESCAPE_PAIR = re.compile(r'\\[nrt"]')  # inside every escape _escape_width finds


def _comments_may_refuse(text: str, newlines: int) -> bool:
    """Whether the escapes in the comments of Python code that compiles could make
    ``check_serialized`` refuse it: more of them than ``newlines``, or a comment holding two,
    one of them a line break (a packed line). In such code an escape outside strings can
    only be in a comment, which starts at or after a line's first ``#``: the escapes counted
    from there on are at least those the scan would count. Only lines holding a backslash
    are looked at (found with ``str.find``, not line by line)."""
    total = 0
    at = text.find("\\")
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        line = text[start:end]
        hash_at = line.find("#")
        if hash_at >= 0 and line.find("\\", hash_at) >= 0:
            found = _ESCAPE_PAIR.findall(line, hash_at)
            total += len(found)
            if total > newlines or (len(found) >= 2 and any(e[1] in "nr" for e in found)):
                return True
        at = text.find("\\", end)
    return False


_SHELL_SUFFIXES = frozenset({".sh", ".bash", ".zsh", ".ksh", ".fish", ".mk", ".bat", ".cmd",
                             ".ps1", ".yml", ".yaml"})  # fmt: skip
_SHELL_NAMES = ("makefile", "gnumakefile", "dockerfile", "justfile", "containerfile")


def _is_shell(path: str) -> bool:
    """Shell scripts, and files that hold shell commands (Makefiles, Dockerfiles, CI YAML)."""
    name = PurePosixPath(path.replace("\\", "/")).name.lower()
    return PurePosixPath(name).suffix in _SHELL_SUFFIXES or name.startswith(_SHELL_NAMES)


def _json_string_literal(added: str) -> int | None:
    """The number of lines in ``added`` when it is one JSON string literal of two or more lines."""
    text = added.rstrip()
    if not (text.startswith('"') and text.endswith('"') and len(text) >= 2):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, str):
        return None
    lines = [line for line in value.splitlines() if line.strip()]
    return len(lines) if len(lines) >= 2 else None
