"""grinta-jupyter: a Jupyter-native, step-by-step coding agent.

The public surface is small and imports nothing heavy at load time:
``Runtime`` (the headless, transactional tool runtime) and the IPython
extension hooks. Everything else is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from grinta_jupyter.tools.facade import Runtime

__all__ = ["Runtime", "__version__", "current", "load_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext grinta_jupyter``: register ``%grinta`` / ``%%grinta`` (nothing heavy is imported)."""
    from grinta_jupyter.jupyter.magics import GrintaMagics

    ipython.register_magics(GrintaMagics)


def current() -> Any:
    """The session the last ``%grinta`` started in this kernel, or None."""
    from grinta_jupyter.jupyter.controller import current as _current

    return _current()


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where ``jupyter labextension develop`` finds the built JupyterLab extension."""
    return [{"src": "labextension", "dest": "grinta-jupyter-labextension"}]


def __getattr__(name: str) -> Any:
    if name == "Runtime":
        from grinta_jupyter.tools.facade import Runtime

        return Runtime
    raise AttributeError(name)
