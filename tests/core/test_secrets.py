"""The secrets rule (core.secrets): which names are secrets, redaction, hashing, log scrubbing."""

from __future__ import annotations

import logging

import pytest

from vismem.core.secrets import Scrubber, ScrubFilter, drop_secrets, is_secret_name, redact, secret_values

CANARY = "AKIA-CANARY-123"


@pytest.mark.parametrize("name", ["api_key", "access_key", "secret_key", "aws_secret_access_key", "token",
                                  "auth_token", "password", "AWS_ACCESS_KEY_ID", "client-secret", "private_key"])
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["api_key_env", "max_tokens", "prompt_tokens", "key", "cache_key", "arch_key",
                                  "spec_key", "model", "base_url", "keep_k", "password_file"])
def test_not_secret_names(name):
    assert not is_secret_name(name)


def test_redact_keeps_structure_and_cuts_userinfo():
    spec = {"name": "official", "args": {"root": "s3://b/x", "secret_key": CANARY, "n": [1, {"token": CANARY}]},
            "url": f"http://{CANARY}:pw@host:9000/v1"}
    out = redact(spec)
    assert out["args"]["secret_key"] == "***" and out["args"]["n"][1]["token"] == "***"
    assert out["args"]["root"] == "s3://b/x" and out["url"] == "http://***@host:9000/v1"
    assert CANARY not in repr(out) and spec["args"]["secret_key"] == CANARY  # a copy


def test_drop_secrets_hashes_the_same_with_or_without_a_credential():
    with_secret = {"args": {"root": "x", "secret_key": CANARY}, "u": f"http://{CANARY}@h"}
    without = {"args": {"root": "x"}, "u": "http://other-user@h"}
    assert drop_secrets(with_secret) == drop_secrets(without)


def test_scrubber_cuts_known_values_from_text_logs_and_objects(tmp_path):
    values = secret_values({"store": {"endpoint_url": f"http://user1:{CANARY}@h"}, "args": {"api_key": "k-9876543"}})
    assert {CANARY, "k-9876543"} <= values
    sc = Scrubber(values)
    assert sc.text(f"boto said InvalidAccessKeyId {CANARY} for k-9876543") == "boto said InvalidAccessKeyId *** for ***"
    assert CANARY not in repr(sc.obj({"error": f"denied {CANARY}", "nested": [f"x{CANARY}"]}))
    log = logging.getLogger("vismem.test.scrub")
    handler = logging.FileHandler(tmp_path / "run.log")
    handler.addFilter(ScrubFilter(sc))
    log.addHandler(handler)
    try:
        log.warning("connecting with %s", CANARY)
        try:
            raise RuntimeError(f"auth failed for {CANARY}")
        except RuntimeError:
            log.exception("stage failed")
    finally:
        log.removeHandler(handler)
        handler.close()
    text = (tmp_path / "run.log").read_text()
    assert "connecting with ***" in text and "auth failed for ***" in text and CANARY not in text
