"""A registry finds its built-ins by walking its package: a new module registers without a list."""

from __future__ import annotations

import sys

import pytest

from vismem.core.errors import ConfigError
from vismem.core.registry import builtin_modules


@pytest.fixture
def plugin_pkg(tmp_path, monkeypatch):
    pkg = tmp_path / "toyplugins"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (tmp_path / "toyreg.py").write_text("from vismem.core.registry import Registry\nREG = Registry('toy', package='toyplugins')\n")
    for name in ("alpha", "beta"):
        (pkg / f"{name}.py").write_text(f"from toyreg import REG\n@REG.register({name!r})\ndef make():\n    return {name!r}\n")
    (pkg / "_private.py").write_text("raise RuntimeError('private modules are not walked')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    for m in [m for m in sys.modules if m.split(".")[0] in ("toyplugins", "toyreg")]:
        del sys.modules[m]


def test_every_module_of_the_package_registers_without_a_list(plugin_pkg):
    assert builtin_modules("toyplugins") == ["toyplugins.alpha", "toyplugins.beta"]
    import toyreg

    assert toyreg.REG.names() == ["alpha", "beta"]



def test_unknown_name_lists_what_the_walk_found(plugin_pkg):
    import toyreg

    with pytest.raises(ConfigError, match="unknown toy 'zzz'; registered: alpha, beta"):
        toyreg.REG.resolve("zzz", field="x")


def test_no_package_walks_nothing():
    assert builtin_modules(None) == []


def test_factory_returns_what_build_calls_and_names_an_unknown(plugin_pkg):
    import toyreg

    assert toyreg.REG.factory("alpha")() == "alpha" == toyreg.REG.build("alpha")
    with pytest.raises(ConfigError, match="unknown toy 'zzz'; registered: alpha, beta"):
        toyreg.REG.factory("zzz")
