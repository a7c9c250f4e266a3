"""grinta-jupyter: a Jupyter-native, step-by-step coding agent.

The public surface is small and imports nothing heavy at load time:
``Runtime`` (the headless, transactional tool runtime) and the IPython
extension hooks. Everything else is imported on first use.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any

from grinta_jupyter.runtime import collector

__version__ = "0.1.0"

if TYPE_CHECKING:
    from grinta_jupyter.tools.facade import Runtime

__all__ = ["Runtime", "__version__", "current", "load_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext grinta_jupyter``: register ``%grinta`` / ``%%grinta`` (nothing heavy is imported).

    In a kernel, what the first ``%grinta`` would spend seconds on (imports, the
    token encoding, and litellm when a model is configured or chosen: ``want_model``)
    starts in a background thread instead (``jupyter.controller.warm_imports``,
    ``warm_model`` and ``warm_tokens``; until the encoding is loaded, a helper process
    counts tokens: runtime/counting.py). A plain IPython shell
    (a script, a test) gets no thread: it imports on first use, as before. Either way the
    shell's cell parses take grinta's parsing lock (``runtime/pyast.share_with_the_kernel``).
    """
    from grinta_jupyter.jupyter.magics import GrintaMagics
    from grinta_jupyter.runtime import pyast

    ipython.register_magics(GrintaMagics)
    pyast.share_with_the_kernel(ipython)
    if getattr(ipython, "kernel", None) is not None:
        _start_warming()


# The background warming: started at most once per process; ``_imported`` is set when its
# imports of grinta's own modules are over (done or failed), see ``settle``; ``_warmed``
# when the whole warming is over (litellm included), see ``settle_warming``.
_warming: threading.Thread | None = None
_imported = threading.Event()
_warmed = threading.Event()
# Set by ``%grinta`` before it waits for the imports (``hold_model_warming``): a session's
# first model call may go out before litellm is loaded (agent/models/early.py), and
# litellm's import beside it, on the same interpreter lock, would take half the processor
# from it and from the first card. The warming then imports litellm once the first card
# is shown or the session needs litellm (``release_model_warming``), or after
# ``MODEL_HOLD_S`` whatever happens.
_model_held = threading.Event()
_model_released = threading.Event()
MODEL_HOLD_S = 10.0
# Set once a view has shown its session's first card (or its session ended first): the
# warming loads the token encoding after it, when a session was started (``_model_held``).
_card_shown = threading.Event()
# When each phase of the warming ended, in seconds after it started (for
# benchmarks/bench_startup.py): "imports", then "model" (where litellm is wanted), "tokens".
_warming_times: dict[str, float] = {}


# Whether litellm's import is wanted: a model that calls it is configured (``_warm`` looks
# at the environment) or was chosen in a panel's picker since (``want_model``). A warming
# that found it unwanted ends without it and says so (``_model_skipped``); a later choice
# then imports it in a thread of its own (``_model_later``).
_model_wanted = threading.Event()
_model_lock = threading.Lock()
_model_skipped = False
_model_later: threading.Thread | None = None


def _start_warming() -> None:
    global _warming
    if _warming is None:
        _warming = threading.Thread(target=_warm, name="grinta-warming", daemon=True)
        _warming.start()


def _warm() -> None:
    """The warming thread. Warming only saves time: whatever fails here is left to fail
    again, with its own error, where it is really needed, so nothing is reported here."""
    started = time.perf_counter()
    try:
        with collector.full_passes_paused():
            try:
                from grinta_jupyter.runtime import counting

                # Counts are made in a process of its own until the encoding is loaded
                # here, after the first card (below): its load takes the interpreter's
                # lock for over half a second. Started before any import of the warming's.
                counting.start()
                from grinta_jupyter.jupyter import controller

                if controller.model_configured():
                    _model_wanted.set()
                    controller.plan_model_import()  # early calls leave the import to us
                controller.warm_imports()
            except Exception:
                return
            finally:
                _warming_times["imports"] = time.perf_counter() - started
                _imported.set()
            # litellm first, where it is wanted: a first call may be waiting for it, and the
            # helper counts meanwhile. Then the encoding, once a session started meanwhile
            # has shown its first card: its load beside that call would delay the card.
            if _model_still_wanted():
                _warm_model()
                _warming_times["model"] = time.perf_counter() - started
            if _model_held.is_set():
                _card_shown.wait(MODEL_HOLD_S)
            controller.warm_tokens()
            _warming_times["tokens"] = time.perf_counter() - started
    finally:
        _warmed.set()


def _model_still_wanted() -> bool:
    global _model_skipped
    with _model_lock:
        _model_skipped = not _model_wanted.is_set()
        return not _model_skipped


def _warm_model() -> None:
    from grinta_jupyter.jupyter import controller

    if _model_held.is_set():
        _model_released.wait(MODEL_HOLD_S)
    controller.warm_model()


def want_model() -> None:
    """A model that calls litellm was chosen (a panel's picker): a warming that skipped
    litellm, no model being configured when the extension loaded, imports it now in a
    background thread, so the first call does not wait seconds for it. Nothing happens
    where the warming imports it anyway, or where none runs (a plain IPython shell)."""
    global _model_later
    with _model_lock:
        _model_wanted.set()
        if not _model_skipped or _model_later is not None:
            return
        _model_later = threading.Thread(target=_warm_model_later, name="grinta-model", daemon=True)
        _model_later.start()


def _warm_model_later() -> None:
    with collector.full_passes_paused(), contextlib.suppress(Exception):
        from grinta_jupyter.jupyter import controller

        controller.plan_model_import()
        _warm_model()


def hold_model_warming() -> None:
    """Ask the warming not to start litellm's import until ``release_model_warming``."""
    _model_held.set()


def release_model_warming() -> None:
    """Let the warming import litellm (at once if it is not held, or already past that)."""
    _model_released.set()


def first_card_shown() -> None:
    """A view has shown its session's first card (or the session ended before one): the
    warming, if it waits for that, loads the token encoding now."""
    _card_shown.set()


def settle_first_card(timeout: float = MODEL_HOLD_S) -> None:
    """Wait until the warming may import litellm: the first card of a session whose first
    call went out without it is shown (``release_model_warming``), at most ``timeout``."""
    _model_released.wait(timeout)


def settle(timeout: float = 60.0) -> None:
    """Wait until the warming thread has imported grinta's modules (at once if none runs).

    Called before grinta's modules are imported on the kernel's thread: two threads
    importing the same modules at once can see a half-initialised module or a
    deadlock error. The timeout only bounds a wait that should never be long.
    """
    if _warming is not None and _warming is not threading.current_thread():
        _imported.wait(timeout)


def settle_warming(timeout: float = 60.0) -> None:
    """Wait until the warming thread has ended, litellm imported (at once if none runs).

    Work that competes with the warming for the processor and is not needed before the
    model's first answer (indexing the workspace) waits for it: the first card comes
    after that answer, which needs litellm.
    """
    if _warming is not None and _warming is not threading.current_thread():
        _warmed.wait(timeout)


def current() -> Any:
    """The session the last ``%grinta`` started in this kernel, or None."""
    settle()
    from grinta_jupyter.jupyter.controller import current as _current

    return _current()


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where ``jupyter labextension develop`` finds the built JupyterLab extension."""
    return [{"src": "labextension", "dest": "grinta-jupyter-labextension"}]


def __getattr__(name: str) -> Any:
    if name == "Runtime":
        settle()
        from grinta_jupyter.tools.facade import Runtime

        return Runtime
    raise AttributeError(name)
