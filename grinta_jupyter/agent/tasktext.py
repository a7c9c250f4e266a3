"""Reading a task's text: does it ask for a change to the files?

The finish guard refuses a finish with no change only when the task asked for
one, so this errs towards "no": a task it cannot read as a request for a
change (a question, a bare bug report, "explain ...") may finish without one.

The rule, on lower-cased words, sentence by sentence (sentences end at
``. ; : ! ?`` followed by a space, and at newlines; text in backticks is
ignored):

1. The head of a sentence is its first word after framing: bullets and
   numbers, "please", "can you", "could you", "I want you to", "let's",
   "now", "then", "and", "also", and an opening "in <place>,". A sentence
   whose head is a change verb asks for a change ("fix the failing test",
   "Could you add a cas command?", "in ledger_js, rename JournalEntry").
2. Inside a sentence, a change verb counts after "please", or after "and",
   "then" or a comma when an object follows it ("find and fix the bug",
   "explain it, then update the docs"); "explain how add and remove work"
   has no object after "remove" and does not count.
3. A change verb never counts after a negation ("don't change anything",
   "no need to fix"), in "make sure" or "make sense", or when its object is
   prose ("write a summary", "make a list").
4. Nothing else asks for a change: questions ("what", "why", "how do I add
   ...?"), and requests to explain, describe, find, list, review, summarize
   or check.
"""

from __future__ import annotations

import re


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


CHANGE_VERBS = _words(
    "fix add implement change update refactor rename remove delete write create make replace "
    "migrate modify edit correct repair patch resolve rewrite convert move extract introduce "
    "support upgrade downgrade bump optimize optimise improve clean simplify split merge port "
    "insert append prepend drop enable disable handle restore revert adjust tweak reorganize "
    "reorganise restructure inline deprecate configure wire integrate generate ensure allow "
    "prevent rework complete extend harden sanitize document format reduce increase decrease "
    "expose deduplicate parametrize parameterize pin unpin set swap reimplement "
    "cleanup"
)
# Framing before the verb of a request, longest first.
_PREFIXES = sorted(
    (
        tuple(p.split())
        for p in [
            "please", "pls", "kindly", "can you", "could you", "would you", "will you",
            "can you please", "could you please", "i want you to", "i need you to",
            "i'd like you to", "i would like you to", "we need to", "you need to",
            "you should", "you must", "we should", "let's", "lets", "let us", "help me",
            "go ahead and", "now", "then", "next", "also", "first", "finally", "just", "and",
            "ok", "okay", "so", "try to", "simply", "your task is to", "the task is to",
            "task", "goal", "todo",
        ]
    ),
    key=len,
    reverse=True,
)  # fmt: skip
_REQUESTS = {("please",), ("pls",), ("kindly",), ("can", "you"), ("could", "you"),
             ("would", "you"), ("will", "you")}  # fmt: skip
_OBJECTS = _words(
    "it them this that these those the a an all any every each its their my our your "
    "whatever whichever both some"
)
_NEGATIONS = _words("don't dont not never without nor shouldn't mustn't no avoid")
_PROSE_OBJECTS = _words(
    "summary summaries explanation description overview report answer analysis review "
    "outline plan list sense sure note notes comment comments"
)
_OPENING_PLACES = _words("in for inside within on at across throughout")
_SENTENCE = re.compile(r"(?<=[.;:!?])\s+|\n+")
_WORD = re.compile(r"[\w'’][\w'’./-]*|,")


def asks_for_change(task: str) -> str | None:
    """The phrase of ``task`` that asks for a change (e.g. "fix the failing test"), or None."""
    masked = re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group()), task)
    start = 0
    for sentence in _SENTENCE.split(masked):
        offset = masked.find(sentence, start)
        start = offset + len(sentence)
        matches = list(_WORD.finditer(sentence))
        raw = [m.group() for m in matches]
        index = _change_verb([w.lower().replace("’", "'") for w in raw], raw)
        if index is not None:
            end = matches[min(index + 7, len(matches) - 1)].end()
            phrase = task[offset + matches[index].start() : offset + end].split("\n")[0]
            return phrase.rstrip(" ,.;:!?")
    return None


def _change_verb(tokens: list[str], raw: list[str]) -> int | None:
    """Index of the word that asks for a change in one sentence, if one does."""
    head = _skip_framing(tokens, _skip_opening_place(tokens, 0))[0]
    if _counts(tokens, head):
        return head
    for i, token in enumerate(tokens):
        if token in ("please", "pls", "kindly") and i + 1 < len(tokens) and _counts(tokens, i + 1):
            return i + 1
        if token in ("and", "then", ","):
            after, requested = _skip_framing(tokens, i + 1)
            if _counts(tokens, after) and (requested or _has_object(tokens, raw, after)):
                return after
    return None


def _skip_opening_place(tokens: list[str], i: int) -> int:
    """Past an opening "in ledger_js," (a place, then a comma within a few words)."""
    if tokens[i : i + 1] and tokens[i] in _OPENING_PLACES and "," in tokens[i + 1 : i + 8]:
        return tokens.index(",", i + 1) + 1
    return i


def _skip_framing(tokens: list[str], i: int) -> tuple[int, bool]:
    """Past bullets, numbers and framing words; and whether the framing made a request."""
    requested = False
    while i < len(tokens):
        if tokens[i] == "," or tokens[i].strip("-*.)0123456789") == "":
            i += 1
            continue
        prefix = next((p for p in _PREFIXES if tuple(tokens[i : i + len(p)]) == p), None)
        if prefix is None:
            break
        requested = requested or prefix[:2] in _REQUESTS or prefix[:1] in _REQUESTS
        i += len(prefix)
    return i, requested


def _counts(tokens: list[str], i: int) -> bool:
    """True when ``tokens[i]`` is a change verb not negated and not aimed at prose."""
    if i >= len(tokens) or tokens[i] not in CHANGE_VERBS:
        return False
    before = tokens[max(0, i - 3) : i]
    if any(t in _NEGATIONS for t in before):
        return False
    return not any(t in _PROSE_OBJECTS for t in tokens[i + 1 : i + 4])


def _has_object(tokens: list[str], raw: list[str], i: int) -> bool:
    """True when what follows the verb at ``i`` reads as its object (the, it, a code name)."""
    if i + 1 >= len(tokens):
        return False
    return tokens[i + 1] in _OBJECTS or bool(re.search(r"[_./()]|[a-z][A-Z]", raw[i + 1]))
