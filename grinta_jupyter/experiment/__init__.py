"""The harness experiment: the same model and tasks under two toolsets, measured.

``runner`` turns one (task, toolset, model, seed) into an event log and a
verdict; ``suite`` runs many of them and resumes, through a ``backends``
backend (local processes, or one Ray task per run); ``stats`` summarises with
bootstrap confidence intervals; ``report`` writes the HTML report and
``progress`` the progress bar. ``taskbuild`` makes tasks from real packages
(``mutate``: the injected bugs; ``taskdir``: a folder of built tasks);
``commands`` holds the CLI's ``tasks build`` and ``eval`` options. See
docs/experiment.md.
"""
