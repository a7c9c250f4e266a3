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

__all__ = ["Runtime", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Runtime":
        from grinta_jupyter.tools.facade import Runtime

        return Runtime
    raise AttributeError(name)
