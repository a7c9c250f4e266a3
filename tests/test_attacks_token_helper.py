"""Attacks on the counting helper (tools/tokens.py): real subprocesses, no mocks of tiktoken.

Each scenario runs in a fresh interpreter, since the helper is a process's own. A few
scenarios replace the helper's code (``counting._CHILD``) with a misbehaving one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="pipes sized by Linux")


def run(script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (a stopped process counts as running)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _running(pid):
            return True
        time.sleep(0.05)
    return not _running(pid)


def _kill(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


# --- (1) the helper's counts are this process's counts ------------------------------------


def test_helper_counts_match_for_hostile_texts_at_the_pipe_edge_and_from_many_threads():
    ran = run(
        r"""
        import random, threading
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        tokens.start_helper()
        helper = counting.HELPER
        assert helper.count("warm") == 1
        cap = helper._capacity
        edge = "word " * ((cap - 4) // 5) + "x" * ((cap - 4) % 5)
        assert len(edge.encode()) + 4 == cap
        texts = [
            "", "\x00", "\x00" * 1000, "a\x00b\x00\x00c",
            "\ud83d\ude00",              # a surrogate *pair* as two code points
            "\ud83d", "\ude00\ud83d",    # reversed pair: two lone surrogates
            "x\udcff\udc80y" * 50,       # surrogateescape-style bytes
            "\U0010ffff\ufeff\ufffe", "\r\n" * 5000, " " * 70000,
            "<|endoftext|><|fim_prefix|><|im_start|>",
            "".join(chr(c) for c in range(0, 0x3000)),
            edge,                        # exactly what the pipe holds
        ]
        rng = random.Random(7)
        for _ in range(40):
            texts.append("".join(chr(rng.choice([rng.randrange(0, 0x80),
                                                 rng.randrange(0xD800, 0xE000),
                                                 rng.randrange(0x80, 0x110000)]))
                                 for _ in range(rng.randrange(0, 400))))
        from_helper = [helper.count(t) for t in texts]
        assert None not in from_helper, [repr(t[:20]) for t, c in zip(texts, from_helper)
                                         if c is None]
        results, errors = {}, []
        def worker(i):
            try:
                for j in range(30):
                    t = texts[(i * 7 + j) % len(texts)]
                    results[(i, j)] = (t, helper.count(t))
            except BaseException as e:
                errors.append(repr(e))
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
        for t in threads: t.start()
        for t in threads: t.join()
        assert not errors, errors
        over = edge + "x"                # one byte over: counted here, never written
        assert helper.count(over) is None
        tokens.load()
        enc = tokens._loaded
        bad = [repr(t[:20]) for t, c in zip(texts, from_helper)
               if c != len(enc.encode_ordinary(t))]
        bad += [repr(t[:20]) for t, c in results.values()
                if c is None or c != len(enc.encode_ordinary(t))]
        assert tokens.count_tokens(over) == len(enc.encode_ordinary(over))
        print("bad", bad)
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "bad []"


# --- (2) a misbehaving helper: a correct count or a fallback, within the patience ----------

# Each fake helper says it is up (unless told otherwise), then misbehaves on requests.
_FAKES = {
    # a count no text can have (more tokens than bytes): must not be returned
    "garbage_count": """
import sys, os
sys.stdout.buffer.write(b"R"); sys.stdout.buffer.flush()
while True:
    head = sys.stdin.buffer.read(4)
    if len(head) < 4: break
    sys.stdin.buffer.read(int.from_bytes(head, "little"))
    sys.stdout.buffer.write(b"\\xff\\xff\\xff\\x7f"); sys.stdout.buffer.flush()
""",
    # two bytes, then dies
    "partial_then_dies": """
import sys, os
sys.stdout.buffer.write(b"R"); sys.stdout.buffer.flush()
head = sys.stdin.buffer.read(4)
sys.stdout.buffer.write(b"\\x02\\x00"); sys.stdout.buffer.flush()
os._exit(0)
""",
    # two bytes, then silence (alive)
    "partial_then_stalls": """
import sys, time
sys.stdout.buffer.write(b"R"); sys.stdout.buffer.flush()
head = sys.stdin.buffer.read(4)
sys.stdout.buffer.write(b"\\x02\\x00"); sys.stdout.buffer.flush()
time.sleep(60)
""",
    # closes its stdout but lives on
    "closes_stdout": """
import sys, os, time
sys.stdout.buffer.write(b"R"); sys.stdout.buffer.flush()
os.close(1)
time.sleep(60)
""",
    # something other than the up byte
    "wrong_up_byte": """
import sys, time
sys.stdout.buffer.write(b"X\\x02\\x00\\x00\\x00"); sys.stdout.buffer.flush()
time.sleep(60)
""",
    # never comes up
    "never_up": """
import time
time.sleep(60)
""",
    # up, reads, never answers, closes stdin of its own
    "reads_and_exits": """
import sys
sys.stdout.buffer.write(b"R"); sys.stdout.buffer.flush()
sys.stdin.buffer.read(4)
""",
}


@pytest.mark.parametrize("fake", sorted(_FAKES))
def test_a_misbehaving_helper_gives_a_correct_count_or_a_fallback_in_time(fake):
    ran = run(
        f"""
        import time
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        counting._PATIENCE = 0.8
        counting._CHILD = {_FAKES[fake]!r}
        tokens.start_helper()
        pid = counting.HELPER._process.pid
        started = time.monotonic()
        counted = tokens.count_tokens("hello world")
        took = time.monotonic() - started
        print(counted, took < 0.8 + 3.0, tokens.count_tokens("hello there world"))
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "2 True 3", f"{fake}: {ran.stdout!r}"


def test_an_answer_repeated_by_the_helper_is_never_read_as_a_later_texts_count():
    # The helper's answer arrives twice (anything writing to its stdout would do this):
    # the second copy must not be taken as the next text's count.
    ran = run(
        """
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        line = 'write.write(count.to_bytes(4, "little"))'
        assert line in counting._CHILD
        answer = 'count.to_bytes(4, "little")'
        counting._CHILD = counting._CHILD.replace(answer, answer + " * 2")
        tokens.start_helper()
        first = counting.HELPER.count("hello world")  # the helper's own answer
        import time; time.sleep(0.3)
        second = tokens.count_tokens("one two three four five six seven")
        print(first, second)
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "2 7"


def test_a_slow_helper_asked_by_many_threads_keeps_each_caller_within_its_patience():
    # Each answer comes within the patience, but the callers queue behind one lock: each
    # waits at most the patience for the lock, then at most the patience for its answer
    # (here 0.5 s), and gives up (None: the count is then made in this process, whose load
    # of the encoding is not the helper's wait and is not timed here).
    ran = run(
        """
        import threading, time
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        line = 'write.write(count.to_bytes(4, "little"))'
        counting._CHILD = counting._CHILD.replace(line, "__import__('time').sleep(0.5); " + line)
        tokens.start_helper()
        assert counting.HELPER.count("warm") == 1  # up, and answering
        counting._PATIENCE = 0.8
        waits, counts = [], []
        def ask():
            started = time.monotonic()
            counts.append(counting.HELPER.count("hello world"))
            waits.append(time.monotonic() - started)
        threads = [threading.Thread(target=ask) for _ in range(6)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(sorted(set(counts), key=str), round(max(waits), 2), tokens.count_tokens("a b"))
        """
    )
    assert ran.returncode == 0, ran.stderr
    counts, longest, after = ran.stdout.strip().rsplit(" ", 2)
    assert counts in ("[2]", "[2, None]"), counts  # never a wrong number
    # The lock's patience, then the answer's (0.5 s here), and slack for a loaded machine.
    assert float(longest) < 0.8 + 0.5 + 0.6, f"a caller waited {longest} s, patience 0.8 s"
    assert after == "2"


def test_an_interrupt_while_waiting_for_the_helper_to_come_up_stops_it():
    ran = run(
        """
        import os, signal, threading, time
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        counting._CHILD = "import time; time.sleep(3); " + counting._CHILD
        tokens.start_helper()
        process = counting.HELPER._process
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            tokens.count_tokens("hello world")
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted")
        print(counting.HELPER._process, process.wait(2) is not None,
              tokens.count_tokens("hello world"))
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["interrupted", "None True 2"]


def test_a_fork_while_another_thread_counts_on_a_stuck_helper_does_not_block_the_child():
    ran = run(
        """
        import os, signal, threading, time
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        counting._PATIENCE = 3
        tokens.start_helper()
        assert tokens.count_tokens("warm") == 1
        process = counting.HELPER._process
        os.kill(process.pid, signal.SIGSTOP)
        threading.Thread(target=tokens.count_tokens, args=("x " * 50,), daemon=True).start()
        time.sleep(0.2)  # that thread holds the helper's lock now
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            signal.alarm(5)
            started = time.monotonic()
            n = tokens.count_tokens("hello world")
            os.write(write, f"{n} {time.monotonic() - started < 3}".encode())
            os._exit(0)
        os.close(write)
        os.waitpid(pid, 0)
        print(os.read(read, 100).decode())
        os.kill(process.pid, signal.SIGCONT)
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "2 True"


def test_a_fork_while_the_warming_loads_the_encoding_does_not_hang_the_childs_count():
    # (The load's lock predates the helper; the fallback of a forked child goes through it.)
    ran = run(
        """
        import os, signal, threading, time
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        loader = threading.Thread(target=tokens.load)
        loader.start()
        while not tokens._LOADING.locked():
            time.sleep(0.001)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            def hung(*_):
                os.write(write, b"hung"); os._exit(1)
            signal.signal(signal.SIGALRM, hung)
            signal.alarm(5)
            os.write(write, str(tokens.count_tokens("hello world")).encode())
            os._exit(0)
        os.close(write)
        os.waitpid(pid, 0)
        loader.join()
        print(os.read(read, 100).decode())
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "2"


# --- (3) no helper outlives its use ---------------------------------------------------------


def test_the_helper_ends_with_its_process_even_when_a_forked_child_lives_on():
    ran = run(
        """
        import os, time
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        tokens.start_helper()
        assert tokens.count_tokens("warm") == 1
        helper = counting.HELPER._process.pid
        pid = os.fork()
        if pid == 0:
            time.sleep(6)  # a multiprocessing worker, say
            os._exit(0)
        print(helper, pid, flush=True)
        os._exit(0)  # killed, crashed: no atexit
        """
    )
    helper, child = map(int, ran.stdout.split())
    try:
        assert _gone_within(helper, 2), "the helper lives on while a forked child lives"
    finally:
        _kill(child)
        _kill(helper)


def test_a_stopped_helper_does_not_outlive_a_process_that_exits_mid_count():
    ran = run(
        """
        import os, signal, threading, time
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        tokens.start_helper()
        assert tokens.count_tokens("warm") == 1
        process = counting.HELPER._process
        os.kill(process.pid, signal.SIGSTOP)
        threading.Thread(target=tokens.count_tokens, args=("a b c",), daemon=True).start()
        time.sleep(0.2)
        print(process.pid, flush=True)
        # an ordinary exit, atexit included, while that count is under way
        """
    )
    assert ran.returncode == 0, ran.stderr
    helper = int(ran.stdout.strip())
    try:
        assert _gone_within(helper, 2), "the stopped helper outlived its process"
    finally:
        _kill(helper)


def test_load_while_many_threads_count_no_error_no_wrong_count_no_helper_left():
    ran = run(
        """
        import os, random, threading, time
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        fds_before = set(os.listdir("/proc/self/fd"))
        tokens.start_helper()
        assert tokens.count_tokens("warm") == 1
        process = counting.HELPER._process
        rng = random.Random(3)
        texts = ["".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0xD800, 0xE000),
                                         rng.randrange(0x4E00, 0x9FFF)]))
                         for _ in range(rng.randrange(0, 2000))) for _ in range(60)]
        results, errors = [], []
        go = threading.Event()
        def worker(i):
            go.wait()
            try:
                for j in range(40):
                    t = texts[(i * 13 + j) % len(texts)]
                    results.append((t, tokens.count_tokens(t)))
            except BaseException as e:
                errors.append(repr(e))
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(10)]
        threads.append(threading.Thread(target=lambda: (go.wait(), time.sleep(0.05),
                                                        tokens.load())))
        for t in threads: t.start()
        go.set()
        for t in threads: t.join()
        enc = tokens._loaded
        wrong = sum(c != len(enc.encode_ordinary(t)) for t, c in results)
        process.wait(2)
        leaked = set(os.listdir("/proc/self/fd")) - fds_before
        print(errors, wrong, len(results), counting.HELPER._process, process.returncode is not None,
              len(leaked) <= 1)
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[] 0 400 None True True"


# --- (4) environment and network ------------------------------------------------------------


_NET_GUARD = """
import sys
def _guard(event, args):
    if event.startswith("socket.") or event == "urllib.Request":
        open({marker!r}, "a").write("helper " + event + "\\n")
        raise RuntimeError("network")
sys.addaudithook(_guard)
"""


def test_environment_untouched_helper_gets_no_user_variables_and_nothing_is_downloaded(tmp_path):
    marker = tmp_path / "net"
    ran = run(
        f"""
        import os, sys
        os.environ["TIKTOKEN_CACHE_DIR"] = {str(tmp_path / "empty")!r}
        os.environ["HTTPS_PROXY"] = "http://127.0.0.1:9"
        os.environ["PYTHONPATH"] = "/nowhere"
        os.environ["GRINTA_SECRET"] = "s3cret"
        def guard(event, args):
            if event.startswith("socket.") or event == "urllib.Request":
                open({str(marker)!r}, "a").write("parent " + event + "\\n")
                raise RuntimeError("network")
        sys.addaudithook(guard)
        from grinta_jupyter.tools import tokens
        from grinta_jupyter.runtime import counting
        counting._CHILD = {_NET_GUARD.format(marker=str(marker))!r} + counting._CHILD
        before = dict(os.environ)
        tokens.start_helper()
        from_helper = counting.HELPER.count("hello world")
        with open(f"/proc/{{counting.HELPER._process.pid}}/environ", "rb") as f:
            keys = sorted(k.split(b"=", 1)[0].decode() for k in f.read().split(b"\\0") if k)
        tokens.load()
        print(from_helper, tokens.count_tokens("hello world"), dict(os.environ) == before,
              [k for k in keys if k not in ("PATH", "LD_LIBRARY_PATH")])
        """
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "2 2 True []"
    assert not marker.exists(), marker.read_text()
    assert not (tmp_path / "empty").exists()
