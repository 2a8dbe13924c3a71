"""Serializes the records of e2e/connect/registry_test.go with Confluent's own
serializers (confluent-kafka's AvroSerializer and ProtobufSerializer, against
the real Schema Registry), the producer independent of the Go code under test.

    serialize.py avro  <registry url> <topic> <schema json, or - for the latest> <rows json>
    serialize.py proto <registry url> <topic> <rows json>
    serialize.py fbs - -

fbs builds one FlatBuffer of connect/decode/flatbuf/testdata/order.fbs's
Order with the Python flatbuffers runtime (no registry): only some fields
set, so the others take their defaults or are absent.

Prints a JSON array of the payloads, base64 (the Go test produces them to
Kafka). Subjects are TopicNameStrategy's (<topic>-value); the serializers
register the schemas (and, for Protobuf, each import as a reference under
its own subject), as a producer does with auto.register.schemas.
"""

import base64
import datetime
import decimal
import importlib
import json
import os
import sys
import tempfile

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

HERE = os.path.dirname(os.path.abspath(__file__))


def avro_value(row):
    """The Python types AvroSerializer takes for the logical types."""
    out = dict(row)
    if "amount" in out:
        out["amount"] = decimal.Decimal(out["amount"])
    if "ts" in out:
        out["ts"] = datetime.datetime.fromisoformat(out["ts"].replace("Z", "+00:00"))
    if "day" in out:
        out["day"] = datetime.date.fromisoformat(out["day"])
    return out


def avro(url, topic, schema, rows):
    from confluent_kafka.schema_registry.avro import AvroSerializer
    client = SchemaRegistryClient({"url": url})
    if schema == "-":  # the subject's latest version, registered with its references
        ser = AvroSerializer(client, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    else:
        ser = AvroSerializer(client, schema)
    ctx = SerializationContext(topic, MessageField.VALUE)
    return [ser(avro_value(r), ctx) for r in rows]


def proto(url, topic, rows):
    from grpc_tools import protoc
    import grpc_tools
    from google.protobuf import timestamp_pb2
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    out = tempfile.mkdtemp()
    src = os.path.join(HERE, "proto")
    wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    if protoc.main(["protoc", "-I", src, "-I", wkt, "--python_out=" + out,
                    "shop/e2e/money.proto", "shop/e2e/order.proto"]) != 0:
        sys.exit("protoc failed")
    sys.path.insert(0, out)
    money_pb2 = importlib.import_module("shop.e2e.money_pb2")
    order_pb2 = importlib.import_module("shop.e2e.order_pb2")
    client = SchemaRegistryClient({"url": url})
    conf = {"use.deprecated.format": False}
    sers = {"order": ProtobufSerializer(order_pb2.Order, client, conf),
            "refund": ProtobufSerializer(order_pb2.Refund, client, conf)}
    ctx = SerializationContext(topic, MessageField.VALUE)
    payloads = []
    for r in rows:
        r = dict(r)
        kind = r.pop("kind")
        if kind == "order":
            m = order_pb2.Order(id=r["id"], tags=r.get("tags", []))
            if "total" in r:
                m.total.CopyFrom(money_pb2.Money(**r["total"]))
            if "line" in r:
                m.line.CopyFrom(order_pb2.Order.Line(**r["line"]))
            if "created_at" in r:
                ts = timestamp_pb2.Timestamp()
                ts.FromJsonString(r["created_at"])
                m.created_at.CopyFrom(ts)
        else:
            m = order_pb2.Refund(id=r["id"], reason=r.get("reason", ""))
            if "amount" in r:
                m.amount.CopyFrom(money_pb2.Money(**r["amount"]))
        payloads.append(sers[kind](m, ctx))
    return payloads


def fbs():
    import flatbuffers
    b = flatbuffers.Builder(0)
    customer = b.CreateString("Grace Hopper")
    b.StartVector(4, 0, 4)
    tags = b.EndVector()
    b.StartObject(12)  # Order's fields, by id: 0 id, 1 customer, 2 amount, 7 tags, 8 shipped
    b.PrependInt64Slot(0, -2, 0)
    b.PrependUOffsetTRelativeSlot(1, customer, 0)
    b.PrependFloat64Slot(2, -0.5, 0)
    b.PrependUOffsetTRelativeSlot(7, tags, 0)
    b.PrependBoolSlot(8, True, False)
    b.Finish(b.EndObject())
    return [bytes(b.Output())]


def main():
    mode, url, topic = sys.argv[1:4]
    if mode == "avro":
        payloads = avro(url, topic, sys.argv[4], json.loads(sys.argv[5]))
    elif mode == "proto":
        payloads = proto(url, topic, json.loads(sys.argv[4]))
    elif mode == "fbs":
        payloads = fbs()
    else:
        sys.exit("unknown mode " + mode)
    print(json.dumps([base64.b64encode(p).decode() for p in payloads]))


main()
