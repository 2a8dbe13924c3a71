# Prints the Delta table at argv[2] as canonical rows (canon.py), one JSON
# text each, ordered by the column argv[3]; map columns become objects.
import json
import sys

sys.path.insert(0, sys.argv[1])
import pyarrow as pa
from deltalake import DeltaTable

from canon import dumps

table = DeltaTable(sys.argv[2]).to_pyarrow_table()
maps = [f.name for f in table.schema if pa.types.is_map(f.type)]
rows = table.to_pylist()
for r in rows:
    for m in maps:
        if r[m] is not None:
            r[m] = dict(r[m])
rows.sort(key=lambda r: r[sys.argv[3]])
print(json.dumps([dumps(r) for r in rows]))
