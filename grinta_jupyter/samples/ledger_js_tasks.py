"""The ledger_js sample's tasks: a failing test, a feature, a rename-and-move refactor."""

from __future__ import annotations

import functools
import re
import shutil
import tempfile
from pathlib import Path

from grinta_jupyter.samples.core import (
    CheckResult,
    Task,
    ToolCall,
    changed_files,
    check_node_suite,
    copy_for_trial,
    copy_workspace,
    listing,
    no_setup,
    replace_once,
    run_node_suite,
    script_error,
)

# -- ledger_js ---------------------------------------------------------------

# The bug in the pristine ledger_js: Money.parse takes the sign from the whole
# units, and parseInt("-0") is -0, which is not < 0; so "-0.50" parses as
# +50 cents. Amounts of a unit or more keep their sign, which hides it.
LEDGER_FIX: dict[str, str] = {
    "path": "src/money.js",
    "old_string": "(units < 0 ? -cents : cents)",
    "new_string": "(whole.startsWith('-') ? -cents : cents)",
}
LEDGER_FAILING_TEST = "parsing amounts > keeps the sign of negative amounts under one unit"

_LEDGER_PROTECTED = ("test/**/*.js", "package.json")
_LEDGER_TESTS: ToolCall = ("run", {"command": "node --test"})


def _apply_ledger_fix(root: Path) -> None:
    """Fix the planted bug, so that only the task at hand decides the check."""
    replace_once(root, LEDGER_FIX, "LEDGER_FIX")


@functools.cache
def pristine_node_tests(workspace: str) -> frozenset[str]:
    """The ids of every test in the pristine ``workspace``, from a run of a scratch copy.

    Node has no collect-only mode, so the suite runs once per process. The
    planted bug's test is among them: it fails, but it runs.
    """
    with tempfile.TemporaryDirectory(prefix="grinta-pristine-") as scratch:
        run = run_node_suite(copy_workspace(workspace, Path(scratch) / "workspace"))
    if run.exit_code is None or not run.outcomes:
        raise RuntimeError(f"the pristine {workspace} suite did not run:\n{run.tail()}")
    return frozenset(run.outcomes)


def _check_ledger_fixed(root: Path) -> CheckResult:
    """The whole pristine suite passes, and the tests and package.json are the pristine ones."""
    problems = changed_files(root, "ledger_js", _LEDGER_PROTECTED)
    if problems:
        return CheckResult(False, "; ".join(problems))
    return check_node_suite(root, pristine_node_tests("ledger_js"))


HIDDEN_REVERSE_TEST_PATH = "test/hidden_reverse.test.js"
HIDDEN_REVERSE_TEST = """\
// Acceptance tests for Ledger.reverse, added by the task check (not shipped).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import * as errors from '../src/errors.js';
import { JournalEntry, Ledger, LedgerError, UnknownEntryError } from '../src/index.js';

function ledgerWithASale() {
  const ledger = new Ledger();
  ledger.openAccount({ code: '1000', name: 'Cash', type: 'asset' });
  ledger.openAccount({ code: '2100', name: 'Sales tax payable', type: 'liability' });
  ledger.openAccount({ code: '4000', name: 'Sales', type: 'income' });
  ledger.post(
    new JournalEntry({ date: '2024-06-01', description: 'Sale' })
      .debit('1000', '108.00', 'till')
      .credit('4000', '100.00')
      .credit('2100', '8.00', 'tax'),
  );
  return ledger;
}

describe('reversing entries', () => {
  it('posts the same lines with debits and credits swapped', () => {
    const ledger = ledgerWithASale();
    const reversal = ledger.reverse(1, '2024-06-03');
    assert.equal(reversal.id, 2);
    assert.equal(ledger.entry(2), reversal);
    assert.equal(reversal.date, '2024-06-03');
    assert.equal(reversal.description, 'Reversal of #1: Sale');
    assert.deepEqual(
      reversal.lines.map((line) => [line.account, line.side, line.amount.format(), line.memo]),
      [
        ['1000', 'credit', '108.00', 'till'],
        ['4000', 'debit', '100.00', ''],
        ['2100', 'debit', '8.00', 'tax'],
      ],
    );
  });

  it('brings every balance back to zero from its date', () => {
    const ledger = ledgerWithASale();
    ledger.reverse(1, '2024-06-03');
    for (const account of ledger.accounts) {
      assert.ok(ledger.balance(account.code).isZero(), account.code);
    }
    assert.equal(ledger.balance('1000', { asOf: '2024-06-02' }).format(), '108.00');
    assert.ok(ledger.trialBalance().isBalanced());
  });

  it('throws UnknownEntryError for an id that was never posted', () => {
    const ledger = ledgerWithASale();
    assert.equal(errors.UnknownEntryError, UnknownEntryError);
    assert.throws(
      () => ledger.reverse(7, '2024-06-03'),
      (error) => error instanceof UnknownEntryError && error instanceof LedgerError,
    );
    assert.equal(ledger.entries.length, 1);
  });

  it('reverses an entry only once', () => {
    const ledger = ledgerWithASale();
    ledger.reverse(1, '2024-06-03');
    assert.throws(() => ledger.reverse(1, '2024-06-04'), LedgerError);
    assert.equal(ledger.entries.length, 2);
  });

  it('does not reverse a reversal', () => {
    const ledger = ledgerWithASale();
    const reversal = ledger.reverse(1, '2024-06-03');
    assert.throws(() => ledger.reverse(reversal.id, '2024-06-04'), LedgerError);
    assert.equal(ledger.entries.length, 2);
  });

  it('refuses a date that is not a day, posting nothing', () => {
    const ledger = ledgerWithASale();
    assert.throws(() => ledger.reverse(1, '2024-06-31'), LedgerError);
    assert.equal(ledger.entries.length, 1);
    assert.equal(ledger.reverse(1, '2024-06-30').id, 2);
  });
});
"""
HIDDEN_REVERSE_TESTS = tuple(
    f"reversing entries > {name}"
    for name in (
        "posts the same lines with debits and credits swapped",
        "brings every balance back to zero from its date",
        "throws UnknownEntryError for an id that was never posted",
        "reverses an entry only once",
        "does not reverse a reversal",
        "refuses a date that is not a day, posting nothing",
    )
)


def _check_reverse_entry(root: Path) -> CheckResult:
    with tempfile.TemporaryDirectory(prefix="grinta-check-") as scratch:
        trial = copy_for_trial(root, scratch)
        (trial / HIDDEN_REVERSE_TEST_PATH).write_text(HIDDEN_REVERSE_TEST, encoding="utf-8")
        required = pristine_node_tests("ledger_js") | set(HIDDEN_REVERSE_TESTS)
        return check_node_suite(trial, required)


# Imports the moved module and the public API, and fails unless both export
# the same Transaction class.
_TRANSACTION_IMPORT = """\
const moved = await import('./src/transaction.js');
const api = await import('./src/index.js');
if (typeof moved.Transaction !== 'function') {
  throw new Error('src/transaction.js does not export a Transaction class');
}
if (api.Transaction !== moved.Transaction) {
  throw new Error('src/index.js does not export the Transaction of src/transaction.js');
}
"""


def _check_rename_journal_entry(root: Path) -> CheckResult:
    if (root / "src" / "journal.js").exists():
        return CheckResult(False, "src/journal.js still exists; it should have moved")
    if not (root / "src" / "transaction.js").is_file():
        return CheckResult(False, "src/transaction.js does not exist")
    sources = sorted([*root.glob("src/**/*.js"), *root.glob("test/**/*.js")])
    leftovers = []
    for path in sources:
        relative = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        leftovers += [f"{relative}:{line}" for line in _js_lines_naming(source, "JournalEntry")]
    if leftovers:
        return CheckResult(False, f"JournalEntry is still used at {listing(leftovers)}")
    node = shutil.which("node") or "node"
    error = script_error(root, [node, "--input-type=module", "-e", _TRANSACTION_IMPORT])
    if error:
        return CheckResult(False, f"Transaction is not importable:\n{error}")
    return check_node_suite(root, pristine_node_tests("ledger_js"))


# Tokens of JavaScript that can hide an identifier, or end a `${...}` of a
# template literal. Regular-expression literals are not told apart from
# division; read as code, they can only add identifiers, never hide one.
_JS_CODE_TOKEN = re.compile(
    r"""
      (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
    | (?P<string>'(?:\\.|[^'\\\n])*'?|"(?:\\.|[^"\\\n])*"?)
    | (?P<tick>`)
    | (?P<open>\{)
    | (?P<close>\})
    | (?P<name>[A-Za-z_$][\w$]*)
    | (?P<other>.)
    """,
    re.S | re.X,
)
_JS_TEMPLATE_TOKEN = re.compile(
    r"(?P<escape>\\.)|(?P<open>\$\{)|(?P<tick>`)|(?P<other>[^\\$`]+|.)", re.S
)


def _js_lines_naming(source: str, name: str) -> list[int]:
    """Lines where ``name`` is an identifier of JavaScript ``source``.

    Comments, strings and the text of template literals do not count; the
    code inside a template's ``${...}`` does.
    """
    lines = []
    in_template = [False]  # one level per template, and per `${...}` inside one
    braces = [0]  # open braces at each code level, to find where a `${...}` ends
    pos = 0
    while pos < len(source):
        pattern = _JS_TEMPLATE_TOKEN if in_template[-1] else _JS_CODE_TOKEN
        match = pattern.match(source, pos)
        assert match is not None  # both patterns end in a catch-all
        kind = match.lastgroup
        if in_template[-1]:
            if kind == "tick":
                in_template.pop()
            elif kind == "open":
                in_template.append(False)
                braces.append(0)
        elif kind == "name" and match.group() == name:
            lines.append(source.count("\n", 0, pos) + 1)
        elif kind == "tick":
            in_template.append(True)
        elif kind == "open":
            braces[-1] += 1
        elif kind == "close" and braces[-1] > 0:
            braces[-1] -= 1
        elif kind == "close" and len(in_template) > 1:
            in_template.pop()  # the end of a `${...}`: back into its template
            braces.pop()
        pos = match.end()
    return lines


_LEDGER_FIX_SOLUTION: tuple[ToolCall, ...] = (
    ("run", {"command": "node --test"}),
    ("read", {"symbol": "Money.parse"}),
    ("replace_string", dict(LEDGER_FIX)),
    _LEDGER_TESTS,
    ("finish", {"summary": "Money.parse takes the sign from the text, so -0.50 is -50 cents."}),
)

_REVERSE_ENTRY_SOLUTION: tuple[ToolCall, ...] = (
    ("read", {"symbol": "Ledger.post"}),
    (
        "create",
        {
            "path": "src/errors.js",
            "into": "*",
            "content": """\
/** An entry number that the ledger has not posted. */
export class UnknownEntryError extends LedgerError {
  constructor(id) {
    super(`no posted entry #${id}`);
    this.id = id;
  }
}
""",
        },
    ),
    (
        "multiedit",
        {
            "edits": [
                {
                    "path": "src/index.js",
                    "old_string": "  UnknownAccountError,\n",
                    "new_string": "  UnknownAccountError,\n  UnknownEntryError,\n",
                },
                {
                    "path": "src/ledger.js",
                    "old_string": "import { LedgerError, UnknownAccountError } from './errors.js';\n",
                    "new_string": "import { LedgerError, UnknownAccountError, UnknownEntryError } "
                    "from './errors.js';\nimport { JournalEntry } from './journal.js';\n",
                },
                {
                    "path": "src/ledger.js",
                    "old_string": "  #entries = [];\n",
                    "new_string": "  #entries = [];\n  #reversals = new Map(); // entry id -> id of its reversal\n",
                },
            ]
        },
    ),
    (
        "edit_symbols",
        {
            "edits": [
                {
                    "symbol": "Ledger.postAll",
                    "action": "insert_after",
                    "new_source": """\
/**
 * Post an entry dated `date` that undoes entry `id`: the same lines with
 * debits and credits swapped. An entry is reversed at most once, and a
 * reversal is never reversed itself.
 */
reverse(id, date) {
  const original = this.entry(id);
  if (original === undefined) {
    throw new UnknownEntryError(id);
  }
  if (this.#reversals.has(id)) {
    throw new LedgerError(`entry #${id} is already reversed by #${this.#reversals.get(id)}`);
  }
  if ([...this.#reversals.values()].includes(id)) {
    throw new LedgerError(`entry #${id} is a reversal and cannot be reversed`);
  }
  const reversal = new JournalEntry({
    date,
    description: `Reversal of #${id}: ${original.description}`,
    lines: original.lines.map((line) => ({
      ...line,
      side: line.side === 'debit' ? 'credit' : 'debit',
    })),
  });
  this.post(reversal);
  this.#reversals.set(id, reversal.id);
  return reversal;
}
""",
                }
            ]
        },
    ),
    _LEDGER_TESTS,
    ("finish", {"summary": "Added Ledger.reverse and UnknownEntryError."}),
)

_LEDGER_FILES_NAMING_JOURNAL_ENTRY = (
    "test/journal.test.js",
    "test/ledger.test.js",
    "test/report.test.js",
)

_RENAME_JOURNAL_ENTRY_SOLUTION: tuple[ToolCall, ...] = (
    ("search", {"query": "JournalEntry|journal\\.js", "regex": True}),
    ("run", {"command": "mv src/journal.js src/transaction.js"}),
    (
        "multiedit",
        {
            "edits": [
                {
                    "path": "src/transaction.js",
                    "old_string": " * Journal entries: a dated description",
                    "new_string": " * Transactions: a dated description",
                },
                {
                    "path": "src/transaction.js",
                    "old_string": "export class JournalEntry {",
                    "new_string": "export class Transaction {",
                },
                {
                    "path": "src/csv.js",
                    "old_string": "import { JournalEntry } from './journal.js';",
                    "new_string": "import { Transaction } from './transaction.js';",
                },
                {
                    "path": "src/csv.js",
                    "old_string": "new JournalEntry(",
                    "new_string": "new Transaction(",
                },
                {
                    "path": "src/index.js",
                    "old_string": " * - `journal.js`: `JournalEntry`, balanced",
                    "new_string": " * - `transaction.js`: `Transaction`, balanced",
                },
                {
                    "path": "src/index.js",
                    "old_string": "export { JournalEntry, SIDES, parseDate } from './journal.js';",
                    "new_string": "export { SIDES, Transaction, parseDate } from './transaction.js';",
                },
                *(
                    {
                        "path": path,
                        "old_string": "JournalEntry",
                        "new_string": "Transaction",
                        "replace_all": True,
                    }
                    for path in _LEDGER_FILES_NAMING_JOURNAL_ENTRY
                ),
                {
                    "path": "README.md",
                    "old_string": "`src/journal.js`",
                    "new_string": "`src/transaction.js`",
                },
                {
                    "path": "README.md",
                    "old_string": "JournalEntry",
                    "new_string": "Transaction",
                    "replace_all": True,
                },
            ]
        },
    ),
    _LEDGER_TESTS,
    ("finish", {"summary": "JournalEntry is now Transaction, in src/transaction.js."}),
)


LEDGER_JS_TASKS: list[Task] = [
    Task(
        id="ledger_js/fix-failing-test",
        workspace="ledger_js",
        kind="bug",
        prompt="fix the failing test in ledger_js",
        setup=no_setup,
        check=_check_ledger_fixed,
        solution=_LEDGER_FIX_SOLUTION,
    ),
    Task(
        id="ledger_js/reverse-entry",
        workspace="ledger_js",
        kind="feature",
        prompt=(
            "add reversing entries to ledger_js: Ledger.reverse(id, date) posts and "
            "returns a new entry dated `date` that undoes the posted entry number `id`: "
            "the same lines (accounts, amounts and memos, in the same order) with debits "
            "and credits swapped, and the description `Reversal of #<id>: <description "
            "of the original>`. An id that was never posted throws UnknownEntryError, a "
            "new LedgerError subclass exported from src/errors.js and src/index.js; "
            "reversing an entry a second time, or reversing a reversal, throws "
            "LedgerError. Nothing is posted when it throws"
        ),
        setup=_apply_ledger_fix,
        check=_check_reverse_entry,
        solution=_REVERSE_ENTRY_SOLUTION,
    ),
    Task(
        id="ledger_js/rename-journal-entry",
        workspace="ledger_js",
        kind="refactor",
        prompt=(
            "in ledger_js, rename the JournalEntry class to Transaction and move "
            "src/journal.js, with everything in it, to src/transaction.js; update every "
            "import and use, tests included, and keep no alias, re-export or file under "
            "the old name"
        ),
        setup=_apply_ledger_fix,
        check=_check_rename_journal_entry,
        solution=_RENAME_JOURNAL_ENTRY_SOLUTION,
    ),
]
