"""Secrets told by their value, not their name: a provider's key under a plain name, and a
secret's value copied to another variable, stay out of commands and of what the model reads.

Before stop 32 only a secret *name* (or a URL's password) made a variable secret: a key
exported as ``FOO`` or copied into ``CURL_OPTS`` reached every command, and its value
reached the model when a command printed it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grinta_jupyter.agent.models import ScriptedModel, call, reply
from grinta_jupyter.agent.session import Session
from grinta_jupyter.runtime import secrets
from grinta_jupyter.runtime.secrets import Secrets, command_environment, is_secret_variable
from tests.conftest import drive

# Shapes of real credentials (made up: none of them works anywhere).
CREDENTIALS = [
    "sk-proj-Q2xv9TzL0pW3mA7rKc1YbN5s",
    "sk-ant-api03-Zy8Hq1LmPn3Vx5Rt7Wb9Kc2",
    "sk_live_51Hq8ZkT2mLx9VbN3c",
    "ghp_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "glpat-Xy12Zw34Vu56Ts78Rq90",
    "AKIAIOSFODNN7EXAMPLE",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "xoxb-1234567890-abcdefghij",
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]

# Ordinary values a machine's environment holds, none of them a credential.
ORDINARY = [
    "/usr/local/bin:/usr/bin:/bin",
    "sk-short",
    "task-runner-for-the-ask-queue",
    "en_US.UTF-8",
    "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33",
    "AKIA is how AWS key ids start",
    "xterm-256color",
    "eyJ",
]


@pytest.mark.parametrize("value", CREDENTIALS)
def test_a_credential_under_a_plain_name_is_secret(value):
    assert is_secret_variable("FOO", value)
    assert is_secret_variable("CURL_OPTS", f"-H 'Authorization: Bearer {value}'")
    assert Secrets.from_env({"FOO": value}).redact(f"it is {value}.") == "it is [REDACTED]."


@pytest.mark.parametrize("value", ORDINARY)
def test_ordinary_values_are_not_secret(value):
    assert not is_secret_variable("SOME_SETTING", value)
    assert command_environment({"SOME_SETTING": value}) == {"SOME_SETTING": value}


def test_a_credential_inside_a_longer_word_is_not_taken_for_one():
    # The prefix must start the word: "task-..." holds "sk-" and is a task name.
    assert not is_secret_variable("JOB", "task-" + "a" * 30)
    assert not is_secret_variable("JOB", "mask_live_" + "a" * 30)


def test_a_private_key_under_any_name_is_secret():
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUA\n-----END OPENSSH PRIVATE KEY-----"
    assert is_secret_variable("DEPLOY", key)
    assert "DEPLOY" not in command_environment({"DEPLOY": key})


def test_a_copy_of_a_secret_under_another_name_is_withheld():
    env = {
        "OPENAI_API_KEY": "Zk93jdk2lsLQ0a9x",  # no provider format: secret by its name
        "MY_COPY": "Zk93jdk2lsLQ0a9x",
        "HEADER": "Authorization: Bearer Zk93jdk2lsLQ0a9x",
        "GIT_AUTHOR_NAME": "Ada Lovelace",
        "PATH": "/usr/bin",
    }
    assert command_environment(env) == {"GIT_AUTHOR_NAME": "Ada Lovelace", "PATH": "/usr/bin"}
    # Passed through by name, a secret and its named copies are the user's choice.
    kept = command_environment(env, passthrough=("OPENAI_API_KEY", "MY_COPY"))
    assert kept["OPENAI_API_KEY"] == kept["MY_COPY"] == "Zk93jdk2lsLQ0a9x"
    # Its unnamed copies add nothing the command does not already have.
    assert "HEADER" in kept
    assert "HEADER" not in command_environment(env, passthrough=("MY_COPY",))


def test_a_path_under_a_secret_name_does_not_take_the_paths_under_it():
    env = {"SSL_KEY_DIR": "/etc/ssl", "SSL_CERT_FILE": "/etc/ssl/certs/ca.pem"}
    assert command_environment(env) == {"SSL_CERT_FILE": "/etc/ssl/certs/ca.pem"}


def test_a_copy_of_a_key_held_in_memory_is_withheld(monkeypatch):
    monkeypatch.setattr(secrets, "_held", {"Qm7vT2xL9pZ4kR8w"})
    env = {"LEFTOVER": "Qm7vT2xL9pZ4kR8w", "HOME": "/root"}
    assert command_environment(env) == {"HOME": "/root"}


def test_commands_the_model_and_the_log_see_no_key_told_by_its_value(ws: Path, monkeypatch):
    key = CREDENTIALS[0]
    monkeypatch.setenv("FOO", key)  # a provider's key under a plain name
    monkeypatch.setenv("OPENAI_API_KEY", "Zk93jdk2lsLQ0a9x")
    monkeypatch.setenv("MY_COPY", "Zk93jdk2lsLQ0a9x")  # a named secret's copy
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ada Lovelace")
    (ws / "notes.txt").write_text(f"token = {key}\n")
    model = ScriptedModel(
        [
            reply("", call("run", command='echo "[$FOO] [$MY_COPY] [$GIT_AUTHOR_NAME]"; env')),
            reply("", call("read", path="notes.txt")),
            reply("", call("finish", summary="done")),
        ]
    )
    session = Session("look around", model=model, root=ws, policy="auto")
    drive(session, lambda s: s.approve())
    sent = json.dumps([r["messages"] for r in model.requests])
    assert "[] [] [Ada Lovelace]" in sent  # the command had neither
    assert "[REDACTED]" in sent  # the file's key, read
    for text in (sent, session.log_path.read_text()):
        assert key not in text and "Zk93jdk2lsLQ0a9x" not in text
