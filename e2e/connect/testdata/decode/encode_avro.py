# Encodes the JSON rows of argv[3] with the Avro schema in the file argv[2]
# using fastavro's schemaless_writer, and prints one base64 datum per row
# (a JSON list). Rows are JSON, so a decimal is given as a string and is
# turned into a Decimal for fastavro; a timestamp as its integer count.
import base64
import decimal
import io
import json
import sys

import fastavro

schema = fastavro.parse_schema(json.load(open(sys.argv[2])))
decimals = [f["name"] for f in schema["fields"] if isinstance(f["type"], dict) and f["type"].get("logicalType") == "decimal"]
out = []
for row in json.loads(sys.argv[3]):
    for name in decimals:
        row[name] = decimal.Decimal(row[name])
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, row)
    out.append(base64.b64encode(buf.getvalue()).decode())
print(json.dumps(out))
