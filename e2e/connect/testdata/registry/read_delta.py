"""Prints the rows of a Delta table as delta-rs reads them, one JSON object
ordered by id: the independent reader of e2e/connect/registry_test.go.

    read_delta.py <table uri>...

Prints one JSON object: each table URI -> its rows.

Values in a form the Go test writes by hand: decimals as their exact string
("-12.340"), timestamps as RFC 3339 UTC with microseconds, dates ISO, binary
base64, maps as objects, floats as Python's shortest repr (a float32 column
widened to double first).
"""

import base64
import datetime
import decimal
import json
import sys

import pyarrow as pa
from deltalake import DeltaTable


def canon(v, typ):
    """v of the arrow type typ (the type tells a map, which pyarrow gives
    as a list of pairs, from a list)."""
    if v is None:
        return None
    if pa.types.is_map(typ):
        return {k: canon(x, typ.item_type) for k, x in v}
    if pa.types.is_struct(typ):
        return {f.name: canon(v[f.name], f.type) for f in typ}
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return [canon(x, typ.value_type) for x in v]
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        return v.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    return v


out = {}
for uri in sys.argv[1:]:
    table = DeltaTable(uri).to_pyarrow_table()
    rows = [canon(r, pa.struct(table.schema)) for r in table.to_pylist()]
    out[uri] = sorted(rows, key=lambda r: r["id"])
print(json.dumps(out, ensure_ascii=False))
