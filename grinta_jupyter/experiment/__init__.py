"""The harness experiment: the same model and tasks under two toolsets, measured.

``runner`` turns one (task, toolset, model, seed) into an event log and a
verdict; ``suite`` runs many of them in parallel processes and resumes;
``stats`` summarises with bootstrap confidence intervals. See docs/experiment.md.
"""
