"""Page envs by name: the ``env`` registry builds each kind, and a bad kind or mode is one clear error."""

from __future__ import annotations

import pytest

from vismem.env.envs import ENVS, make_env
from vismem.env.http_env import HttpEnv


def test_env_kinds_are_a_named_registry():
    assert ENVS.names() == ["browser", "http"]


def test_make_env_builds_the_http_env_with_its_timeout():
    env = make_env("http", "http://127.0.0.1:1/", step_timeout_s=7.5)  # builds without connecting
    assert isinstance(env, HttpEnv)
    assert (env.base_url, env.timeout_s) == ("http://127.0.0.1:1", 7.5)


def test_unknown_kind_and_unsupported_mode_are_clear_errors():
    with pytest.raises(ValueError, match=r"unknown env 'chrome'; allowed: browser, http"):
        make_env("chrome", "http://127.0.0.1:1/")
    with pytest.raises(ValueError, match="the HTTP env only supports product_image observations"):
        make_env("http", "http://127.0.0.1:1/", observation="screenshot")
