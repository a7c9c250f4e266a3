"""Which variables are secret, and every form of their values redacted."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from grinta_jupyter.runtime.secrets import (
    REDACTED,
    Secrets,
    command_environment,
    is_secret_name,
    is_secret_variable,
)

VALUE = 'pa"ss\\wo/rd-\u00dcn\u00ef-12345'


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "GH_PAT",
        "MYSQL_PWD",
        "PGPASSWORD",
        "DB_PASS",
        "AWS_SECRET_ACCESS_KEY",
        "apiKey",
        "MyAuthToken",
        "SERVICE_PRIVATE_KEY",
        "HF_TOKEN",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "SESSION_COOKIE",
    ],
)
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "GIT_AUTHOR_NAME",
        "AUTHOR",
        "TOKENIZERS_PARALLELISM",
        "PWD",
        "OLDPWD",
        "PATH",
        "PATCH_LEVEL",
        "SSH_AUTH_SOCK",
        "KEYBOARD",
        "PASSAGE",
        "HOME",
    ],
)
def test_ordinary_names(name):
    assert not is_secret_name(name)


def test_a_url_with_a_password_is_secret_whatever_its_name():
    assert is_secret_variable("DATABASE_URL", "postgres://user:hunter2hunter2@db/x")
    assert not is_secret_variable("DATABASE_URL", "postgres://db/x")
    env = {"DATABASE_URL": "postgres://u:pw@db/x", "HOME": "/root", "GH_PAT": "ghp_0123456789"}
    assert command_environment(env) == {"HOME": "/root"}
    assert command_environment(env, ["GH_PAT"]) == {"HOME": "/root", "GH_PAT": "ghp_0123456789"}


@pytest.mark.parametrize(
    "printed",
    [
        VALUE,
        json.dumps(VALUE),
        json.dumps(VALUE, ensure_ascii=False),
        json.dumps(json.dumps(VALUE)),
        json.dumps(VALUE).replace("/", "\\/"),
        repr(VALUE),
        repr("KEY=" + VALUE + "\n"),
        urllib.parse.quote(VALUE, safe=""),
        urllib.parse.quote_plus(VALUE, safe=""),
    ],
)
def test_every_printed_form_is_redacted(printed):
    secrets = Secrets.from_env({"MY_API_KEY": VALUE})
    out = secrets.redact(f"before {printed} after")
    assert REDACTED in out
    for piece in ("ss\\\\wo", "ss\\wo", "rd-", "12345"):
        assert piece not in out.replace(REDACTED, ""), (printed, out)


def test_a_cut_through_a_secret_keeps_no_piece_of_it():
    key = "sk-live-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123"
    secrets = Secrets.from_env({"STRIPE_KEY": key})
    assert "ABCDEFGHIJ" not in secrets.redact("x " + key[:20] + " [... 17 more chars]")
    assert "WXYZ0123" not in secrets.redact("[... omitted ...]\n" + key[-20:] + " tail")


def test_multi_line_secrets_are_redacted_line_by_line():
    pem = (
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ\n"
        "c3VwZXJzZWNyZXRrZXltYXRlcmlhbDEyMw==\n-----END PRIVATE KEY-----\n"
    )
    secrets = Secrets.from_env({"SERVICE_PRIVATE_KEY": pem})
    shown = "     2\tMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ\n     3\tc3VwZXJzZWNyZXRrZXltYXRlcmlhbDEyMw=="
    out = secrets.redact(shown)
    assert "MIIEvQ" not in out and "c3VwZX" not in out


def test_plain_words_and_short_values_are_left_alone():
    secrets = Secrets.from_env({"TOKEN_KIND": "observation", "AUTH_MODE": "basic"})
    # (Keys held process-wide by earlier tests in this worker are there too: ``hold``.)
    assert not {"observation", "basic"} & set(secrets.values)
    assert secrets.redact_data({"type": "observation", "x": ["observation"]}) == {
        "type": "observation",
        "x": ["observation"],
    }


def test_structured_redaction_keeps_keys():
    secrets = Secrets(("s3cr3t-value-123",))
    data = {"s3cr3t-value-123": ["a s3cr3t-value-123 b", {"k": "s3cr3t-value-123"}], "n": 3}
    assert secrets.redact_data(data) == {
        "s3cr3t-value-123": [f"a {REDACTED} b", {"k": REDACTED}],
        "n": 3,
    }
