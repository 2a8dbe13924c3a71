# Compiles types.proto with protoc (grpc_tools) into argv[2]: the Python
# module and types.binpb, the descriptor set (--include_imports) the
# runtime reads; encodes the rows with the official Python protobuf
# runtime, and prints {"values": [base64 message], "expected": [canonical
# row], "bad": [indexes of values the Delta sink must reject]}.
import base64
import datetime
import importlib.resources
import json
import os
import sys

sys.path.insert(0, sys.argv[1])
from grpc_tools import protoc

from canon import dumps

here, out = sys.argv[1], sys.argv[2]
wkt = str(importlib.resources.files("grpc_tools") / "_proto")
if protoc.main(["protoc", "-I" + here, "-I" + wkt, "--python_out=" + out, "--include_imports",
                "--descriptor_set_out=" + os.path.join(out, "types.binpb"), "types.proto"]) != 0:
    sys.exit("protoc failed")
sys.path.insert(0, out)
import types_pb2 as pb
from google.protobuf import timestamp_pb2, wrappers_pb2

UTC = datetime.timezone.utc

# Each row is (what the message holds, what delta-rs must read back);
# created_at is (seconds, nanos) in the message, a datetime in the row.
rows = [
    dict(id=1, i64=-2**63, u64=2**63 - 1, s64=-2**63, u32=2**32 - 1, amount=0.1, flag=True,
         name="ünïcode ✓ \"q\"", blob=b"\x00\xff", status="STATUS_PAID", tags=["a", "", "c"],
         items=[dict(sku="s1", qty=-2), dict(sku="", qty=0)], main=dict(sku="m", qty=2**31 - 1),
         created_at=(1788469504, 123456000), maybe_count=2**63 - 1, maybe_note="", counts={"x": -2**63, "y": 0},
         opt="o"),
    # Every field at its zero value or unset: proto3 scalars absent from the
    # bytes are their zero value, fields with presence null.
    dict(id=2, i64=0, u64=0, s64=0, u32=0, amount=0.0, flag=False, name="", blob=b"",
         status="STATUS_UNSPECIFIED", tags=[], items=[], main=None, created_at=None, maybe_count=None,
         maybe_note=None, counts={}, opt=None),
    # Nanoseconds below the microsecond: Delta keeps microseconds (truncated).
    dict(id=3, i64=2**63 - 1, u64=1, s64=2**63 - 1, u32=1, amount=-1e-300, flag=True, name="n",
         blob=bytes(range(256)), status="STATUS_NEW", tags=["z"], items=[], main=dict(sku="", qty=0),
         created_at=(-1, 999999999), maybe_count=-2**63, maybe_note="note", counts={"": 1}, opt=""),
    # A uint64 beyond a long's range: the Delta sink rejects the record
    # (errors_tolerance = "all": a dead letter of class value), never wraps it.
    dict(id=4, i64=0, u64=2**64 - 1, s64=0, u32=0, amount=0.0, flag=False, name="", blob=b"",
         status="STATUS_UNSPECIFIED", tags=[], items=[], main=None, created_at=None, maybe_count=None,
         maybe_note=None, counts={}, opt=None),
]
bad = [3]


def message(r):
    m = pb.Order(id=r["id"], i64=r["i64"], u64=r["u64"], s64=r["s64"], u32=r["u32"], amount=r["amount"],
                 flag=r["flag"], name=r["name"], blob=r["blob"], status=pb.Status.Value(r["status"]),
                 tags=r["tags"], items=[pb.Item(**i) for i in r["items"]], counts=r["counts"])
    if r["main"] is not None:
        m.main.CopyFrom(pb.Item(**r["main"]))
    if r["created_at"] is not None:
        m.created_at.CopyFrom(timestamp_pb2.Timestamp(seconds=r["created_at"][0], nanos=r["created_at"][1]))
    if r["maybe_count"] is not None:
        m.maybe_count.CopyFrom(wrappers_pb2.Int64Value(value=r["maybe_count"]))
    if r["maybe_note"] is not None:
        m.maybe_note.CopyFrom(wrappers_pb2.StringValue(value=r["maybe_note"]))
    if r["opt"] is not None:
        m.opt = r["opt"]
    return m


def row(r):
    r = dict(r)
    if r["created_at"] is not None:
        s, n = r["created_at"]
        r["created_at"] = datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(seconds=s, microseconds=n // 1000)
    return r


values = [base64.b64encode(message(r).SerializeToString()).decode() for r in rows]
expected = [dumps(row(r)) for i, r in enumerate(rows) if i not in bad]
print(json.dumps({"values": values, "expected": expected, "bad": bad}))
