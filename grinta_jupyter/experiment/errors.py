"""The experiment's one error type for a user's mistake (cli.py shows it as one line)."""

from __future__ import annotations


class ExperimentUsageError(ValueError):
    """A mistake the user can fix: a bad package name, a folder that is not a task folder, a
    backend that cannot work. The message is the one line they see."""


class BackendError(ExperimentUsageError):
    """--backend/--address that cannot work: an unknown backend, Ray not installed, a Ray that
    does not start or a cluster that cannot be joined."""
