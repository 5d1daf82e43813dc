"""The one registry type: entries found through installed entry points (names without imports), loaded on first
use, checked to carry their own name; in-process registration; what it refuses; and a package from outside the
harness discovered exactly as the harness's own entries are."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import registry
from harness.registry import Registry

GROUP = "harness.test_registry_entries"


def _forget_installed() -> None:
    registry._installed.cache_clear()
    registry._declared.cache_clear()


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An installed package from outside the harness (a dist-info with entry points and the module it names), on
    sys.path for this test only; the entry-point cache is cleared on both sides."""
    (tmp_path / "outside_plugin.py").write_text(
        "IMPORTED = []\n"
        "class Thing:\n    name = 'thing'\n"
        "class Misnamed:\n    name = 'other'\n"
        "IMPORTED.append(True)\n")
    info = tmp_path / "outside_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: outside-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{GROUP}]\nthing = outside_plugin:Thing\nmisnamed = outside_plugin:Misnamed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _forget_installed()
    yield tmp_path
    sys.modules.pop("outside_plugin", None)
    _forget_installed()


def test_an_outside_package_is_found_by_its_entry_points_without_importing_it(plugin: Path) -> None:
    things: Registry[type] = Registry("thing", GROUP)
    assert things.names() == ("misnamed", "thing") and "thing" in things
    assert "outside_plugin" not in sys.modules  # names come from metadata alone
    assert things.get("thing").__name__ == "Thing" and things.source("thing") == "outside_plugin:Thing"
    assert "outside_plugin" in sys.modules


def test_an_entry_must_carry_the_name_it_is_listed_under(plugin: Path) -> None:
    with pytest.raises(TypeError, match="'misnamed' .* carries the name 'other'"):
        Registry[type]("thing", GROUP).get("misnamed")


def test_an_unknown_name_lists_the_known_ones(plugin: Path) -> None:
    with pytest.raises(KeyError, match="unknown thing 'nothing'; known things: misnamed, thing"):
        Registry[type]("thing", GROUP).get("nothing")


def test_in_process_registration_beside_the_declared_ones(plugin: Path) -> None:
    things: Registry[type] = Registry("thing", GROUP)
    extra = things.register(type("Extra", (), {"name": "extra"}))
    assert things.get("extra") is extra and things.names() == ("extra", "misnamed", "thing")
    with pytest.raises(ValueError, match="thing 'thing' is already registered by outside_plugin:Thing"):
        things.register(type("Again", (), {"name": "thing"}))
    with pytest.raises(TypeError, match="carries its name"):
        things.register(type("Nameless", (), {}))
    things.unregister("extra")
    assert "extra" not in things


def test_the_check_vets_an_entry_as_it_is_loaded(plugin: Path) -> None:
    def must_be_thing(name: str, entry: type) -> None:
        if entry.__name__ != "Thing":
            raise TypeError(f"{name} is not a Thing")

    things: Registry[type] = Registry("thing", GROUP, check=must_be_thing)
    assert things.get("thing").__name__ == "Thing"
    with pytest.raises(TypeError, match="odd is not a Thing"):
        things.register(type("Odd", (), {"name": "odd"}))


def test_one_name_declared_by_two_packages_is_refused(plugin: Path, tmp_path_factory: pytest.TempPathFactory,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    second = tmp_path_factory.mktemp("second") / "rival-1.0.dist-info"
    second.mkdir()
    (second / "METADATA").write_text("Metadata-Version: 2.1\nName: rival\nVersion: 1.0\n")
    (second / "entry_points.txt").write_text(f"[{GROUP}]\nthing = rival:Thing\n")
    monkeypatch.syspath_prepend(str(second.parent))
    _forget_installed()
    with pytest.raises(ValueError, match="'thing' .* declared by both .*uninstall one"):
        Registry[type]("thing", GROUP).names()


def test_declares_names_what_a_class_left_undeclared_and_where_to_read_it() -> None:
    from harness.registry import declares

    check = declares("widget", ("size", "colour"), "somewhere.Widget")

    class Whole:
        size, colour = 1, "red"

    class Half:
        size = 1

    check("whole", Whole)
    with pytest.raises(TypeError, match=r"widget 'half' \(.*Half\) does not declare colour \(see somewhere.Widget\)"):
        check("half", Half)
