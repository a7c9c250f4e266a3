"""Random sequences of edits, commits and undos keep the workspace equal to a model of it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grinta_jupyter import Runtime
from tests.conftest import snapshot

WORDS = ["alpha", "beta", "gamma", "delta", "alpha beta", "\n", "x = 1", "é", "\r\n"]

op = st.one_of(
    st.tuples(
        st.just("replace"),
        st.integers(0, 2),
        st.sampled_from(WORDS),
        st.sampled_from(WORDS),
        st.booleans(),
    ),
    st.tuples(st.just("create"), st.integers(0, 5), st.text(min_size=0, max_size=20)),
    st.tuples(st.just("undo")),
    st.tuples(st.just("stale"), st.integers(0, 2)),
    st.tuples(st.just("multi"), st.integers(0, 2), st.integers(0, 2), st.sampled_from(WORDS)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=12))
def test_random_operations_match_the_model(ops):
    root = Path(tempfile.mkdtemp())
    try:
        names = [f"f{i}.txt" for i in range(3)]
        for i, name in enumerate(names):
            (root / name).write_bytes(
                ["alpha beta\ngamma\n", "alpha\r\nbeta\r\n", "delta"][i].encode()
            )
        rt = Runtime(root)
        model = snapshot(root)
        # Each commit: (bytes before, bytes after) of the files it touched; None = absent.
        history: list[tuple[dict[str, bytes | None], dict[str, bytes | None]]] = []
        for item in ops:
            kind = item[0]
            before = snapshot(root)
            if kind == "replace":
                _, idx, old, new, replace_all = item
                obs = rt.call(
                    "replace_string",
                    {
                        "path": names[idx],
                        "old_string": old,
                        "new_string": new,
                        "replace_all": replace_all,
                    },
                )
            elif kind == "create":
                _, idx, content = item
                obs = rt.call("create", {"path": f"new/n{idx}.txt", "content": content})
            elif kind == "multi":
                _, a, b, word = item
                obs = rt.call(
                    "multiedit",
                    {
                        "edits": [
                            {
                                "path": names[a],
                                "old_string": word,
                                "new_string": word + "!",
                                "replace_all": True,
                            },
                            {
                                "path": names[b],
                                "old_string": "alpha",
                                "new_string": "omega",
                                "replace_all": True,
                            },
                        ]
                    },
                )
            elif kind == "stale":
                path = root / names[item[1]]
                p = rt.propose(
                    "replace_string",
                    {
                        "path": names[item[1]],
                        "old_string": path.read_text()[:1] or "z",
                        "new_string": "Q",
                    },
                )
                path.write_bytes(path.read_bytes() + b"outside\n")
                model = snapshot(root)
                before = model
                obs = rt.commit(p) if p.ok else rt.call("read", {"path": names[item[1]]})
                if p.ok:
                    assert obs.error.code == "STALE_FILE"
                assert snapshot(root) == model
                continue
            else:
                obs = rt.undo()
                if not history:
                    assert obs.error.code == "NOTHING_TO_UNDO"
                else:
                    old, new = history[-1]
                    intact = all(model.get(k) == v for k, v in new.items())
                    assert obs.ok == intact, obs.output
                    if intact:
                        history.pop()
                        for k, v in old.items():
                            if v is None:
                                model.pop(k, None)
                            else:
                                model[k] = v
                    else:
                        assert obs.error.code == "STALE_FILE"
                assert snapshot(root) == model
                continue
            if obs.ok:
                after = snapshot(root)
                touched = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
                history.append(
                    ({k: before.get(k) for k in touched}, {k: after.get(k) for k in touched})
                )
                model = after
            else:
                assert snapshot(root) == before, f"refused {kind} changed bytes: {obs.error}"
            assert snapshot(root) == model
    finally:
        shutil.rmtree(root)
