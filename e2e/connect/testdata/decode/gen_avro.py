# Encodes the rows of types.avsc with fastavro (an encoder independent of
# the runtime's hamba/avro) as plain Avro binary datums, and prints
# {"values": [base64 datum], "expected": [canonical row]}: what delta-rs
# must read back from a table of matching columns.
import base64
import datetime
import decimal
import io
import json
import struct
import sys
import uuid

sys.path.insert(0, sys.argv[1])
import fastavro

from canon import dumps

UTC = datetime.timezone.utc


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


rows = [
    dict(id=1, l=-2**63, i=-2**31, d=0.1, f=f32(0.1), b=True, s="grüße, 日本, 🎉 \"q\" \\ \n",
         raw=b"\x00\xff\x10hi", dec=decimal.Decimal("-9999999999999999.9999"),
         ts_us=datetime.datetime(2026, 9, 3, 21, 15, 4, 123456, tzinfo=UTC),
         ts_ms=datetime.datetime(2026, 9, 3, 21, 15, 4, 123000, tzinfo=UTC),
         day=datetime.date(2026, 9, 3), uid=uuid.UUID("6f1c3b5e-9a2d-4c8e-b7f0-123456789abc"),
         color="BLUE", opt=None, addr=dict(city="Zürich", zip=None), tags=[], attrs={}),
    dict(id=2, l=2**63 - 1, i=2**31 - 1, d=1e300, f=f32(3.4028234663852886e38), b=False, s="",
         raw=b"", dec=decimal.Decimal("9999999999999999.9999"),
         ts_us=datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
         ts_ms=datetime.datetime(1900, 1, 1, 0, 0, 0, 1000, tzinfo=UTC),
         day=datetime.date(1969, 12, 31), uid=uuid.UUID("00000000-0000-0000-0000-000000000000"),
         color="RED", opt="set", addr=dict(city="", zip=8001), tags=["a", "b", ""],
         attrs={"x": -1, "y": 2**63 - 1, "z": -2**63}),
    dict(id=3, l=0, i=0, d=float("nan"), f=float("-inf"), b=True, s="x" * 300,
         raw=bytes(range(256)), dec=decimal.Decimal("0.0001"),
         ts_us=datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
         ts_ms=datetime.datetime(1, 1, 1, 0, 0, 0, 0, tzinfo=UTC),
         day=datetime.date(1, 1, 1), uid=uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff"),
         color="GREEN", opt="", addr=dict(city="Z", zip=-1), tags=["only"], attrs={"": 0}),
    dict(id=4, l=-1, i=1, d=5e-324, f=f32(1.401298464324817e-45), b=False, s="\u0000nul",
         raw=b"\x00", dec=decimal.Decimal("-0.0001"),
         ts_us=datetime.datetime(1970, 1, 1, tzinfo=UTC),
         ts_ms=datetime.datetime(2000, 2, 29, 12, 0, 0, 999000, tzinfo=UTC),
         day=datetime.date(1970, 1, 1), uid=uuid.UUID("12345678-1234-5678-1234-567812345678"),
         color="BLUE", opt=None, addr=dict(city="a\"b", zip=None), tags=["x", "y"],
         attrs={"k": 1}),
    dict(id=5, l=1234567890123456789, i=-7, d=float("inf"), f=f32(-0.5), b=True, s="plain",
         raw=b"\x01\x02", dec=decimal.Decimal("1234567890123456.7891"),
         ts_us=datetime.datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
         ts_ms=datetime.datetime(2026, 1, 1, 0, 0, 0, 1000, tzinfo=UTC),
         day=datetime.date(9999, 12, 31), uid=uuid.UUID("0f0f0f0f-0f0f-0f0f-0f0f-0f0f0f0f0f0f"),
         color="RED", opt="σ", addr=dict(city="B", zip=0), tags=[], attrs={"a": 1, "b": 2}),
]

schema = fastavro.parse_schema(json.load(open(sys.argv[2])))
values = []
for r in rows:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, dict(r, uid=str(r["uid"])))
    values.append(base64.b64encode(buf.getvalue()).decode())
print(json.dumps({"values": values, "expected": [dumps(r) for r in rows]}))
