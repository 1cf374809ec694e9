"""Reading the receivers' rejection counters from their ``/metrics`` endpoints.

Rejections (401s) are deliberately never written to the database: an unauthenticated
request must not be able to cause a write. The counters live in each receiver's memory,
since that receiver started; ``inbox status --receiver-metrics URL`` reads them from there.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["receiver_rejections"]

REJECTIONS = "inbox_receiver_rejections"


def receiver_rejections(
    urls: Sequence[str], *, timeout: float = 3.0
) -> tuple[dict[str, int] | None, list[str]]:
    """Rejections by source, summed over the receivers that answered (None if none did),
    and the URLs that did not answer."""
    totals: dict[str, int] = {}
    unreachable: list[str] = []
    answered = False
    for url in urls:
        try:
            response = httpx.get(url, timeout=timeout)
            response.raise_for_status()
        except httpx.HTTPError:
            unreachable.append(url)
            continue
        answered = True
        for family in text_string_to_metric_families(response.text):
            if family.name != REJECTIONS:
                continue
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    source = sample.labels.get("source", "")
                    totals[source] = totals.get(source, 0) + int(sample.value)
    return (totals if answered else None), unreachable
