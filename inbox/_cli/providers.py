"""``inbox providers``: every signature scheme a source's ``verifier`` may name, from the
providers' records (``--json`` for machines, ``--markdown`` for docs/providers.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from inbox._core.config.settings import Settings
from inbox._operations.term import Cell, table, use_colour
from inbox._providers._catalog import catalog, markdown_table

__all__ = ["register"]

_PROOF_STYLES = {"sdk-both-ways": "green", "sdk-verifies": "green", "n/a": "dim"}


def _specs(values: list[str]) -> str:
    return ", ".join(values) or "-"


def _providers(args: argparse.Namespace, _settings: Settings) -> int:
    if args.markdown:
        print(markdown_table(), end="")
        return 0
    entries = catalog()
    if args.json:
        print(json.dumps(entries, indent=2, ensure_ascii=False))
        return 0
    rows: list[list[Cell]] = []
    for e in entries:
        window: Any = e["tolerance_seconds"]
        rows.append(
            [
                e["verifier"],
                e["title"],
                _specs(e["key_from"]),
                _specs(e["type_from"]),
                "-" if window is None else f"{window}s",
                "yes" if e["handshake"] else "-",
                (e["proof"], _PROOF_STYLES.get(e["proof"])),
            ]
        )
    headers = ["VERIFIER", "PROVIDER", "KEY FROM", "TYPE FROM", "WINDOW", "HANDSHAKE", "PROVEN"]
    print(table(headers, rows, colour=use_colour()))
    print("what each signs, and against what it was proven: --json, or docs/providers.md")
    return 0


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "providers", help="list the signature schemes a source's verifier may name"
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="every field, as JSON")
    output.add_argument("--markdown", action="store_true", help="the table of docs/providers.md")
    parser.set_defaults(handler=_providers)
