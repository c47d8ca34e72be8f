"""UTC timestamps in the evidence's format."""

from __future__ import annotations

import datetime as _dt


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
