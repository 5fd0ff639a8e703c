"""Size and count bounds on what vismem reads, each overridable by its environment variable.

Every input has a stated bound (``docs/bounds.md``). Most are fixed; the ones below follow the
size of the data a user brings (an ``s3://`` data dir) or of the run (its tables, its shot
packs), so a user whose real data is larger can raise them -- as ``VISMEM_WRITE_THREADS`` is set,
through :func:`vismem.core.envvars.env_int`: a value that is not an integer in range is one
``ConfigError`` line (exit 2). A local Ray's workers inherit the driver's environment, and
``vismem submit`` forwards whatever of them is set to the job (every ``var`` of :data:`ALL`), so a driver
and its workers hold the same bounds; a cluster attached by address needs them set on its nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

from vismem.core.envvars import env_int

__all__ = ["ALL", "Bound", "DATA_DIR_BYTES", "DATA_DIR_OBJECTS", "DATA_DIR_OBJECT_BYTES", "PACK_BYTES",
           "TABLE_BYTES", "TABLE_ROWS", "check_all"]

#: The largest override any bound takes (1 PiB): a typo of a few digits more is still refused.
_CEILING = 1 << 50


@dataclass(frozen=True)
class Bound:
    """At most ``default`` ``unit`` of ``what``; ``$var`` (an integer, 1 to 1 PiB) overrides it."""

    var: str
    default: int
    what: str
    unit: str = "bytes"

    def value(self) -> int:
        """The bound in force: ``$var`` when set, else ``default``."""
        return env_int(self.var, self.default, lo=1, hi=_CEILING)

    def past(self, got: int) -> str | None:
        """``"<got> <unit>, more than the <bound> <unit> <what> may have (...)"`` when ``got`` is past
        the bound, else None -- the tail of the caller's one-line error."""
        limit = self.value()
        if got <= limit:
            return None
        return f"{got:,} {self.unit}, more than the {limit:,} {self.unit} {self.what} may have (${self.var} sets the bound)"


#: An ``s3://`` data_dir (``core/datadir.py``), all of it: LoCoMo is a few MB, LongMemEval's three
#: files about 3 GB, DMV-Bench's catalogue 1,000 images.
DATA_DIR_BYTES = Bound("VISMEM_DATA_DIR_MAX_BYTES", 64 << 30, "an s3:// data_dir")
#: Objects under an ``s3://`` data_dir (its listing stops one past the bound).
DATA_DIR_OBJECTS = Bound("VISMEM_DATA_DIR_MAX_OBJECTS", 100_000, "an s3:// data_dir", unit="objects")
#: One object of an ``s3://`` data_dir (LongMemEval_M is one 2.7 GB JSON file).
DATA_DIR_OBJECT_BYTES = Bound("VISMEM_DATA_DIR_MAX_OBJECT_BYTES", 16 << 30, "one object of an s3:// data_dir")
#: A Parquet table read back from the store: its object's size, the uncompressed size its
#: footer declares (a small object can expand to any size), and the size its text columns decode
#: to (a dictionary-encoded column can expand past both). The largest the project writes is a
#: render's ``units.parquet`` (every unit's text, once per variant).
TABLE_BYTES = Bound("VISMEM_MAX_TABLE_BYTES", 4 << 30, "a Parquet table of the store")
#: Rows of a Parquet table of the store, as its footer declares them: a column of one repeated
#: value takes a few bytes a million rows encoded, and at least a bit a row read (Polars indexes
#: rows with 32 bits). The longest the project writes is a render's ``units.parquet``.
TABLE_ROWS = Bound("VISMEM_MAX_TABLE_ROWS", 1 << 31, "a Parquet table of the store", unit="rows")
#: A shot pack (a session's shots back to back), read whole or by a reference's span: a session
#: is tens of shots of a few hundred KB.
PACK_BYTES = Bound("VISMEM_MAX_PACK_BYTES", 1 << 30, "a shot pack")

#: Every overridable bound (``docs/bounds.md`` lists each).
ALL = (DATA_DIR_BYTES, DATA_DIR_OBJECTS, DATA_DIR_OBJECT_BYTES, TABLE_BYTES, TABLE_ROWS, PACK_BYTES)


def check_all() -> None:
    """Read every bound once: a bad override fails here, before any work, not in a worker."""
    for bound in ALL:
        bound.value()
