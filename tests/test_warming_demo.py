"""A kernel with no model configured is not made to import litellm.

The extension's background warming imported litellm in every kernel, the demo's included
(about 4 s of processor and 230 MB that a demo session never uses). It now imports it only
when the environment names a model litellm calls, or once a panel's picker chooses one
(``grinta_jupyter.want_model``); a demo session runs without it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from grinta_jupyter.jupyter.controller import model_configured
from tests.kernels import execute, running_kernel, wait_for


def test_a_demo_kernel_warms_without_litellm_until_a_model_is_chosen(tmp_path):
    # A provider key in the environment: the picker offers that provider's models.
    with running_kernel(tmp_path, {"OPENAI_API_KEY": "sk-test-warming"}) as kc:
        execute(kc, "%load_ext grinta_jupyter")
        execute(kc, "import grinta_jupyter, sys")
        wait_for(kc, "grinta_jupyter._warmed.is_set()")
        assert execute(kc, "print(sorted(grinta_jupyter._warming_times))").strip() == (
            "['imports', 'tokens']"
        )
        assert execute(kc, "print('litellm' in sys.modules)").strip() == "False"
        # A demo session runs to its end without it.
        execute(kc, "%grinta --auto fix the failing test")
        wait_for(kc, "grinta_jupyter.current().done", timeout=120)
        assert execute(kc, "print(grinta_jupyter.current().end_reason)").strip() == "finished"
        assert execute(kc, "print('litellm' in sys.modules)").strip() == "False"
        # Choosing the demo in the picker changes nothing; choosing a model warms litellm.
        execute(
            kc,
            "from grinta_jupyter.jupyter.modelbar import model_bar\n"
            "bar = model_bar()\n"
            "bar.receive({'event': 'choose', 'model': 'demo'})\n"
            "print(bar.status)",
        )
        assert execute(kc, "print(grinta_jupyter._model_later)").strip() == "None"
        chosen = execute(
            kc,
            "name = next(c['name'] for c in bar.choices if c['name'].startswith('openai/'))\n"
            "bar.receive({'event': 'choose', 'model': name})\n"
            "print(bar.status)",
        )
        assert "the next session uses openai/" in chosen
        wait_for(kc, "'litellm' in sys.modules and not grinta_jupyter._model_later.is_alive()")
        # Chosen twice: one import, one thread.
        execute(kc, "first = grinta_jupyter._model_later\ngrinta_jupyter.want_model()")
        assert execute(kc, "print(grinta_jupyter._model_later is first)").strip() == "True"


def test_a_model_wanted_while_the_warming_runs_is_imported_by_it(tmp_path):
    # Outside a kernel, the warming thread started by hand: a choice made before the
    # warming decides is seen by it (no second thread), one made after it starts one.
    script = textwrap.dedent(
        """
        import sys, grinta_jupyter as g
        g._start_warming()
        g.want_model()  # before the warming's imports are over
        g._warming.join(120)
        print('litellm' in sys.modules, sorted(g._warming_times), g._model_later)
        """
    )
    ran = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
        env={"PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split("\n")[0] == "True ['imports', 'model', 'tokens'] None"


def test_want_model_without_a_warming_does_nothing():
    # A plain interpreter (a script, a test): no warming ran, nothing starts.
    script = "import sys, grinta_jupyter as g; g.want_model(); print(g._model_later, 'litellm' in sys.modules)"
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "None False"


@pytest.mark.parametrize(
    ("environment", "wanted"),
    [
        ({}, False),
        ({"GRINTA_MODEL": ""}, False),
        ({"GRINTA_MODEL": "  "}, False),
        ({"GRINTA_MODEL": "demo"}, False),
        ({"GRINTA_MODEL": " demo "}, False),
        ({"GRINTA_MODEL": "openai/gpt-4o-mini"}, True),
        ({"GRINTA_MODEL": "ollama_chat/qwen2.5-coder:7b"}, True),
        # A configuration that cannot be read: warmed as before (the error comes at %grinta).
        ({"GRINTA_MODEL": "openai/x", "GRINTA_MAX_STEPS": "many"}, True),
        ({"GRINTA_MAX_STEPS": "many"}, True),
    ],
)
def test_which_environments_want_litellm(monkeypatch, environment, wanted):
    for name in ("GRINTA_MODEL", "GRINTA_MAX_STEPS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert model_configured() is wanted
