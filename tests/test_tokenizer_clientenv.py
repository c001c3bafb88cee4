"""``--client`` parsing and where each client's venv lives (no venv is created here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from qualify.errors import UsageError
from qualify.tokenizer import clientenv
from qualify.tokenizer.clientenv import Client


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("transformers==4.57.6", Client("transformers", "4.57.6")),
        ("transformers", Client("transformers", "4.57.6")),
        (" transformers==4.45.2 ", Client("transformers", "4.45.2")),
        ("transformers==5.0.0rc1", Client("transformers", "5.0.0rc1")),
        ("aiperf", Client("aiperf", "0.13.0")),
        ("aiperf==0.13.0", Client("aiperf", "0.13.0")),
    ],
)
def test_parse_client(text: str, expected: Client) -> None:
    assert clientenv.parse_client(text) == expected


@pytest.mark.parametrize(
    "text", ["transformers==", "transformers>=4.57", "transformers==v4", "Transformers", "vllm"]
)
def test_parse_client_refuses(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        clientenv.parse_client(text)
    assert str(caught.value) == (
        f"--client {text!r} is not valid (valid: aiperf[==VERSION], transformers[==VERSION])"
    )


def test_requirements_and_venv_dir(tmp_path: Path) -> None:
    transformers = clientenv.parse_client("transformers==4.57.6")
    assert transformers.requirement == "transformers==4.57.6"
    # jinja2 beside it: transformers does not require it, apply_chat_template does.
    assert transformers.requirements == ["transformers==4.57.6", "jinja2"]
    assert clientenv.parse_client("aiperf").requirements == ["aiperf==0.13.0"]
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    assert clientenv.venv_dir(transformers, tmp_path) == (
        tmp_path / "clients" / f"transformers-4.57.6-{tag}"
    )
    assert not clientenv.is_ready(transformers, tmp_path)
