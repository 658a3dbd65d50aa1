"""A sweep's records: the status a point's record ends with, and the one filter for the points that finished."""
from __future__ import annotations

import pandas as pd

DONE = "done"  # the point trained to its end (or stopped once decided)
FAILED = "failed"  # its config cannot exist (a result, decided before training)
ENDED = (DONE, FAILED)  # a point with either record is not run again


def finished(records: pd.DataFrame) -> pd.DataFrame:
    """The records of the points that finished ("done"); a table without records (no columns) as it is."""
    return records[records["status"] == DONE] if "status" in records else records


def is_finished(record: dict) -> bool:
    return record.get("status") == DONE
