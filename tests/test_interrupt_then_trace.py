"""After ``execute`` interrupts code, tracing and profiling still work in that process.

On CPython 3.11, clearing a pending asynchronous exception with
``PyThreadState_SetAsyncExc(ident, NULL)`` leaves the interpreter signalled with no thread to
take the signal; every later call under ``sys.settrace`` or ``sys.setprofile`` (a debugger,
``%prun``, coverage) then spins on its first instruction for ever. Each case runs in a child
process, so a hang fails the test instead of stopping the suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CHILD = """
import sys, threading, time
from grinta_jupyter.tools.base import Settings
from grinta_jupyter.tools.execute import run_code

space = {{}}
{interrupt}

def traced():
    return sum(range(10))

seen = []
sys.settrace(lambda frame, event, arg: seen.append(event))
traced()
sys.settrace(None)
sys.setprofile(lambda frame, event, arg: seen.append(event))
traced()
sys.setprofile(None)
import cProfile
cProfile.Profile().runcall(traced)
print("traced", len(seen) > 0)
"""

CASES = {
    "a time limit in a Python loop": """
observation = run_code(space, "n = 0\\nwhile True:\\n    n += 1", 0.3, Settings())
assert observation.error is not None and observation.error.code == "COMMAND_TIMEOUT", observation
""",
    "the session's Stop": """
cancel = threading.Event()
threading.Timer(0.3, cancel.set).start()
observation = run_code(space, "while True:\\n    pass", 30, Settings(), cancel=cancel)
assert observation.error is not None and "stopped" in observation.error.message, observation
""",
    "a time limit inside time.sleep, taken when the sleep returns": """
observation = run_code(space, "import time\\ntime.sleep(1.0)\\nafter = 1", 0.2, Settings(), grace=0.1)
assert observation.error is not None and "did not stop" in observation.error.message, observation
time.sleep(1.5)  # the sleep returns, the interrupt lands, the worker thread ends
assert "after" not in space
""",
    "code that catches the interrupt and finishes": """
code = "try:\\n    while True:\\n        pass\\nexcept BaseException:\\n    caught = 1"
observation = run_code(space, code, 0.3, Settings())
assert space.get("caught") == 1, observation
""",
}


@pytest.mark.parametrize("case", CASES)
def test_tracing_and_profiling_work_after_an_interrupt(case: str) -> None:
    code = CHILD.format(interrupt=textwrap.dedent(CASES[case]))
    try:
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a traced call hung after the interrupt (the child was killed after 60 s)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "traced True"
