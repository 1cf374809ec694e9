"""The ``[console]`` settings: what the TOML says, and errors that name file and field.
And the charts, which are drawn from settings-free data."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest

from inbox import ConfigError, load_settings
from inbox.console._charts import legend, svg_chart
from inbox.console._passwords import hash_password


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inbox.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_console_section_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stored = hash_password("pw", n=2**10)
    path = _write(
        tmp_path,
        f"""
        [console]
        enabled = true
        bodies = "all"
        trusted_header = "X-Forwarded-User"
        trusted_proxies = ["10.0.0.0/8", "::1"]
        session_idle_minutes = 15
        secret_key_env = "MY_CONSOLE_KEY"

        [[console.users]]
        name = "olga"
        role = "operator"
        password_hash = "{stored}"

        [[console.users]]
        name = "sso-viewer"
        """,
    )
    monkeypatch.setenv("MY_CONSOLE_KEY", "from-the-environment-123456")
    console = load_settings(path).console
    assert console.enabled
    assert console.bodies == "all"
    assert ipaddress.ip_address("10.9.9.9") in console.trusted_proxies[0]
    assert console.session_idle_minutes == 15
    assert console.base_path == "/console"
    assert [(u.name, u.role) for u in console.users] == [
        ("olga", "operator"),
        ("sso-viewer", "viewer"),
    ]
    assert console.secret_key_value() == "from-the-environment-123456"
    monkeypatch.setenv("INBOX_CONSOLE__SECRET_KEY", "inline-from-env-0123456789")
    assert load_settings(path).console.secret_key_value() == "inline-from-env-0123456789"


@pytest.mark.parametrize(
    ("toml", "field", "says"),
    [
        ('[console]\nbodies = "everyone"', "console.bodies", "operators"),
        ('[console]\ntrusted_proxies = ["10.0.0.0/33"]', "console.trusted_proxies.0", "network"),
        ('[[console.users]]\nname = "a"\nrole = "admin"', "console.users.0.role", "viewer"),
        (
            '[[console.users]]\nname = "a"\npassword_hash = "plain"',
            "console.users.0.password_hash",
            "hash-password",
        ),
        ('[[console.users]]\nname = "a"\n[[console.users]]\nname = "a"', "console.users", "unique"),
        ('[console]\nbase_path = "console/"', "console.base_path", "pattern"),
        ("[console]\nsession_idle_minutes = 0", "console.session_idle_minutes", "greater"),
        ("[console]\nsurprise = 1", "console.surprise", "Extra"),
    ],
)
def test_console_errors_name_file_and_field(
    tmp_path: Path, toml: str, field: str, says: str
) -> None:
    path = _write(tmp_path, toml)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert caught.value.field == field
    assert str(path) in str(caught.value)
    assert says in str(caught.value)


def test_an_unreadable_key_file_is_a_config_error(tmp_path: Path) -> None:
    path = _write(tmp_path, f'[console]\nsecret_key_file = "{tmp_path / "missing"}"')
    with pytest.raises(ConfigError, match=r"console\.secret_key_file: cannot read"):
        load_settings(path).console.secret_key_value()


def test_chart_escapes_labels_and_scales() -> None:
    svg = str(svg_chart("<b>title</b>", ["<i>", "m", "z"], {"received": [0, 3, 7]}))
    assert "<b>" not in svg
    assert "<i>" not in svg
    assert "&lt;b&gt;title&lt;/b&gt;" in svg
    assert ">10</text>" in svg  # the axis top: the next 1, 2 or 5 times a power of ten
    assert svg.count("<polyline") == 1
    assert 'class="series received"' in svg
    empty = str(svg_chart("none", [], {"received": []}))
    assert "<polyline" not in empty
    assert ">1</text>" in empty


def test_chart_lines_stay_apart_from_each_other_and_from_the_axis() -> None:
    """Equal received and processed lines and a failed line at zero: each stays visible."""
    svg = str(svg_chart("t", [], {"received": [0, 2], "processed": [0, 2], "failed": [0, 0]}))
    axis = re.search(r'<line class="axis" x1="[\d.]+" y1="([\d.]+)"', svg)
    assert axis is not None
    failed = re.search(r'class="series failed" points="([^"]+)"', svg)
    assert failed is not None
    heights = {float(point.split(",")[1]) for point in failed.group(1).split()}
    assert max(heights) <= float(axis.group(1)) - 4  # zero runs above the axis, not on it
    # Drawn wide to thin (styles in console.css: band, dashes, dots), the thinnest on top.
    assert re.findall(r'class="series (\w+)"', svg) == ["received", "processed", "failed"]
    swatches = re.findall(r'<line class="series (\w+)"', str(legend()))
    assert swatches == ["received", "processed", "failed"]


def test_public_names() -> None:
    import inbox.console

    assert inbox.console.__all__ == ["create_app"]
    assert all(hasattr(inbox.console, name) for name in inbox.console.__all__)
