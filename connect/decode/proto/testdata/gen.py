"""Writes the test vectors of connect/decode/proto with an independent encoder.

Run from the repository root with the project's venv (internal/testenv/pyenv):

    .cache/venv/bin/python connect/decode/proto/testdata/gen.py

(or /work/main/.cache/venv/bin/python from a worktree). It compiles the
.proto files with grpcio-tools' protoc (shop.binpb: the FileDescriptorSet,
--include_imports), encodes messages with Python protobuf, and writes:

- vectors.json: plain protobuf payloads (base64) and the JSON the Go codec
  must write, for FromDescriptorSet;
- registry.json: payloads serialized by confluent-kafka's ProtobufSerializer
  against its MockSchemaRegistryClient (the same serializer code as with a
  real registry), the 5-byte header (magic byte, schema id) cut off and the
  message indexes kept, with the schema and references as that registry
  returns them, for FromSchema;
- known.json: the same for known/row.proto, whose imports are the
  registry's built-in files (no references).

Python writes map entries in hash order: a rerun may encode a map's entries
in another order (the same message; the Go test passes on either).

Expected JSON is written here by hand from the values set, in the Go codec's
conventions (docs/decode.md "Protobuf"): not derived from the Go output.
"""

import base64
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def compile_protos(out):
    from grpc_tools import protoc
    import grpc_tools
    wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = [
        "protoc", "-I", HERE, "-I", wkt, "--python_out=" + out,
        "--include_imports", "--descriptor_set_out=" + os.path.join(HERE, "shop.binpb"),
        "shop/v1/order.proto",
    ]
    if protoc.main(args) != 0:
        sys.exit("protoc failed")
    # common.proto's module too (order_pb2 imports it).
    if protoc.main(["protoc", "-I", HERE, "-I", wkt, "--python_out=" + out, "shop/v1/common.proto"]) != 0:
        sys.exit("protoc failed")


def zero(field):
    """The JSON of an unset field: see docs/decode.md "Protobuf"."""
    from google.protobuf.descriptor import FieldDescriptor as F
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        return {}
    if field.is_repeated:
        return []
    if field.has_presence:
        return None
    if field.type == F.TYPE_ENUM:
        return field.enum_type.values_by_number[0].name
    if field.type in (F.TYPE_STRING, F.TYPE_BYTES):
        return ""
    if field.type == F.TYPE_BOOL:
        return False
    return 0


def full(desc, **values):
    """Every field of desc in declaration order, unset ones at zero()."""
    out = {}
    for f in desc.fields:
        out[f.name] = values.pop(f.name) if f.name in values else zero(f)
    assert not values, values
    return out


def vectors(order_pb2, common_pb2):
    from google.protobuf import timestamp_pb2, wrappers_pb2, duration_pb2, struct_pb2
    Order, Money, Refund, PageView = order_pb2.Order, common_pb2.Money, order_pb2.Refund, order_pb2.PageView
    O, M = Order.DESCRIPTOR, Money.DESCRIPTOR
    money = lambda c, u, n=0: Money(currency=c, units=u, nanos=n)
    mj = lambda c, u, n=0: full(M, currency=c, units=u, nanos=n)
    ts = timestamp_pb2.Timestamp()
    ts.FromJsonString("2026-09-03T21:15:04.123456Z")
    st = struct_pb2.Struct()
    st.update({"c": {"d": 2.5}, "a": 1, "b": [True, None, "x"]})
    out = []

    def add(name, msg, want):
        out.append({"name": name, "message": msg.DESCRIPTOR.full_name,
                    "payload": base64.b64encode(msg.SerializeToString()).decode(), "want": want})

    add("empty", Order(), full(O))
    add("max", Order(
        id="ünïcødé \"q\" \\ \n\t\u0001 😀", i32=2**31 - 1, i64=2**63 - 1, u32=2**32 - 1, u64=2**64 - 1,
        s32=2**31 - 1, s64=2**63 - 1, f32=2**32 - 1, f64=2**64 - 1, sf32=2**31 - 1, sf64=2**63 - 1,
        fl=3.4028234663852886e38, db=1.7976931348623157e308, ok=True, raw=bytes([0, 255, 254, 1]),
        status=common_pb2.STATUS_SHIPPED), full(O,
        id="ünïcødé \"q\" \\ \n\t\u0001 😀", i32=2**31 - 1, i64=2**63 - 1, u32=2**32 - 1, u64=2**64 - 1,
        s32=2**31 - 1, s64=2**63 - 1, f32=2**32 - 1, f64=2**64 - 1, sf32=2**31 - 1, sf64=2**63 - 1,
        fl=3.4028235e38, db=1.7976931348623157e308, ok=True, raw="AP/+AQ==", status="STATUS_SHIPPED"))
    add("min", Order(
        i32=-2**31, i64=-2**63, s32=-2**31, s64=-2**63, sf32=-2**31, sf64=-2**63,
        fl=-1.5, db=-5e-324, status=5), full(O,
        i32=-2**31, i64=-2**63, s32=-2**31, s64=-2**63, sf32=-2**31, sf64=-2**63,
        fl=-1.5, db=-5e-324, status=5))  # 5: an enum number the schema does not name
    add("floats", Order(fl=0.1, db=0.1), full(O, fl=0.1, db=0.1))
    add("nan", Order(fl=float("inf"), db=float("nan")), full(O, fl="Infinity", db="NaN"))
    add("neg_inf", Order(db=float("-inf"), fl=1e-7), full(O, db="-Infinity", fl=1e-7))
    add("collections", Order(
        tags=["a", "", "b"], qty=[-1, 2**63 - 1, 0],
        counts={"b": 2, "a": -2**63}, by_id={10: money("EUR", 5), -3: money("USD", -1, -5)}),
        full(O, tags=["a", "", "b"], qty=[-1, 2**63 - 1, 0],
             counts={"a": -2**63, "b": 2}, by_id={"-3": mj("USD", -1, -5), "10": mj("EUR", 5)}))
    line = Order.Line(sku="sku-1", count=3, price=money("EUR", 12, 340000000))
    linej = full(O.nested_types_by_name["Line"], sku="sku-1", count=3, price=mj("EUR", 12, 340000000))
    add("nested", Order(total=money("EUR", 36), first_line=line, lines=[line, Order.Line()]),
        full(O, total=mj("EUR", 36), first_line=linej,
             lines=[linej, full(O.nested_types_by_name["Line"])]))
    add("oneof_card", Order(card="visa", maybe=0), full(O, card="visa", maybe=0))
    add("oneof_voucher", Order(voucher=-5, maybe=-7), full(O, voucher=-5, maybe=-7))
    add("wkt", Order(
        created_at=ts, big=wrappers_pb2.Int64Value(value=-2**63), note=wrappers_pb2.StringValue(value=""),
        ttl=duration_pb2.Duration(seconds=-90, nanos=-500000000), attrs=st, zeta=1, alpha=2),
        full(O, created_at="2026-09-03T21:15:04.123456Z", big=-2**63, note="", ttl="-90.500s",
             attrs={"a": 1, "b": [True, None, "x"], "c": {"d": 2.5}}, zeta=1, alpha=2))
    ts0 = timestamp_pb2.Timestamp(seconds=-62135596800)
    add("wkt_edges", Order(created_at=ts0, big=wrappers_pb2.Int64Value(), ttl=duration_pb2.Duration(seconds=1, nanos=5)),
        full(O, created_at="0001-01-01T00:00:00Z", big=0, ttl="1.000000005s"))
    add("refund", Refund(order_id="o-1", amount=money("EUR", 3), labels={"z": "", "a": "b"},
                         reason=Refund.Reason(code="late")),
        full(Refund.DESCRIPTOR, order_id="o-1", amount=mj("EUR", 3), labels={"a": "b", "z": ""},
             reason={"code": "late"}))
    add("pageview", bench_record(order_pb2, common_pb2, ts), full(PageView.DESCRIPTOR,
        event_id="0b6c3e4e-6f1d-4f7e-9a52-2f6f1b1c9d01", user_id=4200000000017,
        session_id="s-7f3a9c21", ts="2026-09-03T21:15:04.123456Z",
        url="https://shop.example.com/products/espresso-machine-deluxe?ref=home",
        referrer="https://www.example.org/search?q=espresso", http_status=200, duration_ms=183.25,
        mobile=True, country="DE", status="STATUS_PAID", tags=["checkout", "ab-test-42"]))
    return out


def bench_record(order_pb2, common_pb2, ts):
    return order_pb2.PageView(
        event_id="0b6c3e4e-6f1d-4f7e-9a52-2f6f1b1c9d01", user_id=4200000000017,
        session_id="s-7f3a9c21", ts=ts,
        url="https://shop.example.com/products/espresso-machine-deluxe?ref=home",
        referrer="https://www.example.org/search?q=espresso", http_status=200, duration_ms=183.25,
        mobile=True, country="DE", status=common_pb2.STATUS_PAID, tags=["checkout", "ab-test-42"])


def registry(order_pb2, common_pb2, plain):
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import SerializationContext, MessageField
    client = MockSchemaRegistryClient({"url": "mock://picomq"})
    ctx = SerializationContext("orders", MessageField.VALUE)
    Order = order_pb2.Order
    by_name = {v["name"]: v for v in plain}
    cases = [
        ("order_[0]", Order, by_name["max"], b"\x00"),
        ("line_[0,0]", Order.Line, None, b"\x04\x00\x00"),
        ("refund_[1]", order_pb2.Refund, by_name["refund"], b"\x02\x02"),
        ("pageview_[2]", order_pb2.PageView, by_name["pageview"], b"\x02\x04"),
        ("reason_[1,1]", order_pb2.Refund.Reason, None, b"\x04\x02\x02"),
    ]
    out, schema_id = [], None
    for name, cls, vec, indexes in cases:
        ser = ProtobufSerializer(cls, client, {"use.deprecated.format": False})
        if cls is order_pb2.Refund.Reason:
            msg, want = cls(code="damaged"), {"code": "damaged"}
        elif vec is None:
            msg = Order.Line(sku="sku-2", count=-4, price=common_pb2.Money(currency="EUR", units=2**63 - 1))
            want = {"sku": "sku-2", "count": -4, "price": {"currency": "EUR", "units": 2**63 - 1, "nanos": 0}}
        else:
            msg = cls.FromString(base64.b64decode(vec["payload"]))
            want = vec["want"]
        data = ser(msg, ctx)
        assert data[0] == 0, "magic byte"
        sid = int.from_bytes(data[1:5], "big")
        assert schema_id in (None, sid), "one schema for the file"
        schema_id = sid
        rest = data[5:]
        assert rest.startswith(indexes), (name, rest[:4], indexes)  # the spec's encoding
        out.append({"name": name, "payload": base64.b64encode(rest).decode(), "want": want})
    schema = client.get_schema(schema_id)
    refs = {}

    def resolve(references):
        for r in references or []:
            if r.name in refs:
                continue
            s = client.get_version(r.subject, r.version).schema
            refs[r.name] = s.schema_str
            resolve(s.references)

    resolve(schema.references)
    return {"schema": schema.schema_str, "refs": refs, "vectors": out}


def known():
    """known.json: rows of known/row.proto, which imports the registry's
    built-in files (confluent/meta.proto, confluent/type/decimal.proto,
    google/type/date.proto, google/type/timeofday.proto), serialized by
    ProtobufSerializer, which registers none of them as a reference
    (skip.known.types). Python ships no .proto text of Confluent's files:
    protoc gets every import as the descriptor Python's runtime holds
    (--descriptor_set_in), and the row's message class is built from the
    descriptor protoc writes."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.type import date_pb2, timeofday_pb2
    from confluent_kafka.schema_registry.confluent import meta_pb2
    from confluent_kafka.schema_registry.confluent.type import decimal_pb2, decimal_utils
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import SerializationContext, MessageField
    from decimal import Decimal
    from grpc_tools import protoc
    deps = descriptor_pb2.FileDescriptorSet()
    for mod in (descriptor_pb2, meta_pb2, decimal_pb2, date_pb2, timeofday_pb2):
        mod.DESCRIPTOR.CopyToProto(deps.file.add())
    with tempfile.TemporaryDirectory() as out:
        with open(os.path.join(out, "deps.binpb"), "wb") as f:
            f.write(deps.SerializeToString())
        args = ["protoc", "-I", HERE, "--descriptor_set_in=" + os.path.join(out, "deps.binpb"),
                "--descriptor_set_out=" + os.path.join(out, "row.binpb"), "known/row.proto"]
        if protoc.main(args) != 0:
            sys.exit("protoc failed")
        with open(os.path.join(out, "row.binpb"), "rb") as f:
            row = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file[0]
    pool = descriptor_pool.Default()
    pool.Add(row)
    Row = message_factory.GetMessageClass(pool.FindMessageTypeByName("known.Row"))
    client = MockSchemaRegistryClient({"url": "mock://picomq"})
    ctx = SerializationContext("rows", MessageField.VALUE)
    ser = ProtobufSerializer(Row, client, {"use.deprecated.format": False})
    out, schema_id = [], None

    def add(name, msg, want):
        nonlocal schema_id
        data = ser(msg, ctx)
        assert data[0] == 0 and data[5:6] == b"\x00", "magic byte, indexes [0]"
        schema_id = int.from_bytes(data[1:5], "big")
        out.append({"name": name, "payload": base64.b64encode(data[5:]).decode(), "want": want})

    dec = lambda s: decimal_utils.to_proto_decimal(Decimal(s))
    for s_ in ("-12.345", "0.001", "1.200", "-123456789012345678901234567890.12", "42", "-0.50"):
        assert format(decimal_utils.from_proto_decimal(dec(s_)), "f") == s_
    day = date_pb2.Date(year=2026, month=9, day=3)
    at = timeofday_pb2.TimeOfDay(hours=21, minutes=15, seconds=4, nanos=123456000)
    dayj = {"year": 2026, "month": 9, "day": 3}
    atj = {"hours": 21, "minutes": 15, "seconds": 4, "nanos": 123456000}
    # A decimal is its exact digits at its own scale: Python's Decimal
    # formats the value the bytes hold (format "f" keeps the scale).
    add("row", Row(id=7, amount=dec("-12.345"), day=day, at=at, wide=dec("-123456789012345678901234567890.12")),
        {"id": 7, "amount": "-12.345", "day": dayj, "at": atj, "wide": "-123456789012345678901234567890.12"})
    add("scales", Row(id=-1, amount=dec("0.001"), wide=dec("42")),
        {"id": -1, "amount": "0.001", "day": None, "at": None, "wide": "42"})
    add("zeros", Row(amount=dec("1.200"), day=date_pb2.Date(), wide=dec("-0.50")),
        {"id": 0, "amount": "1.200", "day": {"year": 0, "month": 0, "day": 0}, "at": None, "wide": "-0.50"})
    schema = client.get_schema(schema_id)
    assert not schema.references, schema.references  # the point: no references
    return {"schema": schema.schema_str, "refs": {}, "vectors": out}


def main():
    with tempfile.TemporaryDirectory() as out:
        compile_protos(out)
        sys.path.insert(0, out)
        from shop.v1 import order_pb2, common_pb2
        plain = vectors(order_pb2, common_pb2)
        reg = registry(order_pb2, common_pb2, plain)
    for name, data in (("vectors.json", plain), ("registry.json", reg), ("known.json", known())):
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(data, f, indent=1, ensure_ascii=False, allow_nan=False)
            f.write("\n")


if __name__ == "__main__":
    main()
