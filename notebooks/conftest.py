# The demo copies the raft_kv sample next to the notebooks; its own tests are not ours.
collect_ignore_glob = ["raft_kv*", "make_notebooks.py"]
