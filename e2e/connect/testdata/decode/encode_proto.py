# Encodes the JSON rows of argv[3] as e2e.decode.v1.Order messages with the
# module gen_proto.py generated into argv[2] (the official Python protobuf
# runtime, json_format's proto3 JSON mapping with .proto field names), and
# prints one base64 message per row (a JSON list).
import base64
import json
import sys

sys.path.insert(0, sys.argv[2])
import types_pb2 as pb
from google.protobuf import json_format

print(json.dumps([base64.b64encode(json_format.ParseDict(r, pb.Order()).SerializeToString()).decode()
                  for r in json.loads(sys.argv[3])]))
