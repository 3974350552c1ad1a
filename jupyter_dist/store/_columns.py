"""A column of values, one a row (_finished.py's parameters, metrics and values): an ``array`` of machine numbers
while every value is a float (or every one a whole number), a list of references once one is not."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from typing import Any

__all__ = ["MISSING", "Column", "fits", "numpy_copy"]

MISSING = object()  # a parameter or metric a row does not have


class Column:
    """One value per row: an ``array`` while every value is a float (or every one a whole number), a list once
    one is not (then one reference a row, the objects shared where they are: a categorical choice's string). A
    row without a value (None, or ``MISSING``) in an ``array`` is kept aside, in ``odd``."""

    __slots__ = ("odd", "values")

    def __init__(self, rows_before: int = 0) -> None:
        self.values: array | list = array("d")
        self.odd: dict[int, Any] = dict.fromkeys(range(rows_before), MISSING)
        if rows_before:
            self.values.extend([math.nan] * rows_before)

    def append(self, value: Any) -> None:
        values = self.values
        if isinstance(values, array):
            if value is None or value is MISSING:
                self.odd[len(values)] = value
                values.append(0 if values.typecode == "q" else math.nan)
                return
            kind = type(value)
            if (
                kind is float
                and values.typecode == "d"
                or kind is int
                and values.typecode == "q"
                and fits(value)
            ):
                values.append(value)
                return
            if kind is int and values.typecode == "d" and len(self.odd) == len(values) and fits(value):
                self.values = values = array("q", [0] * len(values))  # the first value is a whole number
                values.append(value)
                return
            listed = values.tolist()
            for row, odd in self.odd.items():
                listed[row] = odd
            self.values = values = listed
            self.odd = {}
        values.append(value)

    def extend(self, values: list) -> None:
        """``append`` each of ``values``; into a column with no rows yet, at once where they are all of one kind
        (floats, whole numbers, or no numbers at all: a choice's strings)."""
        if isinstance(self.values, array) and not self.values and not self.odd:
            if all(type(v) is float for v in values):
                self.values.extend(values)
                return
            if all(type(v) is int for v in values) and all(fits(v) for v in values):
                self.values = array("q", values)
                return
            if not any(type(v) in (float, int) or v is None for v in values):
                self.values = list(values)
                return
        for value in values:
            self.append(value)

    def __getitem__(self, row: int) -> Any:
        odd = self.odd
        if odd and row in odd:
            return odd[row]
        return self.values[row]

    def items(self, rows: Iterable[int]) -> list:
        """The values of ``rows``, ``None`` where a row has none."""
        values, odd = self.values, self.odd
        if isinstance(values, array):
            return [None if odd and row in odd else values[row] for row in rows]
        return [None if (v := values[row]) is MISSING else v for row in rows]

    def column(self, rows: Any) -> Any:
        """The values of ``rows`` (a NumPy index) for a table: a NumPy array of numbers (NaN where a row has
        none), or a list."""
        import numpy as np

        values = self.values
        if not isinstance(values, array):
            return self.items(rows.tolist())
        if values.typecode == "d" or not self.odd:
            out = numpy_copy(values, np.float64 if values.typecode == "d" else np.int64)[rows]
            if self.odd:
                out[np.isin(rows, np.fromiter(self.odd, dtype=np.int64))] = math.nan
            return out
        return self.floats(rows)

    def floats(self, rows: Any) -> Any:
        """The values of ``rows`` (a NumPy index) as floats, NaN where a row has none or one that is not a number."""
        import numpy as np

        if isinstance(self.values, array):
            out = numpy_copy(self.values, np.float64 if self.values.typecode == "d" else np.int64)[rows]
            out = out.astype(np.float64)
            if self.odd:
                out[np.isin(rows, np.fromiter(self.odd, dtype=np.int64))] = math.nan
            return out
        return np.array([_number(v) for v in self.items(rows.tolist())], dtype=np.float64)


def fits(value: int) -> bool:
    return -(2**63) < value < 2**63


def numpy_copy(values: array | bytearray, dtype: Any) -> Any:
    """A copy of ``values`` as a NumPy array. A copy, not a view: a view would stop the loop's thread appending to
    the array while it lives (an array that exports its buffer cannot grow)."""
    import numpy as np

    return np.frombuffer(bytes(values) if isinstance(values, bytearray) else values.tobytes(), dtype=dtype)


def _number(value: Any) -> float:
    return float(value) if type(value) in (float, int) else math.nan
