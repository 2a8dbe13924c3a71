"""Writes deep.bin: a kitchen.Node chain 70 tables deep (next -> next -> ...),
deeper than the walk's limit of 64 and than flatc's JSON parser takes, so it
is built with the Python flatbuffers runtime, the independent encoder."""
import sys

import flatbuffers

b = flatbuffers.Builder(1024)
nxt = 0
for i in range(70):
    label = b.CreateString("n%d" % i)
    b.StartObject(4)  # Node: next, label, kids, tags
    if nxt:
        b.PrependUOffsetTRelativeSlot(0, nxt, 0)
    b.PrependUOffsetTRelativeSlot(1, label, 0)
    nxt = b.EndObject()
b.Finish(nxt)
with open(sys.argv[1] if len(sys.argv) > 1 else "deep.bin", "wb") as f:
    f.write(b.Output())
